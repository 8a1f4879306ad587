// Fuzz target: every message decoder on its own. The first byte picks the
// MessageType (modulo their number), the rest is the body's msgpack, read
// as that struct through the generic reader (wire::UnpackFromString), then
// validated and re-encoded. Reaching each struct directly, instead of
// through an envelope, lets the fuzzer spend its mutations on the body.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/all_messages.h"
#include "fuzz/message_checks.h"
#include "protocol/message_type.h"
#include "protocol/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpool;
  if (size == 0) return 0;
  auto type = static_cast<MessageType>(data[0] % fuzz::kMessageTypeCount);
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  fuzz::VisitMessageType(type, [&]<typename T>() {
    auto decoded = wire::UnpackFromString<T>(body);
    if (!decoded.ok()) return;
    fuzz::Validate(*decoded);
    fuzz::CheckRoundTrip(*decoded);
  });
  return 0;
}
