// Restore reads the image one record at a time (cluster_state_restore.cc,
// issue 49): the same state as before, the same errors, and a bad image
// changes nothing.
#include <gtest/gtest.h>

#include <vector>

#include "control/state/cluster_state_fixture.h"
#include "control/state/snapshot_image.h"
#include "control/state/test_specs.h"
#include "protocol/wire.h"

namespace gpool::state {
namespace {

using testing::MakeNode;

class SnapshotStreamTest : public ClusterStateTest {
 protected:
  // Nodes, running and finished jobs, events, audit, forgotten jobs, usage.
  void Fill() {
    Do(RegisterNodeCmd{MakeNode("n1", 8), {}});
    Do(RegisterNodeCmd{MakeNode("n2", 8), {}});
    for (int i = 0; i < 12; ++i) {
      const uint64_t job = Submit("job-" + std::to_string(i), 1, 1, "key-" + std::to_string(i));
      Do(ApplyPlanCmd{{Bind(job, 0, i % 2 ? "n1" : "n2", {static_cast<uint32_t>(i / 2)})}, {}});
      Event(job, 0, i % 2 ? "n1" : "n2", "started");
      if (i < 8) Event(job, 0, i % 2 ? "n1" : "n2", "exited", i % 3);
    }
    Submit("waiting", 1, 64);
    Do(UpdateUserCmd{UpdateUser{UserOp::kCreate, UserSpec{"alice", {}, 1000, 1000, {{Role::kViewer, ""}}}}});
    Do(AuditCmd{{AuditEntry{0, 0, "alice", "CancelJob", "job 1", false, "cancel-job"}}});
    // The oldest finished jobs leave the state: forgotten summaries and totals.
    ASSERT_GT(Do(ForgetJobsCmd{INT64_MAX, 3}).jobs_forgotten, 0u);
  }
};

TEST_F(SnapshotStreamTest, RestoresTheSameStateAndItsIndexes) {
  Fill();
  const std::string image = state_.Snapshot();
  ClusterState restored;
  ASSERT_TRUE(restored.Restore(image).ok());
  EXPECT_EQ(restored.Snapshot(), image);
  EXPECT_EQ(restored.jobs().size(), state_.jobs().size());
  EXPECT_EQ(restored.forgotten_count(), state_.forgotten_count());
  EXPECT_EQ(restored.ActiveTasks(), state_.ActiveTasks());
  EXPECT_EQ(restored.pending_jobs(), state_.pending_jobs());
  EXPECT_EQ(restored.events().size(), state_.events().size());
  EXPECT_EQ(restored.audit().size(), state_.audit().size());
  EXPECT_EQ(restored.usage_ledger().records().size(), state_.usage_ledger().records().size());
  EXPECT_TRUE(restored.Apply(1000, Command{1, SubmitJobCmd{MakeJob("x", 1, 0), "key-11"}}).duplicate);
}

TEST_F(SnapshotStreamTest, ReadsTheWholeValueLayoutOfOlderWriters) {
  // Images packed from a SnapshotImage (before Snapshot() wrote record by
  // record) and with the fields in another order both restore.
  Fill();
  internal::SnapshotImage image;
  image.applied_index = state_.applied_index();
  image.next_job_id = state_.next_job_id();
  for (const auto& [name, node] : state_.nodes()) image.nodes.push_back(node);
  for (const auto& [id, job] : state_.jobs()) image.jobs.push_back(job);
  image.forgotten.assign(state_.forgotten().begin(), state_.forgotten().end());
  ClusterState restored;
  ASSERT_TRUE(restored.Restore(wire::PackToString(image)).ok());
  EXPECT_EQ(restored.jobs().size(), state_.jobs().size());
  EXPECT_EQ(restored.forgotten().size(), state_.forgotten().size());

  msgpack::sbuffer buffer;
  wire::Packer packer(buffer);
  packer.BeginMap(4);
  packer.Field("jobs", image.jobs);  // lists before the numbers, unknown keys skipped
  packer.Field("a_newer_field", std::vector<std::string>{"ignored"});
  packer.Field("nodes", image.nodes);
  packer.Field("applied", image.applied_index);
  ClusterState partial;
  Status missing = partial.Restore(std::string_view(buffer.data(), buffer.size()));
  EXPECT_EQ(missing.code(), StatusCode::kMalformed);
  EXPECT_NE(missing.message().find("value.next_job_id: required field is missing"), std::string::npos)
      << missing.ToString();
}

TEST_F(SnapshotStreamTest, RequiredListsAreRequiredAndOptionalNilsAreAbsent) {
  auto pack = [](bool jobs_nil, bool events_nil) {
    msgpack::sbuffer buffer;
    wire::Packer packer(buffer);
    packer.BeginMap(5);
    packer.Field("applied", uint64_t{4});
    packer.Field("next_job_id", uint64_t{9});
    packer.Field("nodes", std::vector<NodeRecord>{});
    packer.Key("jobs");
    jobs_nil ? packer.Nil() : packer.BeginArray(0);
    packer.Key("events");
    events_nil ? packer.Nil() : packer.BeginArray(0);
    return std::string(buffer.data(), buffer.size());
  };
  ClusterState a;
  ASSERT_TRUE(a.Restore(pack(false, true)).ok());
  EXPECT_EQ(a.applied_index(), 4u);
  EXPECT_EQ(a.next_job_id(), 9u);
  ClusterState b;
  Status nil_jobs = b.Restore(pack(true, false));
  EXPECT_EQ(nil_jobs.code(), StatusCode::kMalformed);
  EXPECT_NE(nil_jobs.message().find("value.jobs: expected an array"), std::string::npos) << nil_jobs.ToString();
}

TEST_F(SnapshotStreamTest, EveryTruncationIsATypedErrorThatChangesNothing) {
  Fill();
  const std::string image = state_.Snapshot();
  ClusterState target;
  ASSERT_TRUE(target.Restore(image).ok());
  ASSERT_TRUE(target.Apply(target.applied_index() + 1, Command{1, SubmitJobCmd{MakeJob("after", 1, 0), ""}}).status.ok());
  const std::string before = target.Snapshot();
  // Every cut is refused; a stride keeps the test quick on a large image.
  const size_t stride = std::max<size_t>(1, image.size() / 400);
  for (size_t cut = 0; cut < image.size(); cut += stride) {
    Status s = target.Restore(std::string_view(image).substr(0, cut));
    ASSERT_FALSE(s.ok()) << "cut at " << cut;
    EXPECT_EQ(s.code(), StatusCode::kMalformed) << "cut at " << cut << ": " << s.ToString();
  }
  EXPECT_EQ(target.Snapshot(), before);
  // Trailing bytes and a damaged record too.
  EXPECT_EQ(target.Restore(image + "x").code(), StatusCode::kMalformed);
  std::string damaged = image;
  const std::string key_field = "\xa3key";  // a job's idempotency key
  const size_t key = damaged.find(key_field);
  ASSERT_NE(key, std::string::npos);
  damaged[key + key_field.size()] = '\xc1';  // its value: the one byte msgpack never uses
  EXPECT_EQ(target.Restore(damaged).code(), StatusCode::kMalformed);
  EXPECT_EQ(target.Snapshot(), before);
}

TEST_F(SnapshotStreamTest, ADamagedRecordIsNamedByItsIndex) {
  Fill();
  internal::SnapshotImage image;
  image.applied_index = state_.applied_index();
  image.next_job_id = state_.next_job_id();
  for (const auto& [id, job] : state_.jobs()) image.jobs.push_back(job);
  std::string bytes = wire::PackToString(image);
  // The third job's "spec" key renamed: a required field missing.
  size_t at = 0;
  for (int i = 0; i < 3; ++i) at = bytes.find("\xa4spec", at + 1);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1] = 'x';
  ClusterState restored;
  Status s = restored.Restore(bytes);
  EXPECT_EQ(s.code(), StatusCode::kMalformed);
  EXPECT_NE(s.message().find("value.jobs[2].spec: required field is missing"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace gpool::state
