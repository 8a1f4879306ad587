// The Link test fixture (link.h): a Link over a NodeHost with a fake
// process launcher and clock, whose sent frames and connects a test takes
// back; shared by link_test.cc and link_lease_health_test.cc.
#pragma once

#include "worker/link.h"
#include "worker/node_host.h"

#include <csignal>
#include <random>

#include <gtest/gtest.h>

#include "protocol/base/testing/fake_clock.h"
#include "protocol/health.h"
#include "protocol/message_type.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/messages_exec.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"
#include "worker/health/testing/scripted_check.h"
#include "worker/runner/testing/fake_process_launcher.h"
#include "worker/test_util.h"

namespace gpool::worker {

class LinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_.name = "n1";
    node_.cpu_milli = 8000;
    node_.memory_mib = 8192;
    for (uint32_t i = 0; i < 2; ++i) {
      GpuInfo gpu;
      gpu.index = i;
      gpu.uuid = "GPU-n1-" + std::to_string(i);
      node_.gpus.push_back(gpu);
    }
    TaskManagerOptions tm_options;
    tm_options.node = node_;
    tm_options.log_dir = dir_.path() + "/tasks";
    tm_options.launcher = &launcher_;
    tm_options.clock = &clock_;
    tm_options.logger = log_.logger();
    tm_ = std::move(TaskManager::Open(std::move(tm_options)).value());

    link_ = std::move(Link::Open(MakeOptions()).value());
  }

  // The link over a NodeHost of this test's TaskManager and `host`'s parts.
  LinkOptions MakeOptions(NodeHostOptions host = {}) {
    if (host.tasks == nullptr) host.tasks = tm_.get();
    host_ = std::make_unique<NodeHost>(std::move(host));
    LinkOptions options;
    options.endpoints = {"tcp://c1:7401", "tcp://c2:7401"};
    options.token = "tok";
    options.worker_version = "test-1";
    options.host = host_.get();
    options.clock = &clock_;
    options.random = [this] { return random_; };
    options.logger = log_.logger();
    return options;
  }

  // Sends the actions since the last call through a fake "wire": connects
  // are recorded, frames decoded.
  struct Out {
    std::vector<std::string> connects;
    std::vector<Envelope> frames;
    std::vector<LinkAction> actions;

    size_t Count(MessageType type) const {
      size_t n = 0;
      for (const auto& f : frames) n += f.type() == type;
      return n;
    }
    const Envelope* First(MessageType type) const {
      for (const auto& f : frames) {
        if (f.type() == type) return &f;
      }
      return nullptr;
    }
  };
  Out Take() {
    Out out;
    out.actions = link_->TakeActions();
    for (const auto& action : out.actions) {
      if (action.kind == LinkAction::Kind::kConnect) {
        out.connects.push_back(action.data);
        continue;
      }
      auto env = DecodeEnvelope(action.data);
      EXPECT_TRUE(env.ok()) << env.status().ToString();
      if (env.ok()) {
        EXPECT_EQ(env->header().token, "tok");
        out.frames.push_back(std::move(env.value()));
      }
    }
    return out;
  }

  template <typename T>
  void Deliver(const T& body, uint64_t request_id = 0, uint64_t epoch = 0) {
    Header header;
    header.request_id = request_id;
    header.sender = "coordinator";
    header.epoch = epoch;
    link_->Receive(EncodeEnvelope(header, body));
  }

  // One turn of the agent loop, without the socket.
  void Turn() {
    tm_->Poll();
    link_->Tick();
  }
  // Lets `ms` pass the way a running loop does, turning every 10 ms (a long
  // jump between turns would be a stall, which the link does not count as
  // the coordinator's silence).
  void Run(int64_t ms) {
    for (; ms > 10; ms -= 10) {
      clock_.Advance(10);
      Turn();
    }
    clock_.Advance(ms);
    Turn();
  }

  void Register(uint32_t interval_ms = 1000, uint64_t epoch = 1) {
    link_->Start();
    RegisterNodeReply reply;
    reply.heartbeat_interval_ms = interval_ms;
    reply.coordinator_id = "c1";
    Deliver(reply, 1, epoch);
    ASSERT_TRUE(link_->registered());
    Take();
  }

  BindTask MakeBind(uint64_t job, std::vector<uint32_t> gpus = {}) {
    BindTask bind;
    bind.task = TaskId{JobId(job), 0, 0};
    bind.job_name = "j";
    bind.command = {"run"};
    bind.gpu_indices = std::move(gpus);
    return bind;
  }

  NodeSpec node_;
  FakeClock clock_;
  FakeProcessLauncher launcher_;
  testing::TempDir dir_;
  testing::CapturedLog log_;
  double random_ = 0.5;
  std::unique_ptr<TaskManager> tm_;
  std::unique_ptr<NodeHost> host_;
  std::unique_ptr<Link> link_;
};

}  // namespace gpool::worker
