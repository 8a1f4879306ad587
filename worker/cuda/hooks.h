// Declarations of the driver exports the interposer implements
// (intercepted_symbols.inc), typed from cuda_driver_api.h: every file that
// defines or takes the address of one sees the same signature, and a
// mismatch is a compile error rather than a silent ABI break.
#pragma once

#include <type_traits>

#include "worker/cuda/cuda_driver_api.h"

extern "C" {
#define GPOOL_CUDA_INTERCEPT(name) __attribute__((visibility("default"))) std::remove_pointer_t<name##_fn> name;
#include "worker/cuda/intercepted_symbols.inc"
#undef GPOOL_CUDA_INTERCEPT
}
