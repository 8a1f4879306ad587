// ExecEndpoint: ExecStart, ExecPoll and ExecSignal (`gpool exec`). Each is
// resolved to a running task, authorised, and relayed to the task's node
// through the WorkerRelay; nothing is kept here between requests
// (messages_exec.h). The caller may exec into a job it has kExecJob on, or
// into the job of the live task whose exec token it carries (a task's MPI
// launcher), which authorises nothing else. Served after the read barrier (the Gateway).
//
// Issue 48: each caller may have at most --max-exec-streams-per-user
// commands open at once (ExecStreams, control/gateway/exec_streams.h);
// admins are not held to it.
#pragma once

#include <map>
#include <string>

#include "control/gateway/endpoint.h"
#include "control/gateway/exec_streams.h"
#include "control/task_lookup.h"
#include "protocol/message_type.h"
#include "protocol/messages_exec.h"

namespace gpool::control {

class ExecEndpoint final : public Endpoint {
 public:
  explicit ExecEndpoint(RequestContext& ctx) : ctx_(ctx), streams_(ctx.options().max_exec_streams_per_user) {}
  std::vector<MessageType> Serves() const override {
    return {MessageType::kExecStart, MessageType::kExecPoll, MessageType::kExecSignal};
  }
  void Handle(const Request& request, const Envelope& envelope, int64_t now_ms) override;
  // Frees the streams whose lease ran out; all of them off the leader.
  void Tick(int64_t now_ms) override;
  const ExecStreams& streams() const { return streams_; }

 private:
  void Serve(const Request& request, const Envelope& envelope, int64_t now_ms);
  void OnExecStart(const std::string& peer, uint64_t request_id, const ExecStart& msg, const std::string& token,
                   const Actor& actor, int64_t now_ms);
  void OnExecPoll(const std::string& peer, uint64_t request_id, const ExecPoll& msg, const std::string& token,
                  const Actor& actor, int64_t now_ms);
  void OnExecSignal(const std::string& peer, uint64_t request_id, const ExecSignal& msg, const std::string& token,
                    const Actor& actor, int64_t now_ms);
  // Whether `token` is the exec token of a task of `job` that is bound or
  // running (what a task carries without CurveZMQ, or as a user with no
  // exec permission of its own). The first request with a token costs an
  // HMAC per live task of the job; later ones look the task up by the
  // token's digest (an MPI job's ranks poll every 50 ms each).
  bool HeldByLiveTask(const state::JobRecord& job, const std::string& token) const;
  // The running task `name` names, if the caller may exec into it.
  Result<FoundTask> ExecTarget(const std::string& name, uint64_t job_scope, const std::string& token,
                               const Actor& actor) const;
  // Whom the stream limit holds for `actor` exec'ing into `job`: the user,
  // or "job N" for a job's own launcher; empty for admins (not held).
  std::string StreamOwner(const Actor& actor, uint64_t job) const;

  RequestContext& ctx_;
  // SHA-256 of a token -> the task it was found to be of. Keyed by digest so
  // the lookup's timing says nothing about how close a guess is; a task's
  // token never changes, so an entry only needs its task to be live still.
  // Cleared whole when it reaches kMaxTokenTasks.
  static constexpr size_t kMaxTokenTasks = 65536;
  mutable std::map<std::string, TaskId> task_of_token_;
  ExecStreams streams_;
};

}  // namespace gpool::control
