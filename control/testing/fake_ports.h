// Test doubles for the coordinator's ports: a Proposer that applies commands
// to a ClusterState at once (as if every proposal committed instantly) and an
// Outbox that records frames. Components can then be tested without sockets,
// logs or threads.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "control/ports.h"
#include "protocol/envelope.h"

namespace gpool::control {

class ImmediateProposer final : public Proposer {
 public:
  explicit ImmediateProposer(state::ClusterState& state, int64_t time_ms = 1'000'000)
      : state_(state), time_ms_(time_ms) {}

  void Propose(state::CommandBody body, ApplyCallback done) override {
    proposed_.push_back(std::string(state::CommandName(body)));
    if (holding_) {
      held_.push_back({std::move(body), std::move(done)});
      return;
    }
    state::ApplyResult result = state_.Apply(++index_, state::Command{time_ms_, std::move(body)});
    done(result);
  }
  // Holding: proposals wait (a quorum slow to commit) until Release applies
  // them in order and runs their callbacks.
  void set_holding(bool holding) { holding_ = holding; }
  size_t held() const { return held_.size(); }
  void Release() {
    auto held = std::move(held_);
    held_.clear();
    for (auto& [body, done] : held) done(state_.Apply(++index_, state::Command{time_ms_, std::move(body)}));
  }
  uint64_t epoch() const override { return epoch_; }
  bool leading() const override { return leading_; }
  Status Admissible(const state::CommandBody&) const override { return admissible_; }
  // Not Ok: as a leader whose replicas run an older state version.
  void set_admissible(Status status) { admissible_ = std::move(status); }

  void set_epoch(uint64_t epoch) { epoch_ = epoch; }
  // false: as a replica that lost the lead (the gateway answers NotLeader).
  void set_leading(bool leading) { leading_ = leading; }
  const std::vector<std::string>& proposed() const { return proposed_; }
  void clear() { proposed_.clear(); }

 private:
  state::ClusterState& state_;
  int64_t time_ms_;
  uint64_t index_ = 0;
  uint64_t epoch_ = 1;
  bool leading_ = true;
  Status admissible_ = Status::Ok();
  std::vector<std::string> proposed_;
  bool holding_ = false;
  std::vector<std::pair<state::CommandBody, ApplyCallback>> held_;
};

class RecordingOutbox final : public Outbox {
 public:
  struct Sent {
    bool to_worker = false;
    std::string peer;
    std::string frame;
  };
  void ToClient(const std::string& peer, std::string frame) override { sent.push_back({false, peer, std::move(frame)}); }
  void ToWorker(const std::string& peer, std::string frame) override { sent.push_back({true, peer, std::move(frame)}); }
  std::vector<Sent> sent;
};

// A worker's reply to the coordinator's request `request_id`, decoded as the
// NodeRegistry hands it to WorkerEvents listeners.
template <typename T>
Envelope WorkerReply(uint64_t request_id, const T& body) {
  return DecodeEnvelope(EncodeEnvelope(Header{.request_id = request_id}, body)).value();
}

// A small node for component tests: 8 CPUs, 8 GiB, one GPU "<name>-0".
inline NodeSpec OneGpuNode(const std::string& name) {
  NodeSpec node;
  node.name = name;
  node.cpu_milli = 8000;
  node.memory_mib = 8192;
  node.gpus.push_back(GpuInfo{.index = 0, .uuid = name + "-0"});
  return node;
}

}  // namespace gpool::control
