// KeyDirectory: which CurveZMQ keys the coordinator admits, per ZAP domain,
// and what each is admitted as (the User-Id of control/principal.h).
//
//   clients  a registered user's key      -> user|<name>|<key>
//            (one rotated away: until its deadline, by the clock)
//            the bootstrap admin's key     -> user|admin|<key> (--admin-key)
//            a bound or running task's exec key -> task|<job>.<index>[#attempt]|<key>
//            (security/task_exec_key.h; a job's own secret opens nothing)
//            any key while bootstrap is open (no admin yet) -> bootstrap||<key>
//   workers  a key bound to a node         -> node|<name>|<key>
//            a key rotated away with a grace, until its deadline (wall
//            clock, compared at each handshake) -> node|<name>|<key>
//            an unbound key (admission or first-use enrolment) -> new-node||<key>
//            (admission: the node registry records it as a pending
//            enrolment until an admin approves it or it presents a join
//            token; first-use: bound to the name it registers, once)
//   peers    a replica of the configuration -> replica|<id>|<key>
//            a replica's key rotated away with a grace, until its deadline
//            (wall clock, at each handshake) -> replica|<id>|<key>
// Anything else is refused at the handshake: the connection never delivers
// a frame.
//
// The directory is a cache of committed state (users, node bindings, the
// replica configuration) that the coordinator's loop refreshes; it decides
// admission only. Who may do what once admitted is the gateway's and the
// registry's business, from the Principal.
//
// Thread-safety: every method locks; the ZAP handler's thread calls
// Authorize while the coordinator's loop thread updates it.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "protocol/base/clock.h"
#include "protocol/base/ids.h"
#include "protocol/base/status.h"

namespace gpool::control {

enum class WorkerEnrolment {
  kFirstUse,   // lab only: an unknown worker key is admitted, and bound to the first name it registers
  kAdmin,      // only keys an admin enrolled (or bound before) are admitted
  kAdmission,  // the default: an unknown key may register, but waits as a pending
               // enrolment (no work) until approved or it presents a join token
};
std::string_view WorkerEnrolmentName(WorkerEnrolment enrolment);
Result<WorkerEnrolment> WorkerEnrolmentFromName(std::string_view name);

class KeyDirectory {
 public:
  explicit KeyDirectory(WorkerEnrolment enrolment = WorkerEnrolment::kAdmission,
                        const Clock* clock = &SystemClock::Get())
      : enrolment_(enrolment), clock_(clock) {}

  // ZapHandler's Authorizer: the User-Id, or nullopt to refuse.
  std::optional<std::string> Authorize(std::string_view domain, std::string_view key) const;

  // clients: public key -> user name, replacing the whole map (from the
  // committed user records).
  void SetUsers(std::map<std::string, std::string> users);
  // clients: key -> wall ms from which a user's key rotated away is refused
  // (UserSpec::key_expiry), replacing the whole map; compared with the clock
  // at each handshake.
  void SetUserKeyExpiry(std::map<std::string, int64_t> expiry);
  // clients: the tasks that are bound or running, each with its job's exec
  // secret (JobRecord::exec_token), replacing all of them (from the
  // committed state) or one job's. Their keys (security::TaskExecSecret and
  // its public half: an HMAC and a scalar multiplication each) are derived
  // here, on the ZAP handler's thread at the first handshake that misses,
  // off the coordinator's loop, and kept while the task stays live.
  void SetLiveTasks(std::map<TaskId, std::string> job_secrets);
  void SetJobLiveTasks(uint64_t job, std::map<TaskId, std::string> job_secrets);
  // How many live tasks' keys have been derived (and so are admitted).
  size_t task_keys() const;
  // The key of the bootstrap admin (--admin-key); kept apart from SetUsers so
  // replacing the users does not drop it. Empty: none.
  void SetAdminKey(std::string key);
  // While open (no admin exists yet) any client key is admitted as
  // kBootstrap, whose only use is creating the first admin.
  void SetBootstrapOpen(bool open);

  // workers: node name -> key, replacing every binding (from the committed
  // node records, on recovery and leadership changes).
  void SetNodeKeys(const std::map<std::string, std::string>& node_keys);
  // Binds `key` to `node` (a committed registration or an admin's
  // enrolment), replacing the node's previous key: the old key is no longer
  // admitted as that node.
  void EnrolNode(const std::string& node, const std::string& key);
  // A node's key rotated away with a grace (NodeRecord::retired_key): still
  // admitted as `node` until wall time until_ms, refused from then on with no
  // further call. Replaces the node's previous retired key; a deadline in the
  // past removes it.
  void RetireNodeKey(const std::string& node, const std::string& key, int64_t until_ms);
  // Every node's retired key, replacing them all: node -> (key, until_ms).
  void SetRetiredNodeKeys(const std::map<std::string, std::pair<std::string, int64_t>>& retired);
  void SetWorkerEnrolment(WorkerEnrolment enrolment);
  std::optional<std::string> KeyOfNode(const std::string& node) const;

  // peers: replica id -> key of the committed configuration.
  void SetReplicas(const std::map<uint64_t, std::string>& replicas);
  void AddReplica(uint64_t id, const std::string& key);
  void RemoveReplica(uint64_t id);
  std::optional<std::string> KeyOfReplica(uint64_t id) const;
  // A replica's key rotated away (state::ReplicaKeyRecord): still admitted
  // as replica `id` until wall time until_ms, refused from then on with no
  // further call. Replaces the replica's previous retired key; the key is
  // remembered past its deadline so that frames of a connection it still
  // holds can be told apart (RetiredReplicaKeyExpired). Empty key: none.
  void RetireReplicaKey(uint64_t id, const std::string& key, int64_t until_ms);
  // True when `key` is a key rotated away from replica `id` whose grace has
  // ended (and is not the replica's key again): the peer transport drops
  // the frames of a connection authenticated with it.
  bool RetiredReplicaKeyExpired(uint64_t id, std::string_view key) const;

 private:
  mutable std::mutex mu_;
  WorkerEnrolment enrolment_;
  std::map<std::string, std::string> users_;   // key -> user
  std::map<std::string, int64_t> user_key_expiry_;  // key -> refused from (wall ms)
  // Derives the public keys of live tasks not derived yet (the lock not held
  // while it does); true when it derived any.
  bool DeriveTaskKeys() const;
  // Drops the derived keys in [from, to) of task_key_ whose tasks are no
  // longer live. Under mu_.
  void PruneTaskKeysLocked(std::map<TaskId, std::string>::iterator from,
                           std::map<TaskId, std::string>::iterator to) const;

  std::map<TaskId, std::string> task_secret_;        // live task -> its job's secret
  // Derived from task_secret_ (mutable: Authorize fills them in on demand).
  mutable std::map<TaskId, std::string> task_key_;   // live task -> its public key
  mutable std::map<std::string, TaskId> task_of_key_;  // public key -> live task
  std::string admin_key_;
  bool bootstrap_open_ = false;
  std::map<std::string, std::string> node_of_key_;  // key -> node
  std::map<std::string, std::string> key_of_node_;  // node -> key
  struct Retired {
    std::string node;
    int64_t until_ms = 0;
  };
  std::map<std::string, Retired> retired_;  // key -> node it was rotated away from
  const Clock* clock_;
  std::map<uint64_t, std::string> replicas_;        // id -> key
  struct RetiredReplica {
    std::string key;
    int64_t until_ms = 0;
  };
  std::map<uint64_t, RetiredReplica> retired_replicas_;  // id -> the key rotated away from it
};

}  // namespace gpool::control
