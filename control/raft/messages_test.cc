// The wire form of Raft messages and log entries: every message type round
// trips, binary data survives, and hostile bytes never crash the decoder.
#include "control/raft/messages.h"
#include "protocol/message_type.h"

#include <gtest/gtest.h>

#include <random>

namespace gpool::raft {
namespace {

// Built member by member: a braced ConfChangeEntry (with its std::string
// context) trips GCC 12's -Wmaybe-uninitialized at -O2 and above.
ConfChangeEntry ConfEntry(ConfChangeType type, uint64_t node, std::string context, std::vector<uint64_t> voters) {
  ConfChangeEntry cc;
  cc.change.type = type;
  cc.change.node_id = node;
  cc.change.context = std::move(context);
  cc.result.voters = std::move(voters);
  return cc;
}

std::vector<Message> Samples() {
  std::string binary("\x00\xff\x01\x80 bin", 9);
  std::vector<Message> out;
  Message append{.type = MessageType::kAppend, .from = 1, .to = 2, .term = 7, .log_term = 6, .index = 41};
  append.entries = {{42, 7, EncodeNormal(binary)},
                    {43, 7, ""},
                    {44, 7, EncodeConfChange(ConfEntry(ConfChangeType::kAddVoter, 4, "host:1", {1, 2, 3, 4}))}};
  append.commit = 40;
  out.push_back(append);
  out.push_back({.type = MessageType::kAppendResponse, .from = 2, .to = 1, .term = 7, .log_term = 5, .index = 41,
                 .reject = true, .reject_hint = 30});
  out.push_back({.type = MessageType::kVote, .from = 3, .to = 1, .term = 8, .log_term = 7, .index = 44,
                 .context = "transfer"});
  out.push_back({.type = MessageType::kVoteResponse, .from = 1, .to = 3, .term = 8});
  out.push_back({.type = MessageType::kPreVote, .from = 3, .to = 2, .term = 9, .log_term = 7, .index = 44});
  out.push_back({.type = MessageType::kPreVoteResponse, .from = 2, .to = 3, .term = 8, .reject = true});
  Message snap{.type = MessageType::kSnapshot, .from = 1, .to = 4, .term = 7};
  snap.snapshot = Snapshot{40, 6, ConfState{{1, 2, 3}}, binary};
  out.push_back(snap);
  out.push_back({.type = MessageType::kHeartbeat, .from = 1, .to = 2, .term = 7, .commit = 39, .context = binary});
  out.push_back({.type = MessageType::kHeartbeatResponse, .from = 2, .to = 1, .term = 7, .context = "r"});
  out.push_back({.type = MessageType::kTimeoutNow, .from = 1, .to = 2, .term = 7});
  out.push_back({.type = MessageType::kReadIndex, .from = 2, .to = 1, .context = "ctx"});
  out.push_back({.type = MessageType::kReadIndexResponse, .from = 1, .to = 2, .index = 44, .context = "ctx"});
  return out;
}

TEST(MessagesTest, EveryTypeRoundTrips) {
  for (const Message& m : Samples()) {
    auto decoded = DecodeMessage(EncodeMessage(m));
    ASSERT_TRUE(decoded.ok()) << m.DebugString() << ": " << decoded.status().ToString();
    EXPECT_EQ(*decoded, m) << m.DebugString();
  }
}

TEST(MessagesTest, UnknownTypeAndMissingFieldsAreMalformed) {
  Message m{.type = MessageType::kHeartbeat, .from = 1, .to = 2, .term = 3};
  std::string bytes = EncodeMessage(m);
  // Patch the type number (a positive fixint right after the "type" key).
  auto pos = bytes.find("type");
  ASSERT_NE(pos, std::string::npos);
  bytes[pos + 4] = 99;
  auto bad = DecodeMessage(bytes);
  EXPECT_EQ(bad.status().code(), StatusCode::kMalformed);
  EXPECT_NE(bad.status().message().find("unknown raft message type"), std::string::npos);
  EXPECT_EQ(DecodeMessage(wire::PackToString(ConfState{{1}})).status().code(), StatusCode::kMalformed);
  EXPECT_FALSE(DecodeMessage("").ok());
}

TEST(MessagesTest, RandomBytesNeverCrash) {
  std::mt19937_64 rng(20240611);
  std::vector<std::string> valid;
  for (const Message& m : Samples()) valid.push_back(EncodeMessage(m));
  int decoded_ok = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string bytes;
    if (i % 3 == 0) {
      bytes.resize(rng() % 96);
      for (auto& c : bytes) c = static_cast<char>(rng());
    } else {
      bytes = valid[rng() % valid.size()];
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<char>(rng());
      if (i % 3 == 2) bytes.resize(rng() % (bytes.size() + 1));
    }
    auto m = DecodeMessage(bytes);
    if (m.ok()) {
      ++decoded_ok;
      (void)m->DebugString();
      for (const auto& e : m->entries) {
        if (TypeOf(e) == EntryType::kConfChange) (void)DecodeConfChange(e);
      }
    }
  }
  EXPECT_GT(decoded_ok, 0) << "some single-byte flips still decode";
}

TEST(EntryTest, TagsDistinguishKinds) {
  EXPECT_EQ(TypeOf(LogEntry{1, 1, ""}), EntryType::kEmpty);
  LogEntry normal{1, 1, EncodeNormal("cmd")};
  EXPECT_EQ(TypeOf(normal), EntryType::kNormal);
  EXPECT_EQ(NormalPayload(normal), "cmd");
  EXPECT_EQ(TypeOf(LogEntry{1, 1, "zzz"}), EntryType::kUnknown);
  const ConfChangeEntry cc = ConfEntry(ConfChangeType::kRemoveVoter, 3, "ctx", {1, 2});
  LogEntry conf{2, 1, EncodeConfChange(cc)};
  EXPECT_EQ(TypeOf(conf), EntryType::kConfChange);
  auto decoded = DecodeConfChange(conf);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, cc);
  EXPECT_EQ(DecodeConfChange(normal).status().code(), StatusCode::kMalformed);
  EXPECT_EQ(DecodeConfChange(LogEntry{1, 1, std::string("\x02\xc1", 2)}).status().code(), StatusCode::kMalformed);
}

}  // namespace
}  // namespace gpool::raft
