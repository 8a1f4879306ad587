// Fuzz target: a frame on the Raft peer port. DecodeMessage, then every
// configuration-change entry it carries (what the log and the replication
// layer decode next), and a re-encode that must decode to an equal Message:
// a follower stores entries exactly as the leader sent them.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "control/raft/entry.h"
#include "control/raft/messages.h"
#include "fuzz/check.h"
#include "protocol/message_type.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpool::raft;
  auto m = DecodeMessage(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!m.ok()) return 0;
  for (const auto& entry : m->entries) {
    if (TypeOf(entry) == EntryType::kConfChange) (void)DecodeConfChange(entry);
  }
  (void)m->DebugString();
  auto again = DecodeMessage(EncodeMessage(*m));
  FUZZ_CHECK(again.ok(), "re-encoded raft message did not decode: " + again.status().ToString());
  // Only a kSnapshot message carries its snapshot on the wire; the decoder
  // reads one on any type and the core ignores it there.
  Message expected = *m;
  if (expected.type != MessageType::kSnapshot) expected.snapshot = {};
  FUZZ_CHECK(*again == expected, "raft message changed in a round trip: " + m->DebugString());
  return 0;
}
