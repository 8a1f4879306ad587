// The state version: which commands, and which of their fields, a
// coordinator binary applies (issue 50: rolling upgrades of the replicas).
//
// Every replica applies every committed entry, whatever binary it runs. A
// replica older than a command (a new command type, or a new field of an old
// one) refuses or ignores it and its state quietly parts from the others',
// for good: it replays the same log the same way after its upgrade. So the
// leader proposes such a command only once every replica applying the log
// says it runs a state version that has it (each replica sends its version
// on every Raft message, raft::Message::state_version; ProposalTracker holds
// the gate) and refuses it before that with a typed error naming the replica
// to upgrade. Nothing else waits: commands every version applies alike pass.
//
// Versions:
//   1  every binary from before versions were advertised (a replica that
//      sends none), issue 50's own earlier builds included: they cannot say
//      what they apply, so they count as the oldest
// The gate holds from the first release that sends versions on: while an
// older replica leads, it proposes only what it knows itself.
//   2  issue 50: credit accounts (CreditCmd), scale rules (ScaleJobCmd),
//      billing rules in the price table and UpdatePrices.keep_billing, class
//      grants, queue preemption policies and UpdateQueue.keep, per-job
//      placement policies, exclusive cores, scale rules on task groups
// A change that adds a command or a field that changes what apply does bumps
// kStateVersion and says here and in StateVersionNeeded (command_versions.h)
// what needs it.
#pragma once

#include <cstdint>

namespace gpool::state {

inline constexpr uint32_t kStateVersion = 2;

}  // namespace gpool::state
