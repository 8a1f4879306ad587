// LinkHost: everything the Link (link.h) asks of the rest of the agent, and
// all it may do to it. The Link speaks the coordinator's protocol (register,
// heartbeats, events, fencing, reconnects); what a heartbeat says about the
// node, what a bind starts and what exec runs are the host's. The agent's
// host is NodeHost (node_host.h); tests give the Link a host of their own.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/envelope.h"
#include "protocol/health.h"
#include "protocol/messages_exec.h"
#include "protocol/messages_worker.h"
#include "protocol/model/task_report.h"

namespace gpool::worker {

class LinkHost {
 public:
  virtual ~LinkHost() = default;

  // The node as discovered, for RegisterNode; its name signs every frame.
  virtual const NodeSpec& node() const = 0;
  // Every task this node holds, for RegisterNode.
  virtual std::vector<TaskReport> TaskReports() const = 0;
  // A heartbeat's account of the node: `running`, `usage` and `gpus`. The
  // host may act on what it measured (a share over its memory is stopped).
  virtual void FillStatus(Heartbeat& heartbeat) = 0;

  // The node's health (health_monitor.h): the list, a version that moves on
  // every change the coordinator must hear about, and the rounds run. A host
  // without health reports version 0.
  virtual uint64_t health_version() const { return 0; }
  virtual std::vector<HealthCondition> health() const { return {}; }
  virtual uint64_t health_rounds() const { return 0; }

  // The operator's node labels (NodeLabels): LabelsDigest of those the host
  // holds, for heartbeats (0: a host that does not take them, and is never
  // sent any), and SetLabels to replace them.
  virtual uint64_t labels_digest() const { return 0; }
  virtual Status SetLabels(std::map<std::string, std::string> labels) {
    (void)labels;
    return Status::FailedPrecondition("this worker does not take node labels");
  }

  // Task events not yet acknowledged, by sequence number; AckEvent forgets one.
  virtual const std::map<uint64_t, TaskEvent>& events() const = 0;
  virtual void AckEvent(uint64_t seq) = 0;

  // The coordinator's commands, fenced by the Link.
  virtual Status Bind(const BindTask& bind) = 0;
  virtual void Preempt(const PreemptTask& preempt) = 0;
  // Reads, served whatever their epoch.
  virtual Result<FetchLogReply> TailLog(const TaskId& task, uint64_t max_bytes) const = 0;
  virtual Result<ExecStartReply> ExecStart(const TaskExecStart& request) = 0;
  virtual Result<ExecPollReply> ExecPoll(const TaskExecPoll& request) = 0;
  virtual Status ExecSignal(const TaskExecSignal& request) = 0;

  // The node lease (docs/architecture.md, "Node loss"): the coordinator
  // acknowledged a message sent at `sent_ms` (the Link's clock) and grants
  // `lease_ms` from then.
  virtual void RenewLease(int64_t sent_ms, int64_t lease_ms) {
    (void)sent_ms;
    (void)lease_ms;
  }
};

}  // namespace gpool::worker
