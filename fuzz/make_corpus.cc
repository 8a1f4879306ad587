// Writes the seed corpora that are encoded messages, so every message type
// starts with a valid example the fuzzer can mutate from:
//   corpus/envelope/<Type>      a whole envelope of each MessageType
//   corpus/message/<Type>       the message target's form: type byte + body
//   corpus/raft_message/<type>  one Raft message of each type
// Bodies are filled with the repository's own examples (a job spec from
// client/examples, a node spec from worker/examples) and one element in each
// list, so nested structs are reached too. The text seeds (YAML and JSON
// files) are plain copies of examples and live in the tree as they are.
//
//   fuzz_make_corpus CORPUS_DIR SOURCE_DIR   (the corpus-gen target runs it)
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "client/job_spec_file.h"
#include "client/yaml_fields.h"
#include "control/raft/entry.h"
#include "control/raft/messages.h"
#include "fuzz/all_messages.h"
#include "protocol/envelope.h"
#include "protocol/message_type.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_worker.h"
#include "protocol/model/node_update.h"
#include "protocol/model/probe.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/task_report.h"
#include "protocol/wire.h"
#include "topology/node_spec_file.h"

namespace gpool::fuzz {
namespace {

struct Examples {
  JobSpec job;
  NodeSpec node;
};

template <typename T>
T Sample(const Examples& ex) {
  T m{};
  if constexpr (std::is_same_v<T, ErrorReply>) {
    m = ErrorReply::FromStatus(Status::NotLeader("not the leader"), "tcp://10.0.0.2:7400");
  } else if constexpr (std::is_same_v<T, SubmitJob>) {
    m.spec = ex.job;
    m.idempotency_key = "k-1";
  } else if constexpr (std::is_same_v<T, ListJobsReply>) {
    m.jobs.emplace_back();
  } else if constexpr (std::is_same_v<T, GetJobReply>) {
    m.spec = ex.job;
    m.tasks.emplace_back();
    m.reasons = {"no node has 4 free GPUs"};
  } else if constexpr (std::is_same_v<T, ListNodesReply>) {
    m.nodes.emplace_back();
    m.nodes[0].devices.emplace_back();
    m.nodes[0].numa.emplace_back();
    m.nodes[0].health.emplace_back();
  } else if constexpr (std::is_same_v<T, ClusterStatusReply>) {
    m.replicas.emplace_back();
  } else if constexpr (std::is_same_v<T, RegisterNode>) {
    m.node = ex.node;
    m.tasks.push_back({.task = TaskId{JobId(7), 0, 1}, .state = TaskState::kRunning, .pid = 4242});
    m.health.push_back({.kind = "xid", .device = "gpu/0", .severity = "Degraded", .xid = 79});
  } else if constexpr (std::is_same_v<T, Heartbeat>) {
    m.node = "gpu-001";
    m.running = {TaskId{JobId(7), 0, 1}};
    m.usage.push_back({.task = TaskId{JobId(7), 0, 1}, .gpu_memory_used_mib = 1024});
    m.health_version = 2;
    m.health.push_back({.kind = "ib_port_down", .device = "ib/mlx5_0/1", .severity = "Fatal"});
  } else if constexpr (std::is_same_v<T, BindTask>) {
    m.task = TaskId{JobId(7), 1, 0};
    m.job_name = "train";
    m.command = {"python3", "train.py"};
    m.env = {{"EPOCHS", "3"}};
    m.gpu_indices = {0, 1};
    m.gpu_uuids = {"GPU-a", "GPU-b"};
  } else if constexpr (std::is_same_v<T, TaskEvent>) {
    m.node = "gpu-001";
    m.seq = 3;
    m.kind = TaskEventKind::kExited;
    m.exit_code = 1;
  } else if constexpr (std::is_same_v<T, FetchLogReply>) {
    m.data = std::string("line 1\n\x00\xff", 9);
    m.size = 9;
  } else if constexpr (std::is_same_v<T, ChangeReplicas>) {
    m.op = ReplicaOp::kAdd;
    m.replica_id = 4;
    m.peer_address = "tcp://10.0.0.4:7402";
  } else if constexpr (std::is_same_v<T, UpdateNode>) {
    m.node = "gpu-001";
    m.op = NodeUpdateOp::kLabel;
    m.labels = {{"rack", "r1"}};
    m.remove_labels = {"zone"};
  } else if constexpr (std::is_same_v<T, UpdateQueue>) {
    m.op = QueueOp::kCreate;
    m.spec.name = "team-a";
    m.spec.capability = {{"gpu", 16}};
    m.spec.deserved = {{"gpu", 8}};
  } else if constexpr (std::is_same_v<T, ListQueuesReply>) {
    m.queues.emplace_back();
  } else if constexpr (std::is_same_v<T, ExplainJobReply>) {
    m.reasons = {"queue over quota"};
    m.queue_path.emplace_back();
  } else if constexpr (std::is_same_v<T, ListEventsReply>) {
    m.events.emplace_back();
  } else if constexpr (std::is_same_v<T, ReportProbe>) {
    m.kind = ProbeKind::kNetwork;
    m.results.push_back({.node = "gpu-001", .bandwidth_kib_s = 1000, .slow = true});
  }
  return m;
}

bool Write(const std::filesystem::path& path, std::string_view bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

raft::ConfChangeEntry AddVoter(uint64_t node) {
  raft::ConfChangeEntry cc;
  cc.change.type = raft::ConfChangeType::kAddVoter;
  cc.change.node_id = node;
  cc.change.context = "tcp://10.0.0.4:7402";
  cc.result.voters = {1, 2, 3, node};
  return cc;
}

std::vector<raft::Message> RaftSamples() {
  using raft::MessageType;
  std::vector<raft::Message> out;
  raft::Message append{.type = MessageType::kAppend, .from = 1, .to = 2, .term = 7, .log_term = 6, .index = 41};
  append.entries = {{42, 7, raft::EncodeNormal("put job 17")}, {43, 7, ""}, {44, 7, raft::EncodeConfChange(AddVoter(4))}};
  append.commit = 40;
  out.push_back(append);
  out.push_back({.type = MessageType::kAppendResponse, .from = 2, .to = 1, .term = 7, .log_term = 5, .index = 41,
                 .reject = true, .reject_hint = 30});
  out.push_back({.type = MessageType::kVote, .from = 3, .to = 1, .term = 8, .log_term = 7, .index = 44,
                 .context = "transfer"});
  out.push_back({.type = MessageType::kVoteResponse, .from = 1, .to = 3, .term = 8});
  out.push_back({.type = MessageType::kPreVote, .from = 3, .to = 2, .term = 9, .log_term = 7, .index = 44});
  out.push_back({.type = MessageType::kPreVoteResponse, .from = 2, .to = 3, .term = 8, .reject = true});
  raft::Message snap{.type = MessageType::kSnapshot, .from = 1, .to = 4, .term = 7};
  snap.snapshot.index = 40;
  snap.snapshot.term = 6;
  snap.snapshot.conf.voters = {1, 2, 3};
  snap.snapshot.data = std::string("\x00\x01state", 7);
  out.push_back(snap);
  out.push_back({.type = MessageType::kHeartbeat, .from = 1, .to = 2, .term = 7, .commit = 39, .context = "r1"});
  out.push_back({.type = MessageType::kHeartbeatResponse, .from = 2, .to = 1, .term = 7, .context = "r1"});
  out.push_back({.type = MessageType::kTimeoutNow, .from = 1, .to = 2, .term = 7});
  out.push_back({.type = MessageType::kReadIndex, .from = 2, .to = 1, .context = "ctx"});
  out.push_back({.type = MessageType::kReadIndexResponse, .from = 1, .to = 2, .index = 44, .context = "ctx"});
  return out;
}

int Run(const std::filesystem::path& corpus, const std::filesystem::path& source) {
  auto job_text = yaml_fields::ReadUserFile((source / "client/examples/train.yaml").string(), "job spec file");
  if (!job_text.ok()) {
    std::fprintf(stderr, "%s\n", job_text.status().ToString().c_str());
    return 1;
  }
  auto job = ParseJobSpec(*job_text);
  auto node = topology::LoadNodeSpecFile((source / "worker/examples/node-8gpu.yaml").string());
  if (!job.ok() || !node.ok()) {
    std::fprintf(stderr, "cannot read the examples: %s %s\n", job.status().ToString().c_str(),
                 node.status().ToString().c_str());
    return 1;
  }
  Examples ex{*job, *node};

  bool ok = true;
  for (size_t i = 0; i < kMessageTypeCount; ++i) {
    auto type = static_cast<MessageType>(i);
    VisitMessageType(type, [&]<typename T>() {
      T body = Sample<T>(ex);
      std::string name(MessageTypeName(type));
      Header header{.request_id = 100 + i, .sender = "cli-4f2a", .epoch = 3};
      ok &= Write(corpus / "envelope" / name, EncodeEnvelope(header, body));
      ok &= Write(corpus / "message" / name, std::string(1, static_cast<char>(i)) + wire::PackToString(body));
    });
  }
  for (const raft::Message& m : RaftSamples()) {
    ok &= Write(corpus / "raft_message" / std::string(raft::MessageTypeName(m.type)), raft::EncodeMessage(m));
  }
  if (!ok) std::fprintf(stderr, "could not write every seed under %s\n", corpus.c_str());
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace gpool::fuzz

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fuzz_make_corpus CORPUS_DIR SOURCE_DIR\n");
    return 2;
  }
  return gpool::fuzz::Run(argv[1], argv[2]);
}
