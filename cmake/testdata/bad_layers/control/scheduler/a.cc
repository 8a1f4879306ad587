#include <zmq.hpp>
#include "storage/log_store.h"
