// How many bytes of device memory a CUDA array takes, estimated from its
// descriptor (the driver adds layout padding the interposer cannot see):
// width * height * depth * channels * element size, with 0 for an unused
// dimension meaning 1, and each mipmap level halving every dimension.
#pragma once

#include <cstdint>

#include "worker/cuda/cuda_driver_api.h"

namespace gpool::cuda {

// Bytes of one channel of one element. Formats gpool does not know (packed
// video and block-compressed ones) count as 4, the widest common channel.
inline std::uint64_t FormatBytes(CUarray_format format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2;
    default:
      return 4;
  }
}

inline std::uint64_t Array3DBytes(const CUDA_ARRAY3D_DESCRIPTOR& d) {
  const std::uint64_t h = d.Height == 0 ? 1 : d.Height;
  const std::uint64_t z = d.Depth == 0 ? 1 : d.Depth;
  return std::uint64_t{d.Width} * h * z * d.NumChannels * FormatBytes(d.Format);
}

inline std::uint64_t ArrayBytes(const CUDA_ARRAY_DESCRIPTOR& d) {
  return Array3DBytes({d.Width, d.Height, 0, d.Format, d.NumChannels, 0});
}

inline std::uint64_t MipmappedBytes(CUDA_ARRAY3D_DESCRIPTOR level, unsigned levels) {
  std::uint64_t total = 0;
  for (unsigned i = 0; i < levels; ++i) {
    total += Array3DBytes(level);
    level.Width = level.Width > 1 ? level.Width / 2 : 1;
    level.Height = level.Height > 1 ? level.Height / 2 : level.Height;
    level.Depth = level.Depth > 1 ? level.Depth / 2 : level.Depth;
  }
  return total;
}

}  // namespace gpool::cuda
