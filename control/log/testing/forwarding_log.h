// ForwardingLog: a CommitLog that passes every call to another (a LocalLog,
// in tests), for test doubles that change one or two of its answers (how
// commits come out, the replicas' lowest state version) and keep the rest.
// Test code only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "control/log/commit_log.h"

namespace gpool::log::testing {

class ForwardingLog : public CommitLog {
 public:
  explicit ForwardingLog(CommitLog& inner) : inner_(inner) {}

  Result<Committed> Recover() override { return inner_.Recover(); }
  Result<uint64_t> Propose(std::string data) override { return inner_.Propose(std::move(data)); }
  Result<Committed> Sync() override { return inner_.Sync(); }
  bool HasUnsynced() const override { return inner_.HasUnsynced(); }
  bool IsLeader() const override { return inner_.IsLeader(); }
  bool LeaderCaughtUp() const override { return inner_.LeaderCaughtUp(); }
  uint64_t term() const override { return inner_.term(); }
  uint64_t commit_index() const override { return inner_.commit_index(); }
  Status SaveSnapshot(uint64_t index, std::string_view data) override { return inner_.SaveSnapshot(index, data); }
  Status write_error() const override { return inner_.write_error(); }
  Status ResumeWrites() override { return inner_.ResumeWrites(); }
  void Pump() override { inner_.Pump(); }
  int64_t MsUntilDue() const override { return inner_.MsUntilDue(); }
  Status ReadIndex(std::string context) override { return inner_.ReadIndex(std::move(context)); }
  std::vector<std::string> TakeReadyReads() override { return inner_.TakeReadyReads(); }
  Result<uint64_t> ProposeMembership(const MembershipChange& change) override {
    return inner_.ProposeMembership(change);
  }
  ReplicationReport Report() const override { return inner_.Report(); }
  StateVersionFloor LowestStateVersion() const override { return inner_.LowestStateVersion(); }

 protected:
  CommitLog& inner() { return inner_; }
  const CommitLog& inner() const { return inner_; }

 private:
  CommitLog& inner_;
};

}  // namespace gpool::log::testing
