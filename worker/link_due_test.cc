// Link::NextDueMs (what lets the fleet tick a node only when something is
// due): over a random script of a coordinator that answers, withholds its
// answers, goes silent for a while (reconnects, registrations with backoff,
// the lease hold) and binds tasks whose events are resent until
// acknowledged, a Tick before the due time does nothing a caller sees (no
// action, no lease hold): skipping it, as the fleet does, changes nothing.
#include <random>

#include "worker/link_fixture.h"

namespace gpool::worker {
namespace {

// The script's coordinator: answers what `out` holds, unless silent.
class DueScript {
 public:
  explicit DueScript(uint32_t seed) : random_(seed) {}
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(random_) < p; }
  std::mt19937& random() { return random_; }

 private:
  std::mt19937 random_;
};

TEST_F(LinkTest, ATickBeforeItsDueTimeDoesNothingACallerSees) {
  link_ = std::move(Link::Open(MakeOptions()).value());
  link_->Start();
  Take();
  DueScript script(11);
  int64_t silent_until = 0;
  uint64_t next_job = 1;
  size_t quiet_ticks = 0;
  size_t due_ticks = 0;
  std::vector<Envelope> unanswered;  // what the link sent, answered a little later (or never)
  for (int64_t t = 0; t < 60'000; ++t) {
    clock_.Advance(1);
    const int64_t now = clock_.MonoMs();
    if (script.Chance(0.0002)) silent_until = now + 2'000 + static_cast<int64_t>(script.random()() % 4'000);
    const bool silent = now < silent_until;
    // Answers, a few ms late and sometimes not at all.
    if (!silent && !unanswered.empty() && script.Chance(0.3)) {
      for (const Envelope& frame : unanswered) {
        if (script.Chance(0.1)) continue;  // lost
        const uint64_t id = frame.header().request_id;
        if (frame.type() == MessageType::kRegisterNode) {
          RegisterNodeReply reply;
          reply.heartbeat_interval_ms = 500;
          reply.lease_ms = 3'000;
          reply.lease_hold_ms = 6'000;
          Deliver(reply, id, 1);
        } else if (frame.type() == MessageType::kHeartbeat) {
          Deliver(Ack{}, id, 1);
        } else if (frame.type() == MessageType::kTaskEvent) {
          TaskEventAck ack;
          ack.seq = frame.Body<TaskEvent>()->seq;
          Deliver(ack, id, 1);
        }
      }
      unanswered.clear();
    }
    if (!silent && link_->registered() && script.Chance(0.002)) {
      Deliver(MakeBind(next_job), 1'000 + next_job, 1);
      ++next_job;
    }
    tm_->Poll();
    for (Envelope& frame : Take().frames) unanswered.push_back(std::move(frame));

    const int64_t due = link_->NextDueMs();
    ASSERT_GE(due, now);
    ASSERT_LE(due, now + 500) << "never more than an interval away";
    const uint64_t holds = link_->stats().lease_holds;
    link_->Tick();
    Out out = Take();
    if (now < due) {
      ASSERT_TRUE(out.actions.empty()) << "at " << now << ", due " << due << ": " << out.actions.size();
      ASSERT_EQ(link_->stats().lease_holds, holds) << "at " << now;
      ++quiet_ticks;
    } else {
      ++due_ticks;
    }
    for (Envelope& frame : out.frames) unanswered.push_back(std::move(frame));
  }
  // The script reached every phase, and most ticks had nothing to do.
  EXPECT_GT(link_->stats().heartbeats_sent, 50u);
  EXPECT_GT(link_->stats().lease_holds, 0u);
  EXPECT_GT(next_job, 20u);
  EXPECT_GT(quiet_ticks, 20 * due_ticks);
}

}  // namespace
}  // namespace gpool::worker
