// The remote driver API: modules, functions and kernel launches.
//
// A kernel's arguments arrive as an array of pointers whose pointees the
// client cannot size by itself, so the server answers each function's
// parameter layout (cuFuncGetParamInfo on the real driver) when the
// client looks the function up; a launch packs the arguments into one
// buffer by that layout and is queued (it is asynchronous in CUDA too).
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "worker/rgpu/client/api.h"

namespace gpool::rgpu {
namespace {

struct Layout {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> params;  // offset, size
  std::uint32_t bytes = 0;
};

std::mutex g_layouts_mu;
std::map<std::uint64_t, Layout>& Layouts() {
  static auto* layouts = new std::map<std::uint64_t, Layout>;
  return *layouts;
}

bool LayoutOf(std::uint64_t function, Layout* layout) {
  std::lock_guard lock(g_layouts_mu);
  auto it = Layouts().find(function);
  if (it == Layouts().end()) return false;
  *layout = it->second;
  return true;
}

// The number of bytes of a module image: the driver reads an image from
// its start without a length, so the client must find the end to ship it.
//   ELF (cubin): the section header table ends the file.
//   fatbin: a 16-byte header (magic 0xBA55ED50, u16 version, u16 header
//   size, u64 payload size).
//   anything else: NUL-terminated PTX text.
std::size_t ImageBytes(const void* image) {
  const auto* p = static_cast<const unsigned char*>(image);
  if (std::memcmp(p,
                  "\x7f"
                  "ELF",
                  4) == 0 &&
      p[4] == 2) {  // 64-bit ELF
    std::uint64_t shoff = 0, phoff = 0;
    std::uint16_t shentsize = 0, shnum = 0, phentsize = 0, phnum = 0;
    std::memcpy(&phoff, p + 0x20, 8);
    std::memcpy(&shoff, p + 0x28, 8);
    std::memcpy(&phentsize, p + 0x36, 2);
    std::memcpy(&phnum, p + 0x38, 2);
    std::memcpy(&shentsize, p + 0x3A, 2);
    std::memcpy(&shnum, p + 0x3C, 2);
    return std::max<std::uint64_t>(shoff + std::uint64_t{shentsize} * shnum, phoff + std::uint64_t{phentsize} * phnum);
  }
  std::uint32_t magic = 0;
  std::memcpy(&magic, p, 4);
  if (magic == 0xBA55ED50u) {
    std::uint16_t header = 0;
    std::uint64_t payload = 0;
    std::memcpy(&header, p + 6, 2);
    std::memcpy(&payload, p + 8, 8);
    return header + payload;
  }
  return std::strlen(static_cast<const char*>(image)) + 1;
}

CUresult Load(CUmodule* module, const void* image, std::uint8_t kind) {
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // The runtime's wrapper (magic 0x466243B1, version, pointer to the fatbin).
  std::uint32_t magic = 0;
  std::memcpy(&magic, image, 4);
  if (magic == 0x466243B1u) std::memcpy(&image, static_cast<const char*>(image) + 8, sizeof(image));
  const std::size_t bytes = ImageBytes(image);
  if (bytes > kMaxModuleBytes) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.U8(kind);
  Reply reply;
  const CUresult r = Connection::Get().Call(Op::kModuleLoad, CurrentContext(), w, &reply, {{image, bytes}});
  if (r == CUDA_SUCCESS) *module = AsHandle<CUmodule>(Reader(reply.out.data(), reply.out.size()).U64());
  return r;
}

// Pulls the argument buffer out of cuLaunchKernel's `extra` list.
CUresult ExtraBuffer(void** extra, const void** buffer, std::size_t* size) {
  *buffer = nullptr;
  *size = 0;
  for (std::size_t i = 0; extra[i] != nullptr && i < 64; i += 2) {
    const auto key = reinterpret_cast<std::uintptr_t>(extra[i]);
    if (key == 1)
      *buffer = extra[i + 1];  // CU_LAUNCH_PARAM_BUFFER_POINTER
    else if (key == 2)
      *size = *static_cast<std::size_t*>(extra[i + 1]);  // CU_LAUNCH_PARAM_BUFFER_SIZE
    else
      return CUDA_ERROR_INVALID_VALUE;
  }
  return *buffer != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace
}  // namespace gpool::rgpu

using gpool::rgpu::AsHandle;
using gpool::rgpu::H;
using gpool::rgpu::Op;
using gpool::rgpu::Reader;
using gpool::rgpu::Reply;
using gpool::rgpu::Sync;
using gpool::rgpu::Writer;

GPOOL_RGPU_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  return gpool::rgpu::Load(module, image, gpool::rgpu::kModuleData);
}

// JIT options are not sent: the server's driver compiles with its defaults.
GPOOL_RGPU_EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int, void*, void**) {
  return gpool::rgpu::Load(module, image, gpool::rgpu::kModuleData);
}

GPOOL_RGPU_EXPORT CUresult cuModuleLoadFatBinary(CUmodule* module, const void* image) {
  return gpool::rgpu::Load(module, image, gpool::rgpu::kModuleFatBinary);
}

GPOOL_RGPU_EXPORT CUresult cuModuleUnload(CUmodule module) {
  Writer w;
  w.U64(H(module));
  return Sync(Op::kModuleUnload, w);
}

GPOOL_RGPU_EXPORT CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  if (function == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.U64(H(module));
  w.Bytes(name);
  Reply reply;
  const CUresult r = Sync(Op::kModuleGetFunction, w, &reply);
  if (r != CUDA_SUCCESS) return r;
  Reader in(reply.out.data(), reply.out.size());
  const std::uint64_t handle = in.U64();
  gpool::rgpu::Layout layout;
  const std::uint32_t n = in.U32();
  for (std::uint32_t i = 0; i < n && in.ok(); ++i) {
    const std::uint32_t offset = in.U32();
    const std::uint32_t size = in.U32();
    layout.params.emplace_back(offset, size);
    layout.bytes = std::max(layout.bytes, offset + size);
  }
  if (!in.ok()) return CUDA_ERROR_UNKNOWN;
  {
    std::lock_guard lock(gpool::rgpu::g_layouts_mu);
    gpool::rgpu::Layouts()[handle] = std::move(layout);
  }
  *function = AsHandle<CUfunction>(handle);
  return r;
}

// Answered from the layout the server sent with the function.
GPOOL_RGPU_EXPORT CUresult cuFuncGetParamInfo(CUfunction function, std::size_t index, std::size_t* offset,
                                              std::size_t* size) {
  gpool::rgpu::Layout layout;
  if (!gpool::rgpu::LayoutOf(H(function), &layout)) return CUDA_ERROR_INVALID_HANDLE;
  if (offset == nullptr || size == nullptr || index >= layout.params.size()) return CUDA_ERROR_INVALID_VALUE;
  *offset = layout.params[index].first;
  *size = layout.params[index].second;
  return CUDA_SUCCESS;
}

GPOOL_RGPU_EXPORT CUresult cuLaunchKernel(CUfunction function, unsigned int gx, unsigned int gy, unsigned int gz,
                                          unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                                          CUstream stream, void** params, void** extra) {
  gpool::rgpu::Layout layout;
  if (!gpool::rgpu::LayoutOf(H(function), &layout)) return CUDA_ERROR_INVALID_HANDLE;
  std::string packed(layout.bytes, '\0');
  if (params != nullptr) {
    for (std::size_t i = 0; i < layout.params.size(); ++i) {
      if (params[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(packed.data() + layout.params[i].first, params[i], layout.params[i].second);
    }
  } else if (extra != nullptr) {
    const void* buffer = nullptr;
    std::size_t size = 0;
    if (const CUresult r = gpool::rgpu::ExtraBuffer(extra, &buffer, &size); r != CUDA_SUCCESS) return r;
    if (size < layout.bytes) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(packed.data(), buffer, layout.bytes);
  } else if (layout.bytes != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Writer w;
  w.U64(H(function));
  for (unsigned v : {gx, gy, gz, bx, by, bz, shared}) w.U32(v);
  w.U64(H(stream));
  w.Bytes(packed);
  return gpool::rgpu::Connection::Get().Enqueue(Op::kLaunchKernel, gpool::rgpu::CurrentContext(), w);
}

GPOOL_RGPU_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction function, unsigned int gx, unsigned int gy, unsigned int gz,
                                               unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                                               CUstream stream, void** params, void** extra) {
  return cuLaunchKernel(function, gx, gy, gz, bx, by, bz, shared, stream == nullptr ? AsHandle<CUstream>(2) : stream,
                        params, extra);
}
