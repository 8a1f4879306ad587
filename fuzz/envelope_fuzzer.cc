// Fuzz target: a whole frame as it arrives on any port. DecodeEnvelope, then
// the body as the struct its header names (every message type is reachable
// through the type name), the validators, and a re-encode of the envelope
// that must decode to the same header.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/all_messages.h"
#include "fuzz/check.h"
#include "fuzz/message_checks.h"
#include "protocol/envelope.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpool;
  auto env = DecodeEnvelope(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!env.ok()) return 0;
  bool known = fuzz::VisitMessageType(env->type(), [&]<typename T>() {
    auto body = env->Body<T>();
    if (!body.ok()) return;
    fuzz::Validate(*body);
    auto again = DecodeEnvelope(EncodeEnvelope(env->header(), *body));
    FUZZ_CHECK(again.ok(), "re-encoded envelope did not decode: " + again.status().ToString());
    FUZZ_CHECK(again->type() == env->type() && again->header().request_id == env->header().request_id &&
                   again->header().token == env->header().token && again->header().epoch == env->header().epoch,
               "re-encoded envelope changed its header");
    FUZZ_CHECK(again->template Body<T>().ok(), "re-encoded body did not decode");
  });
  FUZZ_CHECK(known, "DecodeEnvelope accepted a type with no struct");
  return 0;
}
