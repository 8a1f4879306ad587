#include "control/x.h"
