// The rGPU data-plane wire format, shared by the client library
// (libgpool-rgpu.so.1, loaded into foreign processes: so this header needs
// nothing but the C++ standard library) and gpool-rgpu-server. README.md in
// this folder describes the protocol; this file is its only definition.
//
// A request is one ZeroMQ multipart message from the client's DEALER:
//   frame 0      header: u8 version, u8 kind (kRequest), u64 request id, u32 call count
//   per call     a call frame: u16 op, u64 context handle, u32 data frame count, op arguments
//                then that many data frames (bulk bytes: host-to-device copies, module images)
// The calls run in order; all but the last are batched asynchronous calls.
// The reply (from the server's ROUTER, routing id stripped by the DEALER):
//   frame 0      header: u8 version, u8 kind (kReply), u64 request id, i32 result, u32 index of
//                the call that produced `result`
//   frame 1      the last call's outputs (op specific), empty when result != 0
//   frames 2..   bulk bytes the last call returns (device-to-host copies)
// The first failing call stops the request: its code is the result and the
// calls after it do not run (so a batched launch's error surfaces at the
// next synchronous call, as an asynchronous CUDA error does).
//
// Integers are little-endian. A Reader never reads past its frame: a short
// or malformed frame sets ok() false and every later read answers zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gpool::rgpu {

inline constexpr std::uint8_t kWireVersion = 1;
inline constexpr std::uint8_t kRequest = 1;
inline constexpr std::uint8_t kReply = 2;

// Limits. Bulk data travels in frames of at most kChunkBytes (copies are
// cut into chunks so no frame needs one huge buffer); a frame above
// kMaxFrameBytes makes libzmq drop the connection (ZMQ_MAXMSGSIZE); a
// request may hold at most kMaxFramesPerRequest frames and kMaxCallsPerRequest
// calls, or it is answered CUDA_ERROR_INVALID_VALUE without running any.
inline constexpr std::size_t kChunkBytes = std::size_t{2} << 20;
inline constexpr std::size_t kMaxFrameBytes = kChunkBytes + 4096;
inline constexpr std::size_t kMaxFramesPerRequest = 4096;
inline constexpr std::size_t kMaxCallsPerRequest = 1024;
// A synchronous copy larger than this is sent as several requests.
inline constexpr std::size_t kMaxCopyPerRequest = std::size_t{256} << 20;
// A module image larger than this is refused (CUDA_ERROR_INVALID_VALUE).
inline constexpr std::size_t kMaxModuleBytes = std::size_t{512} << 20;
inline constexpr std::size_t kMaxKernelParamBytes = 32764;  // the driver's own limit (CUDA 12.1+)
inline constexpr std::size_t kMaxKernelParams = 1024;

// Handles the server hands out start here, so they never equal the special
// stream values CU_STREAM_LEGACY (1) and CU_STREAM_PER_THREAD (2).
inline constexpr std::uint64_t kFirstHandle = 0x1000;

enum class Op : std::uint16_t {
  kInit = 1,
  kDriverGetVersion,
  kDeviceGetCount,
  kDeviceGet,
  kDeviceGetName,
  kDeviceGetUuid,
  kDeviceGetAttribute,
  kDeviceTotalMem,
  kPrimaryCtxRetain,
  kPrimaryCtxRelease,
  kPrimaryCtxReset,
  kPrimaryCtxSetFlags,
  kPrimaryCtxGetState,
  kCtxCreate,
  kCtxDestroy,
  kCtxGetDevice,
  kCtxSynchronize,
  kMemAlloc,
  kMemAllocManaged,
  kMemAllocPitch,
  kMemFree,
  kMemGetInfo,
  kMemcpyHtoD,  // args: u64 dst, u64 stream, u8 async; data frames: the bytes
  kMemcpyDtoH,  // args: u64 src, u64 bytes; bulk reply: the bytes
  kMemcpyDtoD,  // args: u64 dst, u64 src, u64 bytes, u64 stream, u8 async
  kMemset,      // args: u64 dst, u32 value, u8 element bytes (1 or 4), u64 count, u64 stream, u8 async
  kModuleLoad,  // args: u8 kind (kModuleData...); data frames: the image
  kModuleUnload,
  kModuleGetFunction,  // args: u64 module, string name; reply: u64 handle, u32 n, n x (u32 offset, u32 size)
  kLaunchKernel,       // args: u64 function, 3 x u32 grid, 3 x u32 block, u32 shared, u64 stream, bytes params
  kStreamCreate,
  kStreamDestroy,
  kStreamSynchronize,
  kStreamQuery,
  kEventCreate,
  kEventDestroy,
  kEventRecord,
  kEventQuery,
  kEventSynchronize,
  kEventElapsedTime,
  kOpEnd,  // not an op: one past the last
};

// The calls a client batches (they return nothing but an error code that
// CUDA itself may report later).
inline bool IsBatchable(Op op) {
  return op == Op::kLaunchKernel || op == Op::kEventRecord || op == Op::kMemset || op == Op::kMemcpyDtoD ||
         op == Op::kMemcpyHtoD;
}

class Writer {
 public:
  void U8(std::uint8_t v) { bytes_.push_back(static_cast<char>(v)); }
  void U16(std::uint16_t v) { Raw(&v, 2); }
  void U32(std::uint32_t v) { Raw(&v, 4); }
  void I32(std::int32_t v) { Raw(&v, 4); }
  void U64(std::uint64_t v) { Raw(&v, 8); }
  // u32 length, then the bytes.
  void Bytes(std::string_view s) {
    U32(static_cast<std::uint32_t>(s.size()));
    bytes_.append(s.data(), s.size());
  }
  const std::string& bytes() const { return bytes_; }
  std::string& mutable_bytes() { return bytes_; }

 private:
  void Raw(const void* p, std::size_t n) { bytes_.append(static_cast<const char*>(p), n); }  // little-endian hosts
  std::string bytes_;
};

class Reader {
 public:
  Reader(const void* data, std::size_t size) : p_(static_cast<const unsigned char*>(data)), left_(size) {}
  std::uint8_t U8() { return Fixed<std::uint8_t>(); }
  std::uint16_t U16() { return Fixed<std::uint16_t>(); }
  std::uint32_t U32() { return Fixed<std::uint32_t>(); }
  std::int32_t I32() { return Fixed<std::int32_t>(); }
  std::uint64_t U64() { return Fixed<std::uint64_t>(); }
  std::string_view Bytes() {
    const std::uint32_t n = U32();
    if (!ok_ || n > left_) {
      ok_ = false;
      return {};
    }
    std::string_view s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    left_ -= n;
    return s;
  }
  bool ok() const { return ok_; }
  std::size_t left() const { return left_; }

 private:
  template <typename T>
  T Fixed() {
    T v{};
    if (!ok_ || left_ < sizeof(T)) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    left_ -= sizeof(T);
    return v;
  }
  const unsigned char* p_;
  std::size_t left_;
  bool ok_ = true;
};

// Module image kinds (kModuleLoad): how the server loads it.
enum : std::uint8_t { kModuleData = 0, kModuleFatBinary = 1 };

}  // namespace gpool::rgpu
