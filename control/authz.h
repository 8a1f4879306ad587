// Who may do what: the permission rules of users and roles (issue 31), as a
// pure function of the caller, the permission a request needs, its target
// and the committed state. The gateway asks before a request touches state;
// a refusal names the missing permission.
//
// Roles (protocol/messages_users.h): admin everything; queue-admin over a
// queue's subtree (queues strictly below it, and every job in it); member of
// a queue (submit there, see its jobs without env and logs); viewer
// (read-only, no env, no logs). Everyone sees, cancels and execs into their
// own jobs. A job's own tasks (by its exec key) may read it and exec into
// it, nothing else. A queue-admin cannot change the queue it was granted (its quota
// is its parent's admin's to set), only what is below it.
#pragma once

#include <string>
#include <string_view>

#include "control/state/cluster_state.h"
#include "protocol/message_type.h"
#include "protocol/model/users.h"

namespace gpool::control {

enum class Permission : uint8_t {
  kReadCluster,     // status, nodes, queues, events
  kReadJob,         // a job's summary, detail and explanation (env hidden without kReadJobSecrets)
  kReadJobSecrets,  // a job's env and its tasks' logs
  kSubmit,          // submit to a queue
  kCancelJob,
  kExecJob,         // run a command in a job's task (gpool exec)
  kManageQueue,     // update or delete a queue (target: the queue)
  kPlaceQueue,      // put a queue under a parent, creating or moving it (target: the parent)
  kManageNodes,     // cordon, drain, label, taint, pool
  kReportProbe,
  kManageReplicas,
  kManageUsers,
  kReadUsers,
  kReadAudit,
  kBootstrap,       // create the first admin
  kReadUsage,       // usage of a (user, queue): target.owner is the user (issue 34)
  kManagePrices,    // set the committed price table
  kExportSnapshot,  // copy the whole state out (it holds every job's env and every key binding)
  kManageTokens,    // make, list or revoke API tokens of target.owner (own: any user; anyone's: admins)
};
std::string_view PermissionName(Permission permission);

// Whether a request of `type` changes something (or copies everything
// out): what the audit stream records and a read-scope token may not send.
bool MutatingRequest(MessageType type);

// The caller as the gateway resolved it.
struct Actor {
  // kJob: a task of job `job`, by its own exec key (Principal kTask) while
  // it is bound or running: whatever one task may do, any task of the job may.
  enum class Kind { kUser, kInsecureAdmin, kBootstrap, kJob, kAnonymous } kind = Kind::kAnonymous;
  std::string name;                  // the user (kUser); "task-<job>.<index>", "insecure", "bootstrap" otherwise
  uint64_t job = 0;                  // kJob: the job it speaks for
  const UserSpec* user = nullptr;    // kUser: its committed record
  std::string key;                   // the public key it connected with (secure mode)
  std::string token_id;              // set when an HTTP API token authenticated it (its owner is `user`)
};

// What the request acts on: a job (its owner and queue) or a queue.
struct Target {
  std::string owner;  // the job's user
  std::string queue;  // the job's queue, the queue submitted to, or the queue managed
  uint64_t job = 0;   // the job acted on; 0 when the target is not a job
};

struct Decision {
  bool allowed = false;
  std::string missing;  // refused: "<permission> on <target>" for the error and the audit
};

Decision Authorize(const Actor& actor, Permission permission, const Target& target, const state::ClusterState& state);

}  // namespace gpool::control
