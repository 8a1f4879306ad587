#include "protocol/envelope.h"
#include "protocol/message_type.h"
#include "protocol/messages_client.h"
#include "protocol/messages_worker.h"
#include "protocol/model/queue_update.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

namespace gpool {
namespace {

JobSpec SampleSpec() {
  JobSpec spec;
  spec.name = "train";
  spec.priority = 5;
  TaskGroupSpec group;
  group.name = "worker";
  group.replicas = 2;
  group.command = {"python3", "train.py"};
  group.env = {{"EPOCHS", "3"}};
  group.resources = Resources{2, 4000, 16384};
  spec.tasks.push_back(group);
  return spec;
}

std::string Pack(const std::function<void(wire::Packer&)>& fn) {
  msgpack::sbuffer buffer;
  wire::Packer p(buffer);
  fn(p);
  return std::string(buffer.data(), buffer.size());
}

TEST(EnvelopeTest, RoundTripsEveryField) {
  SubmitJob submit{SampleSpec(), "key-1"};
  Header header{kProtocolVersion, MessageType::kAck, 42, "cli-1", 7, "secret"};
  std::string bytes = EncodeEnvelope(header, submit);

  auto env = DecodeEnvelope(bytes);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(env->type(), MessageType::kSubmitJob);
  EXPECT_EQ(env->header().request_id, 42u);
  EXPECT_EQ(env->header().sender, "cli-1");
  EXPECT_EQ(env->header().epoch, 7u);
  EXPECT_EQ(env->header().token, "secret");
  auto body = env->Body<SubmitJob>();
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(body->spec, submit.spec);
  EXPECT_EQ(body->idempotency_key, "key-1");
}

TEST(EnvelopeTest, TaskIdsAndNestedListsRoundTrip) {
  BindTask bind;
  bind.task = TaskId{JobId(9), 3, 1};
  bind.num_tasks = 4;
  bind.command = {"sh", "-c", "true"};
  bind.gpu_indices = {0, 5};
  bind.gpu_uuids = {"GPU-a", "GPU-b"};
  auto env = DecodeEnvelope(EncodeEnvelope(Header{}, bind));
  ASSERT_TRUE(env.ok());
  auto back = env->Body<BindTask>();
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->task, bind.task);
  EXPECT_EQ(back->gpu_indices, bind.gpu_indices);
  EXPECT_EQ(back->gpu_uuids, bind.gpu_uuids);
  EXPECT_FALSE(back->run_as.set()) << "no identity set: the worker's default";
}

TEST(EnvelopeTest, BindRunAsRoundTrips) {
  BindTask bind;
  bind.task = TaskId{JobId(9), 0, 0};
  bind.command = {"true"};
  bind.run_as = RunAs{.uid = 1234, .gid = 100, .user = "alice"};
  auto env = DecodeEnvelope(EncodeEnvelope(Header{}, bind));
  ASSERT_TRUE(env.ok());
  auto back = env->Body<BindTask>();
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->run_as, bind.run_as);
  EXPECT_TRUE(back->run_as.set());
}

TEST(EnvelopeTest, WrongBodyTypeIsRejected) {
  auto env = DecodeEnvelope(EncodeEnvelope(Header{}, GetJob{5}));
  ASSERT_TRUE(env.ok());
  auto wrong = env->Body<CancelJob>();
  EXPECT_EQ(wrong.status().code(), StatusCode::kMalformed);
}

TEST(EnvelopeTest, OversizeFrameIsResourceExhausted) {
  wire::DecodeLimits limits;
  limits.max_frame_bytes = 64;
  SubmitJob submit{SampleSpec(), std::string(200, 'k')};
  auto env = DecodeEnvelope(EncodeEnvelope(Header{}, submit), limits);
  EXPECT_EQ(env.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(env.status().message().find("exceeds the limit"), std::string::npos);
}

TEST(EnvelopeTest, TrailingBytesAreMalformed) {
  std::string bytes = EncodeEnvelope(Header{}, GetJob{5}) + "xyz";
  auto env = DecodeEnvelope(bytes);
  EXPECT_EQ(env.status().code(), StatusCode::kMalformed);
  EXPECT_NE(env.status().message().find("trailing"), std::string::npos);
}

TEST(EnvelopeTest, EveryTruncationIsMalformedNeverACrash) {
  std::string bytes = EncodeEnvelope(Header{}, SubmitJob{SampleSpec(), "k"});
  for (size_t len = 0; len < bytes.size(); ++len) {
    auto env = DecodeEnvelope(std::string_view(bytes.data(), len));
    ASSERT_FALSE(env.ok()) << "prefix of " << len << " bytes decoded";
    EXPECT_EQ(env.status().code(), StatusCode::kMalformed) << env.status().ToString();
  }
}

TEST(EnvelopeTest, UnknownTypeAndVersionAreTyped) {
  auto unknown = Pack([](wire::Packer& p) {
    p.BeginMap(3);
    p.Field("v", uint32_t{1});
    p.Field("type", "LaunchMissiles");
    p.Field("id", uint64_t{1});
  });
  EXPECT_EQ(DecodeEnvelope(unknown).status().code(), StatusCode::kUnknownType);

  auto future = Pack([](wire::Packer& p) {
    p.BeginMap(3);
    p.Field("v", uint32_t{99});
    p.Field("type", "GetJob");
    p.Field("id", uint64_t{1});
  });
  EXPECT_EQ(DecodeEnvelope(future).status().code(), StatusCode::kUnsupportedVersion);
}

TEST(EnvelopeTest, MistypedAndMissingFieldsNameTheField) {
  auto mistyped = Pack([](wire::Packer& p) {
    p.BeginMap(4);
    p.Field("v", uint32_t{1});
    p.Field("type", "GetJob");
    p.Field("id", uint64_t{1});
    p.Key("body");
    p.BeginMap(1);
    p.Field("job_id", "seven");
  });
  auto env = DecodeEnvelope(mistyped);
  ASSERT_TRUE(env.ok());
  auto body = env->Body<GetJob>();
  EXPECT_EQ(body.status().code(), StatusCode::kMalformed);
  EXPECT_EQ(body.status().message(), "body.job_id: expected unsigned integer, got string");

  auto negative = Pack([](wire::Packer& p) {
    p.BeginMap(4);
    p.Field("v", uint32_t{1});
    p.Field("type", "GetJob");
    p.Field("id", uint64_t{1});
    p.Key("body");
    p.BeginMap(1);
    p.Field("job_id", int64_t{-4});
  });
  auto neg_env = DecodeEnvelope(negative);
  ASSERT_TRUE(neg_env.ok());
  EXPECT_EQ(neg_env->Body<GetJob>().status().code(), StatusCode::kMalformed);

  auto missing = Pack([](wire::Packer& p) {
    p.BeginMap(2);
    p.Field("v", uint32_t{1});
    p.Field("type", "GetJob");
  });
  auto missing_env = DecodeEnvelope(missing);
  EXPECT_EQ(missing_env.status().code(), StatusCode::kMalformed);
  EXPECT_EQ(missing_env.status().message(), "envelope.id: required field is missing");

  auto nested = DecodeEnvelope(EncodeEnvelope(Header{}, SubmitJob{SampleSpec(), ""}));
  ASSERT_TRUE(nested.ok());
  // A spec whose task group lacks a command names the full path.
  auto no_command = Pack([](wire::Packer& p) {
    p.BeginMap(4);
    p.Field("v", uint32_t{1});
    p.Field("type", "SubmitJob");
    p.Field("id", uint64_t{1});
    p.Key("body");
    p.BeginMap(1);
    p.Key("spec");
    p.BeginMap(2);
    p.Field("name", "x");
    p.Key("tasks");
    p.BeginArray(1);
    p.BeginMap(1);
    p.Field("replicas", uint32_t{2});
  });
  auto no_command_env = DecodeEnvelope(no_command);
  ASSERT_TRUE(no_command_env.ok());
  EXPECT_EQ(no_command_env->Body<SubmitJob>().status().message(),
            "body.spec.tasks[0].command: required field is missing");
}

// A queue update from an older client carries no preemption policy (issue
// 50): it decodes to the class rule's defaults, and an explicit empty list
// (no class may preempt) survives the round trip.
TEST(EnvelopeTest, QueuePolicyFieldsAreOptionalWithTheClassRuleDefaults) {
  auto old = Pack([](wire::Packer& p) {
    p.BeginMap(4);
    p.Field("v", uint32_t{1});
    p.Field("type", "UpdateQueue");
    p.Field("id", uint64_t{1});
    p.Key("body");
    p.BeginMap(2);
    p.Field("op", "create");
    p.Key("spec");
    p.BeginMap(1);
    p.Field("name", "team");
  });
  auto env = DecodeEnvelope(old);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  auto body = env->Body<UpdateQueue>();
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(body->spec.preempting_classes, (std::vector<std::string>{"high", "system"}));
  EXPECT_TRUE(body->spec.low_reclaimable);

  UpdateQueue none;
  none.spec.name = "team";
  none.spec.preempting_classes.clear();
  none.spec.low_reclaimable = false;
  auto round = DecodeEnvelope(EncodeEnvelope(Header{}, none));
  ASSERT_TRUE(round.ok());
  auto back = round->Body<UpdateQueue>();
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->spec.preempting_classes.empty());
  EXPECT_FALSE(back->spec.low_reclaimable);
}

TEST(EnvelopeTest, NestingBombIsRejected) {
  std::string bytes(100, '\x91');  // 100 nested one-element arrays
  bytes += '\xc0';
  auto env = DecodeEnvelope(bytes);
  EXPECT_FALSE(env.ok());
}

// Found by fuzz/: msgpack's unpacker allocates a container's declared size
// before reading its elements, so 30 nested map32 headers declaring 2^20
// pairs each (210 bytes) cost 1.4 GB of allocations and, under the
// sanitizers, a third of a second per frame. The frame is now walked first
// without allocating and refused as truncated at once.
TEST(EnvelopeTest, ContainersLargerThanTheFrameAreRefusedWithoutAllocating) {
  std::string bytes;
  for (int i = 0; i < 30; ++i) bytes += std::string("\xdf\x00\x10\x00\x00\xa1k", 7);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    auto env = DecodeEnvelope(bytes);
    ASSERT_EQ(env.status().code(), StatusCode::kMalformed) << env.status().ToString();
    EXPECT_NE(env.status().message().find("truncated"), std::string::npos) << env.status().ToString();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));

  // Over a limit is still ResourceExhausted, whole or not.
  wire::DecodeLimits small{.max_container_elements = 4};
  EXPECT_EQ(DecodeEnvelope(std::string("\x95\x01", 2), small).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(DecodeEnvelope(std::string("\xc1", 1)).status().code(), StatusCode::kMalformed);
}

TEST(EnvelopeTest, RandomBytesNeverCrash) {
  std::mt19937_64 rng(1234);
  std::string valid = EncodeEnvelope(Header{}, SubmitJob{SampleSpec(), "k"});
  for (int i = 0; i < 20000; ++i) {
    std::string bytes;
    if (i % 2 == 0) {
      bytes.resize(rng() % 64);
      for (auto& c : bytes) c = static_cast<char>(rng());
    } else {
      bytes = valid;
      for (int flips = 0; flips < 3; ++flips) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    auto env = DecodeEnvelope(bytes);
    if (env.ok()) {
      auto body = env->Body<SubmitJob>();
      (void)body;
    }
  }
  SUCCEED();
}

}  // namespace
}  // namespace gpool
