// What the driver keeps in device memory for the objects a task creates, as
// the interposer charges it to the task's share (object_hooks.cc): a
// context, a loaded module or library, a stream. NVML counts these against
// the process (they are the bulk of a small task's footprint: a context
// alone is hundreds of MiB on current data-centre GPUs; not yet measured
// on this project's H100 runs, tests/gpu/interposer_h100.sh), and a task that
// creates contexts in a loop (HAMi-core's lesson) would otherwise hold
// memory its share never saw. The driver does not say what an object costs,
// so the interposer charges a per-object estimate:
//
//   context   kDefaultContextBytes (a primary context counts once per
//             process and device, however often it is retained)
//   module    kDefaultModuleBytes  (cuModuleLoad*, cuLibraryLoad*: code and
//             constant banks, one 2 MiB large page at the least)
//   stream    kDefaultStreamBytes  (its work queue and completion memory)
//
// The tolerance: the estimates are within the worker's NVML check's own
// margin of what the driver holds (the larger of 64 MiB and 5 % of the
// share, share_enforcement.h), so a task the interposer admits is not
// stopped by that check for its objects alone. A driver whose objects cost
// more (another GPU, another driver branch) is configured per node with
// --cuda-object-costs.
//
// GPOOL_CUDA_OBJECT_COSTS (set by the worker for an interposed share):
//   unset, "" or "none"  objects are not charged (the interposer counts
//                        allocations only, as before issue 50)
//   "default"            the constants below
//   "context=SIZE,module=SIZE,stream=SIZE"  any subset; SIZE is bytes with
//                        an optional K, M or G suffix (binary); the others
//                        keep their defaults
//
// Header-only and libc-only: the interposer (loaded into foreign processes)
// and the worker's flag parser share it.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace gpool::cuda {

inline constexpr std::uint64_t kDefaultContextBytes = 512ull << 20;
inline constexpr std::uint64_t kDefaultModuleBytes = 2ull << 20;
inline constexpr std::uint64_t kDefaultStreamBytes = 2ull << 20;

struct ObjectCosts {
  bool enabled = false;  // false: no object is charged
  std::uint64_t context_bytes = kDefaultContextBytes;
  std::uint64_t module_bytes = kDefaultModuleBytes;
  std::uint64_t stream_bytes = kDefaultStreamBytes;
};

// Parses GPOOL_CUDA_OBJECT_COSTS (above). False on anything else (an
// unknown key, a bad number): *out is then left disabled.
inline bool ParseObjectCosts(const char* text, ObjectCosts* out) {
  *out = ObjectCosts{};
  if (text == nullptr || *text == '\0' || std::strcmp(text, "none") == 0) return true;
  ObjectCosts costs;
  costs.enabled = true;
  if (std::strcmp(text, "default") == 0) {
    *out = costs;
    return true;
  }
  for (const char* p = text; *p != '\0';) {
    const char* eq = std::strchr(p, '=');
    if (eq == nullptr) return false;
    const std::size_t key_len = static_cast<std::size_t>(eq - p);
    std::uint64_t* field = nullptr;
    if (key_len == 7 && std::strncmp(p, "context", 7) == 0) field = &costs.context_bytes;
    if (key_len == 6 && std::strncmp(p, "module", 6) == 0) field = &costs.module_bytes;
    if (key_len == 6 && std::strncmp(p, "stream", 6) == 0) field = &costs.stream_bytes;
    if (field == nullptr || eq[1] < '0' || eq[1] > '9') return false;
    char* end = nullptr;
    std::uint64_t value = std::strtoull(eq + 1, &end, 10);
    int shift = 0;
    if (*end == 'K') shift = 10;
    if (*end == 'M') shift = 20;
    if (*end == 'G') shift = 30;
    if (shift != 0) ++end;
    if ((*end != ',' && *end != '\0') || (*end == ',' && end[1] == '\0')) return false;
    if (shift != 0 && value > (~0ull >> shift)) return false;
    *field = value << shift;
    p = *end == ',' ? end + 1 : end;
  }
  *out = costs;
  return true;
}

}  // namespace gpool::cuda
