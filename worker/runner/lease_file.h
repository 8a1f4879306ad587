// The node lease on disk: the moment until which this node may run its
// tasks, written by the worker each time the coordinator confirms it (an
// acknowledged heartbeat, a registration) and read by every task's
// gpool-task-supervisor, which kills its task once the lease has passed,
// whether or not the worker is still alive. It is how a node that has lost
// the coordinator stops its own tasks before the coordinator places them
// elsewhere (the at-most-one-copy rule, docs/architecture.md).
//
// File: <data-dir>/lease, one line of text, replaced atomically
// (atomic_file.h):
//
//   gpool-lease v1 deadline_mono_ms=<N> boot_id=<kernel boot id>
//
// N is CLOCK_MONOTONIC in milliseconds: system-wide, so the worker and the
// supervisors compare the same clock, and never stepped by NTP or an
// operator. The boot id (/proc/sys/kernel/random/boot_id) ties the deadline
// to the boot whose clock it counts in: after a reboot the clock starts
// again near zero and an old file would otherwise look valid for as long as
// the machine had been up. CLOCK_MONOTONIC does not count time suspended;
// servers do not suspend.
//
// Readers fail safe: a lease that is absent, unreadable, malformed, of
// another boot or past its deadline does not allow running (CheckLease). A
// reader that keeps checking (a task's supervisor) runs on the deadline it
// last read while the file cannot be read (CheckLeaseKeepingLast): that
// deadline was granted, so it is no less safe, and a transient read error
// does not kill every task of the node.
//
// Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>

#include "protocol/base/status.h"

namespace gpool::worker {

// What a start refused for want of a lease says (the launcher's check before
// it spawns, the supervisor's before it forks): the node, not the task, kept
// it from running, so the task is reported lost, as a node loss, and its job
// requeued by its restart policy rather than failed (a bind that reached a
// node stalled past its lease, docs/operations.md 9.3).
inline constexpr char kNoLeaseStart[] = "not started, the node holds no lease";
bool StartRefusedForNoLease(const Status& status);

// <data_dir>/lease.
std::string LeasePath(const std::string& data_dir);

// CLOCK_MONOTONIC now, in milliseconds: the clock a lease deadline counts in.
int64_t MonotonicNowMs();

// Replaces the lease with one that runs until `deadline_mono_ms`
// (CLOCK_MONOTONIC). IoError when it cannot be written; the previous lease
// then stands and runs out.
Status WriteLease(const std::string& path, int64_t deadline_mono_ms);

// How the worker renews it: note MonotonicNowMs() when it sends a
// heartbeat (or RegisterNode); when the coordinator acknowledges that
// message, call RenewLease(path, sent_mono_ms, lease_ms) with the lease the
// coordinator grants. Counting from the send, not the acknowledgement, keeps
// the node's deadline at or before the coordinator's own for the same
// message (the coordinator counts from when it received it), so the node's
// tasks stop before the coordinator may place them elsewhere. A late
// acknowledgement never moves the deadline back: RenewLease only extends.
// Returns the deadline now in force.
Result<int64_t> RenewLease(const std::string& path, int64_t sent_mono_ms, int64_t lease_ms);

// The deadline in the file. NotFound (no file), IoError (unreadable),
// Malformed (not a lease), FailedPrecondition (written in another boot).
Result<int64_t> ReadLease(const std::string& path);

// Ok while the lease at `path` allows running at `now_mono_ms`; otherwise
// why not (ReadLease's errors, or FailedPrecondition "node lease expired").
Status CheckLease(const std::string& path, int64_t now_mono_ms);

// CheckLease for a reader that keeps checking (a task's supervisor):
// `*known_deadline` holds the deadline it last read (0: none) and is updated
// on every good read (to what the file says, even if earlier). A read that fails (a transient I/O error, a file an
// operator moved) falls back on it: running until a deadline already read
// is still within what the coordinator granted, so it is as safe as the
// file and kills no task for a hiccup. Expired once `now_mono_ms` passes the
// deadline in force; the error then names the failed read, if any.
Status CheckLeaseKeepingLast(const std::string& path, int64_t now_mono_ms, int64_t* known_deadline);

}  // namespace gpool::worker
