// Every message of the gpool wire protocol, as plain structs.
//
// A message travels inside an Envelope (envelope.h) whose `type` names one of
// the structs. Each struct carries its kType so encoding cannot mislabel it.
// docs/protocol.md is the human-readable form of these files; keep them in step.
//
// The structs live in one header per family, and code includes the families
// it uses; this header, all of them at once, is for messages.cc alone (the
// table of every type's wire name). Records the replicated log also keeps
// are in model/ (plain, no wire), and the families include them:
//   message_type.h     MessageType and its names
//   messages_common.h  Ack, ErrorReply
//   messages_client.h  jobs and tasks (SubmitJob, ListJobs, GetJob, CancelJob, GetTaskLog)
//   messages_nodes.h   ListNodes and its node/device/NUMA summaries; UpdateNode
//   messages_admin.h   ClusterStatus, ChangeReplicas, queues, ExplainJob
//   messages_worker.h  the worker channel
//   messages_exec.h    exec into a running task (ExecStart, ExecPoll, ExecSignal and the worker's forms)
//   messages_users.h   users, roles, bootstrap and the audit stream
//   messages_usage.h   usage reports and the price table
//   messages_watch.h   the watch API (subscriptions and pushed updates)
//   messages_snapshot.h  snapshot export (backups)
//   messages_tokens.h  API tokens for the HTTP port
#pragma once

#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/messages_enrolment.h"
#include "protocol/messages_exec.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_snapshot.h"
#include "protocol/messages_tokens.h"
#include "protocol/messages_usage.h"
#include "protocol/messages_users.h"
#include "protocol/messages_watch.h"
#include "protocol/messages_worker.h"
