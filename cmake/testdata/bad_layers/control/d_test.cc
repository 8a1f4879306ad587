#include "worker/x.h"
