// Restoring a snapshot file (protocol/snapshot_file.h) into a new data dir:
// the disaster-recovery half of `gpool admin snapshot save|restore`, run by
// `gpool-coordinator --restore-snapshot FILE --data-dir DIR [--peers ...]`
// (which `gpool admin snapshot restore` calls).
//
// The data dir written is what a coordinator would have left after taking
// that snapshot and compacting its log: a single replica's (without peers),
// or one replica's of a replicated coordinator (with the voter ids of
// `voters`; every replica of the new cluster is restored from the same file
// with the same voters, and takes its addresses from its own command line
// when it starts). Before anything is written the file's checksum is checked
// and its image is decoded as a state at the index the header names.
//
// Signed files (issue 48, format 3 of protocol/snapshot_file.h): given a
// verify key (--snapshot-verify-key), only a file that key signed, unchanged
// since, is restored; without one, a signed file restores like any other and
// the report says its signature was not checked.
//
// The restored cluster's term (the epoch workers fence commands by) starts
// past any term the old cluster can have reached since the snapshot, one per
// millisecond since it was taken (no election takes less), so workers that
// kept running under the old cluster accept the new leader's commands. Job
// ids jump the same way (a million, and a hundred per millisecond since),
// so no new job takes the id of one the old cluster ran after the snapshot
// (a worker would take its binds for ones it already holds). The jump is
// not made in the restored image, which stays exactly the file's: each
// replica is restored at its own moment, and a counter that differed
// between replicas would give one submission another id on each (a client's
// job gone after a failover). The floor is stored beside the image
// (kRestoreJobIdFloorKey); the restored cluster's first leader commits it
// (SkipJobIdsCmd) before any submission of its term, and every replica
// applies that one.
//
// Thread-safety: a pure function of its arguments and the file system.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"
#include "control/ports.h"
#include "storage/kv_store.h"

namespace gpool::state {
class ClusterState;
}  // namespace gpool::state

namespace gpool::control {

// Where a restored data dir keeps its job-id floor (decimal).
inline constexpr std::string_view kRestoreJobIdFloorKey = "restore/job_id_floor";

// The floor a restore left in the store (0: none, as in any data dir that
// was not restored by this version); Malformed if it is not a number.
Result<uint64_t> ReadRestoreJobIdFloor(storage::KvStore& kv);

// On a new leader: commits the floor (SkipJobIdsCmd) when the state's next
// job id is below it, before any submission of the leader's term.
void ProposeRestoreJobIdFloor(uint64_t floor, const state::ClusterState& state, Proposer& proposer);

struct RestoreOptions {
  std::string snapshot_file;
  std::string data_dir;         // must not exist, or be empty
  std::vector<uint64_t> voters; // empty: a single-replica data dir
  int64_t now_ms = 0;           // wall clock, Unix ms
  std::string verify_key_file;  // a snapshot verify key (PEM public key); empty: signatures not required
};

struct RestoreReport {
  uint64_t index = 0;          // the log index the state is at
  uint64_t snapshot_term = 0;  // the term the file records
  uint64_t term = 0;           // the term the data dir starts from
  uint64_t first_job_id = 0;   // the least id a job submitted to the restored cluster gets
  size_t jobs = 0;
  size_t nodes = 0;
  uint64_t state_bytes = 0;
  uint32_t format = 0;         // the file's format (1, 2, or 3 when signed)
  std::string key_id;          // format 3: the key that signed it
  bool verified = false;       // its signature was checked against the verify key
};

// FailedPrecondition for a data dir that holds anything, NotFound or
// Malformed for a missing or damaged file or image, Unauthenticated for a
// file the verify key did not sign (or that changed since), NotFound,
// FailedPrecondition or InvalidArgument for a verify key file that cannot be
// used, IoError for a write that failed. On any error the data dir is left as it was (a dir this call made
// is removed again).
Result<RestoreReport> RestoreDataDir(const RestoreOptions& options);

}  // namespace gpool::control
