#include "control/sim/x.h"
#include "control/state/x.h"
