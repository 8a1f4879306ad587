// PeekRequestId against EncodeEnvelope: every width msgpack gives an id,
// and frames of another shape yield no id rather than a wrong one.
#include "protocol/envelope_peek.h"

#include <gtest/gtest.h>

#include "protocol/envelope.h"
#include "protocol/messages_common.h"

namespace gpool {
namespace {

TEST(EnvelopePeekTest, ReadsTheIdEncodeEnvelopeWrote) {
  for (uint64_t id : {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{255}, uint64_t{256},
                      uint64_t{65535}, uint64_t{65536}, uint64_t{4294967295}, uint64_t{4294967296},
                      ~uint64_t{0}}) {
    Header header{.request_id = id};
    header.sender = std::string(300, 's');  // a str16 after the id must not matter
    const std::string frame = EncodeEnvelope(header, ErrorReply::FromStatus(Status::NotFound("x")));
    EXPECT_EQ(PeekRequestId(frame), std::optional<uint64_t>(id)) << id;
    EXPECT_EQ(DecodeEnvelope(frame)->header().request_id, id);
  }
}

TEST(EnvelopePeekTest, OtherShapesHaveNoId) {
  EXPECT_EQ(PeekRequestId(""), std::nullopt);
  EXPECT_EQ(PeekRequestId("\x81"), std::nullopt);              // a map cut short
  EXPECT_EQ(PeekRequestId("\x81\xa2id"), std::nullopt);         // "id" with no value
  EXPECT_EQ(PeekRequestId("\x81\xa2id\xa1x"), std::nullopt);    // "id" not an integer
  EXPECT_EQ(PeekRequestId("\x81\xa1v\x90"), std::nullopt);      // an array before "id"
  EXPECT_EQ(PeekRequestId(std::string_view("\x81\xa2id\x07", 5)), std::optional<uint64_t>(7));
  EXPECT_EQ(PeekRequestId("\x92\x01\x02"), std::nullopt);      // not a map
  EXPECT_EQ(PeekRequestId("\x81\xa2id\xcf\x01"), std::nullopt);  // a uint64 cut short
}

}  // namespace
}  // namespace gpool
