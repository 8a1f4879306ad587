// The fixtures the CLI's command tests share (cli_*_test.cc): CliTest, the
// CLI against a FakeCluster with a helper to add jobs, and QueueCliTest, which
// adds a queue tree and is used by the queue and the explain tests. They live
// in a header, not in each test file's anonymous namespace, because a gtest
// suite spread over several files must use one fixture class, and CI builds
// the test files as one unity translation unit.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "client/cli.h"
#include "client/test_support.h"
#include "client/testing/fake_client.h"
#include "protocol/messages_admin.h"

namespace gpool::client::testing {

class CliTest : public FakeCliTest {
 protected:
  uint64_t AddJob(const std::string& name, JobState state) {
    JobSpec spec;
    spec.name = name;
    TaskGroupSpec group;
    group.command = {"true"};
    group.replicas = 2;
    spec.tasks = {group};
    FakeClient client(cluster_);
    auto reply = client.Submit(spec, "");
    EXPECT_TRUE(reply.ok());
    cluster_->SetJobState(reply->job_id, state);
    cluster_->submits.clear();
    return reply->job_id;
  }
};

class QueueCliTest : public CliTest {
 protected:
  // research (under root) with every quota, and vision under research.
  void AddResearch() {
    QueueSummary research;
    research.spec.name = "research";
    research.spec.capability = {{"gpu", 16}, {"cpu", 64000}};
    research.spec.deserved = {{"gpu", 8}};
    research.spec.guarantee = {{"gpu", 4}};
    research.allocated = {{"gpu", 6}, {"cpu", 12000}, {"memory", 65536}};
    research.jobs_pending = 2;
    research.jobs_running = 1;
    cluster_->queues["research"] = research;
    QueueSummary vision;
    vision.spec.name = "vision";
    vision.spec.parent = "research";
    vision.spec.capability = {{"gpu/A100", 8}};
    cluster_->queues["vision"] = vision;
  }

  const QueueSpec& Spec(const std::string& name) const { return cluster_->queues.at(name).spec; }

  // Runs `args`, expecting exit `code` with exactly `error` on stderr, and an
  // UpdateQueue sent (and refused by the coordinator) only when `sent`.
  void ExpectRejected(const std::vector<std::string>& args, int code, const std::string& error, bool sent = false) {
    SCOPED_TRACE(::testing::PrintToString(args));
    const size_t updates = cluster_->queue_updates.size();
    EXPECT_EQ(Run(args), code);
    EXPECT_EQ(err_.str(), error);
    EXPECT_EQ(out_.str(), "");
    EXPECT_EQ(cluster_->queue_updates.size(), updates + (sent ? 1 : 0));
  }
};

}  // namespace gpool::client::testing
