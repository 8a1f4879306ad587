#include "control/scheduler/x.h"
