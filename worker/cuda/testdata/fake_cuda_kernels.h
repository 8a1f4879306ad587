// The fake libcuda.so.1's kernels (fake_cuda.cc): host functions from a
// fixed registry, found by the `.entry` names of a module's PTX text, and
// the byte sizes of an entry's parameters read from its signature. Only the
// fake includes this.
#pragma once

#include <time.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "worker/cuda/cuda_driver_api.h"

namespace gpool::cuda::fake {

using FakeKernel = void (*)(void** params);

inline long long NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

inline void VectorAdd(void** params) {
  const auto* a = reinterpret_cast<const float*>(*static_cast<CUdeviceptr*>(params[0]));
  const auto* b = reinterpret_cast<const float*>(*static_cast<CUdeviceptr*>(params[1]));
  auto* c = reinterpret_cast<float*>(*static_cast<CUdeviceptr*>(params[2]));
  const int n = *static_cast<int*>(params[3]);
  for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

inline void Busy(void** params) {
  const long long until = NowNs() + static_cast<long long>(*static_cast<unsigned long long*>(params[0])) * 1000;
  while (NowNs() < until) {
  }
}

inline void Noop(void**) {}

inline FakeKernel KernelNamed(const std::string& name) {
  if (name == "vector_add") return VectorAdd;
  if (name == "busy") return Busy;
  if (name == "noop") return Noop;
  return nullptr;
}

// The byte sizes of an entry's parameters, from ".param .u64 name, ..."
// (the scalar types' bit widths); a parameter of another form counts 8.
inline std::vector<std::size_t> ParamSizes(const std::string& text, std::size_t from) {
  std::vector<std::size_t> sizes;
  const std::size_t open = text.find('(', from);
  const std::size_t brace = text.find('{', from);
  if (open == std::string::npos || open > brace) return sizes;
  const std::size_t close = text.find(')', open);
  for (std::size_t at = text.find(".param", open); at != std::string::npos && at < close;
       at = text.find(".param", at + 6)) {
    const std::size_t type = text.find('.', at + 6);
    std::size_t bits = 64;
    if (type != std::string::npos && type < close) bits = std::strtoull(text.c_str() + type + 2, nullptr, 10);
    sizes.push_back(bits == 0 ? 8 : bits / 8);
  }
  return sizes;
}

}  // namespace gpool::cuda::fake

struct CUfunc_st {
  gpool::cuda::fake::FakeKernel run;
  std::vector<std::size_t> param_sizes;  // from the PTX .entry signature
};
