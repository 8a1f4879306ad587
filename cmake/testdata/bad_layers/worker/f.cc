#include "worker/runner/testing/x.h"
