// The operator's node labels on the worker (issue 50): LabelOverlay reads
// them over the spec's, and the Link reports what it holds in every
// heartbeat (labels_digest) and takes the leader's NodeLabels into it.
#include "worker/label_overlay.h"

#include "protocol/labels_digest.h"
#include "worker/link_fixture.h"

namespace gpool::worker {
namespace {

TEST(LabelOverlayTest, TheOperatorsValueWinsOverTheSpecsAndGoesWhenRemoved) {
  LabelOverlay labels({{"repair.gpool.io/gpu-reset", "off"}, {"zone", "a"}});
  EXPECT_TRUE(labels.Off("repair.gpool.io/gpu-reset"));
  EXPECT_FALSE(labels.Off("repair.gpool.io/fabricmanager-restart"));
  EXPECT_EQ(labels.digest(), LabelsDigest({})) << "holds no operator labels yet";

  ASSERT_TRUE(labels.SetOperatorLabels({{"repair.gpool.io/gpu-reset", "on"}, {"repair.gpool.io/fabricmanager-restart", "off"}}).ok());
  EXPECT_FALSE(labels.Off("repair.gpool.io/gpu-reset")) << "the operator's value wins";
  EXPECT_TRUE(labels.Off("repair.gpool.io/fabricmanager-restart"));
  EXPECT_EQ(labels.Get("zone"), std::optional<std::string_view>("a"));
  EXPECT_NE(labels.digest(), LabelsDigest({}));

  ASSERT_TRUE(labels.SetOperatorLabels({}).ok());
  EXPECT_TRUE(labels.Off("repair.gpool.io/gpu-reset")) << "the spec's again";
  EXPECT_FALSE(labels.Off("repair.gpool.io/fabricmanager-restart"));
  EXPECT_EQ(labels.digest(), LabelsDigest({}));
}

TEST(LabelOverlayTest, TooManyLabelsOrAnEmptyKeyAreRefusedAndChangeNothing) {
  LabelOverlay labels;
  ASSERT_TRUE(labels.SetOperatorLabels({{"a", "1"}}).ok());
  const uint64_t before = labels.digest();
  std::map<std::string, std::string> many;
  for (size_t i = 0; i <= LabelOverlay::kMaxOperatorLabels; ++i) many["k" + std::to_string(i)] = "v";
  Status status = labels.SetOperatorLabels(many);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("at most 1024"), std::string::npos) << status.message();
  status = labels.SetOperatorLabels({{"", "x"}});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(labels.digest(), before);
  EXPECT_EQ(labels.Get("a"), std::optional<std::string_view>("1"));
}

TEST(LabelsDigestTest, StableOverOrderDistinctOverBoundariesNeverZero) {
  EXPECT_EQ(LabelsDigest({{"a", "1"}, {"b", "2"}}), LabelsDigest({{"b", "2"}, {"a", "1"}}));
  EXPECT_NE(LabelsDigest({{"ab", "c"}}), LabelsDigest({{"a", "bc"}}));
  EXPECT_NE(LabelsDigest({{"a", ""}}), LabelsDigest({}));
  EXPECT_NE(LabelsDigest({}), 0u);
  // Fixed across builds and replicas: a worker and a leader of other builds agree.
  EXPECT_EQ(LabelsDigest({}), 14695981039346656037ULL);
}

class LinkLabelsTest : public LinkTest {
 protected:
  void SetUp() override {
    LinkTest::SetUp();
    NodeHostOptions host;
    host.labels = &labels_;
    link_ = std::move(Link::Open(MakeOptions(std::move(host))).value());
  }
  uint64_t LastHeartbeatDigest() {
    Run(1000);
    const Out out = Take();
    const Envelope* hb = out.First(MessageType::kHeartbeat);
    EXPECT_NE(hb, nullptr);
    return hb == nullptr ? 0 : hb->Body<Heartbeat>()->labels_digest;
  }

  LabelOverlay labels_{{{"zone", "a"}}};
};

TEST_F(LinkLabelsTest, HeartbeatsNameTheLabelsHeldAndNodeLabelsReplacesThem) {
  ASSERT_NO_FATAL_FAILURE(Register(1000, /*epoch=*/2));
  EXPECT_EQ(LastHeartbeatDigest(), LabelsDigest({}));

  Deliver(NodeLabels{"n1", {{"repair.gpool.io/gpu-reset", "off"}}}, 41, 2);
  const Out out = Take();
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(out.frames[0].type(), MessageType::kAck);
  EXPECT_EQ(out.frames[0].header().request_id, 41u);
  EXPECT_TRUE(labels_.Off("repair.gpool.io/gpu-reset"));
  EXPECT_EQ(LastHeartbeatDigest(), LabelsDigest({{"repair.gpool.io/gpu-reset", "off"}}));
}

TEST_F(LinkLabelsTest, LabelsForAnotherNodeOrFromAnOlderLeaderAreRefusedAndChangeNothing) {
  ASSERT_NO_FATAL_FAILURE(Register(1000, /*epoch=*/3));
  Deliver(NodeLabels{"n2", {{"repair.gpool.io/gpu-reset", "off"}}}, 7, 3);
  Out out = Take();
  ASSERT_EQ(out.frames.size(), 1u);
  ASSERT_EQ(out.frames[0].type(), MessageType::kErrorReply);
  EXPECT_EQ(out.frames[0].Body<ErrorReply>()->code, "InvalidArgument");
  EXPECT_NE(out.frames[0].Body<ErrorReply>()->message.find("sent to node 'n1'"), std::string::npos);

  Deliver(NodeLabels{"n1", {{"repair.gpool.io/gpu-reset", "off"}}}, 8, /*epoch=*/2);
  out = Take();
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(out.frames[0].Body<ErrorReply>()->code, "StaleEpoch");
  EXPECT_FALSE(labels_.Off("repair.gpool.io/gpu-reset"));
  EXPECT_EQ(labels_.digest(), LabelsDigest({}));
}

// A host that does not take labels (a simulated fleet) says 0, so no leader
// sends it any, and refuses one that comes anyway.
TEST_F(LinkTest, AHostWithoutLabelsSaysSoAndRefusesThem) {
  ASSERT_NO_FATAL_FAILURE(Register());
  Run(1000);
  const Out beat = Take();
  ASSERT_NE(beat.First(MessageType::kHeartbeat), nullptr);
  EXPECT_EQ(beat.First(MessageType::kHeartbeat)->Body<Heartbeat>()->labels_digest, 0u);
  Deliver(NodeLabels{"n1", {{"a", "b"}}}, 9, 1);
  const Out out = Take();
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(out.frames[0].Body<ErrorReply>()->code, "FailedPrecondition");
}

}  // namespace
}  // namespace gpool::worker
