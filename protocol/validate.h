// Semantic validation of specs, shared by the CLI (early, friendly errors) and
// the coordinator (authoritative). Decoding checks types; this checks meaning.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/base/status.h"
#include "protocol/model/node_update.h"
#include "protocol/model/queue_update.h"
#include "protocol/types.h"

namespace gpool {

struct SpecLimits {
  uint32_t max_tasks_per_job = 10'000;
  uint32_t max_gpus_per_task = 64;
  uint32_t max_command_args = 4096;
  uint32_t max_env_vars = 1024;
  uint32_t max_name_length = 128;
  uint64_t max_cpu_milli_per_task = 1'024'000;   // 1024 cores
  uint64_t max_memory_mib_per_task = 64ull << 20;  // 64 TiB
  uint32_t max_grace_period_ms = 3'600'000;         // a job's own SIGTERM-to-SIGKILL time
};

// The coordinator's default for the largest job spec it admits, counted as
// the spec's msgpack encoding (--max-spec-bytes). Every spec stays in the
// coordinator's memory, in every snapshot and in the log until it is
// compacted, for as long as its job is kept (retention): a few MB a spec
// times a hundred thousand kept jobs would not fit. A spec's strings
// (command arguments, env values) are bounded by this total rather than one
// by one.
inline constexpr uint64_t kDefaultMaxSpecBytes = uint64_t{1} << 20;

// ResourceExhausted "N bytes encoded, over the limit of M bytes ..." when
// the encoded `spec` is larger than `max_bytes`.
Status CheckJobSpecSize(const JobSpec& spec, uint64_t max_bytes);

// Names (nodes, jobs, queues, label values) use [A-Za-z0-9._-].
bool IsNameChar(char c);
inline constexpr size_t kMaxNodeNameLength = 253;  // a DNS name
inline constexpr size_t kMaxLabelValueLength = 63;

// Errors name the field: "tasks[1].replicas: must be at least 1".
Status ValidateJobSpec(const JobSpec& spec, const SpecLimits& limits = {});
Status ValidateNodeSpec(const NodeSpec& spec);
// An IPv4 or IPv6 address in text form (inet_pton), not a name.
bool IsIpAddress(const std::string& text);
// An operator's node change: a known op, a pool of public/pooled/exclusive,
// label keys of 1-63 characters from [A-Za-z0-9._/-], values of at most 63
// from [A-Za-z0-9._-], no key both set and removed.
Status ValidateUpdateNode(const UpdateNode& update);
// "gpu", "cpu", "memory", "gpu_memory" or "gpu/<model>".
bool IsQuotaResource(std::string_view name);
// The rules a queue obeys on its own: names, known resources, and
// guarantee <= deserved <= capability. Rules that need the other queues
// (parent exists, children within the parent) are the coordinator's.
Status ValidateQueueSpec(const QueueSpec& spec);
Status ValidateUpdateQueue(const UpdateQueue& update);

}  // namespace gpool
