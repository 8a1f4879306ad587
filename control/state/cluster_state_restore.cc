// ClusterState::Restore: the state image (snapshot_image.h) read back one
// record at a time (issue 49).
//
// Decoding the image as one msgpack value held, at once, the image's bytes,
// the msgpack object tree of all of it (a zone several times the image), a
// vector of every record and the maps they were moved into (a restart with
// 200,000 retained jobs peaked at 3.1x the state's steady RSS, 1.55x now:
// bench/restart_rss_bench.cc, docs/operations.md 6.5). Now a
// wire::ValueStream walks the image's outer map, and the large lists (nodes,
// jobs, events, audit, forgotten jobs) are decoded element by element
// straight into the containers the state keeps, each element's zone freed
// before the next is read. What is left of the image (the scalars and the
// small lists) is read as before, by SnapshotImage's own Fields, from the
// values gathered into one map: the same reader, the same errors
// ("value.nodes: required field is missing"), the same defaults for an
// image from before a field existed. The usage ledger is among that rest,
// decoded whole: its raw records are bounded (--usage-keep-records).
//
// Nothing of the state changes until the whole image decoded: a truncated or
// damaged image is a typed error and leaves the state as it was.
#include <deque>
#include <map>
#include <string>

#include "control/state/cluster_state.h"
#include "control/state/snapshot_image.h"
#include "protocol/wire_stream.h"

namespace gpool::state {

using internal::SnapshotImage;

// A named namespace: the unity build puts this file beside the other
// cluster_state*.cc files.
namespace restore_detail {

// Reads the array at the stream's position element by element, handing each
// decoded T to `keep`. Errors name the element ("value.jobs[3].id: ..."):
// the path with its index is built only when an element fails.
template <typename T, typename Keep>
Status StreamArray(wire::ValueStream& in, const std::string& path, Keep&& keep) {
  GPOOL_ASSIGN_OR_RETURN(uint32_t count, in.BeginArray(path));
  for (uint32_t i = 0; i < count; ++i) {
    GPOOL_ASSIGN_OR_RETURN(msgpack::object_handle handle, in.Next(path));
    auto item = wire::ObjectReader::ReadObject<T>(handle.get(), path);
    if (!item.ok()) {
      // Again, under the element's own path, for the message.
      const std::string at = path + "[" + std::to_string(i) + "]";
      return wire::ObjectReader::ReadObject<T>(handle.get(), at).status();
    }
    keep(std::move(item).value());
  }
  return Status::Ok();
}

// The large lists, decoded into what the state keeps.
struct StreamedParts {
  std::map<std::string, NodeRecord> nodes;
  std::map<uint64_t, JobRecord> jobs;
  std::deque<ClusterEvent> events;
  std::deque<AuditEntry> audit;
  std::deque<ForgottenJob> forgotten;
};

}  // namespace restore_detail

Status ClusterState::Restore(std::string_view snapshot) {
  namespace d = restore_detail;
  wire::DecodeLimits limits;
  limits.max_frame_bytes = size_t{4} << 30;
  limits.max_container_elements = size_t{1} << 26;
  limits.max_string_bytes = size_t{1} << 30;
  if (snapshot.size() > limits.max_frame_bytes) {
    return Status::ResourceExhausted("frame of " + std::to_string(snapshot.size()) + " bytes exceeds the limit of " +
                                     std::to_string(limits.max_frame_bytes) + " bytes")
        .WithContext("restoring snapshot");
  }
  wire::ValueStream in(snapshot, limits);
  d::StreamedParts parts;
  // The other values, each unpacked in its own zone, gathered into one map
  // for SnapshotImage's reader. Keys are copied: the stream's bytes may be
  // dropped from memory as it goes.
  std::vector<msgpack::object_handle> values;
  std::deque<std::string> keys;
  std::vector<msgpack::object_kv> small;
  msgpack::object empty_array;
  empty_array.type = msgpack::type::ARRAY;
  empty_array.via.array.size = 0;
  empty_array.via.array.ptr = nullptr;
  auto gather = [&](std::string_view key, const msgpack::object& value) {
    const std::string& owned = keys.emplace_back(key);
    msgpack::object_kv kv;
    kv.key.type = msgpack::type::STR;
    kv.key.via.str.size = static_cast<uint32_t>(owned.size());
    kv.key.via.str.ptr = owned.data();
    kv.val = value;
    small.push_back(kv);
  };
  std::map<std::string, bool, std::less<>> streamed_seen = {
      {"nodes", false}, {"jobs", false}, {"events", false}, {"audit", false}, {"forgotten", false}};

  auto decode = [&]() -> Status {
    GPOOL_ASSIGN_OR_RETURN(uint32_t fields, in.BeginMap("value"));
    for (uint32_t f = 0; f < fields; ++f) {
      GPOOL_ASSIGN_OR_RETURN(std::string_view key, in.Key("value"));
      const std::string path = "value." + std::string(key);
      auto streamed = streamed_seen.find(key);
      if (streamed == streamed_seen.end()) {
        GPOOL_ASSIGN_OR_RETURN(msgpack::object_handle value, in.Next(path));
        gather(key, value.get());
        values.push_back(std::move(value));
        continue;
      }
      // A key given twice: the first counts, as for the other keys
      // (ObjectReader reads the first of a name).
      const bool required = key == "nodes" || key == "jobs";
      if (streamed->second || (!required && in.NextIsNil())) {
        GPOOL_RETURN_IF_ERROR(in.Skip(path));
        continue;
      }
      streamed->second = true;
      // Present for the reader's required-field check; the records are here.
      gather(key, empty_array);
      if (key == "nodes") {
        GPOOL_RETURN_IF_ERROR(d::StreamArray<NodeRecord>(in, path, [&](NodeRecord node) {
          std::string name = node.spec.name;
          parts.nodes.insert_or_assign(std::move(name), std::move(node));
        }));
      } else if (key == "jobs") {
        GPOOL_RETURN_IF_ERROR(d::StreamArray<JobRecord>(in, path, [&](JobRecord job) {
          const uint64_t id = job.id.value();
          // Snapshot() writes jobs by id: each goes at the end, no search.
          if (parts.jobs.empty() || parts.jobs.rbegin()->first < id) {
            parts.jobs.emplace_hint(parts.jobs.end(), id, std::move(job));
          } else {
            parts.jobs.insert_or_assign(id, std::move(job));
          }
        }));
      } else if (key == "events") {
        GPOOL_RETURN_IF_ERROR(d::StreamArray<ClusterEvent>(
            in, path, [&](ClusterEvent event) { parts.events.push_back(std::move(event)); }));
      } else if (key == "audit") {
        GPOOL_RETURN_IF_ERROR(d::StreamArray<AuditEntry>(
            in, path, [&](AuditEntry entry) { parts.audit.push_back(std::move(entry)); }));
      } else {
        GPOOL_RETURN_IF_ERROR(d::StreamArray<ForgottenJob>(
            in, path, [&](ForgottenJob job) { parts.forgotten.push_back(std::move(job)); }));
      }
    }
    if (!in.done()) {
      return Status::Malformed(std::to_string(snapshot.size() - in.offset()) + " trailing bytes after the message");
    }
    return Status::Ok();
  };
  if (Status decoded = decode(); !decoded.ok()) return decoded.WithContext("restoring snapshot");

  msgpack::object rest;
  rest.type = msgpack::type::MAP;
  rest.via.map.size = static_cast<uint32_t>(small.size());
  rest.via.map.ptr = small.data();
  auto image = wire::ObjectReader::ReadObject<SnapshotImage>(rest, "value");
  if (!image.ok()) return image.status().WithContext("restoring snapshot");
  values.clear();
  // The last step that can fail, and it changes nothing when it does.
  if (Status ledger = usage_ledger_.FromImage(std::move(image->usage_ledger)); !ledger.ok()) {
    return ledger.WithContext("restoring snapshot");
  }
  applied_index_ = image->applied_index;
  next_job_id_ = image->next_job_id;
  generation_ = NextGeneration();  // every cached view is stale
  nodes_ = std::move(parts.nodes);
  nodes_needing_health_.clear();
  for (const auto& [name, node] : nodes_) NoteHealthLook(name, node);
  jobs_ = std::move(parts.jobs);
  finish_floor_ms_ = INT64_MIN;  // unknown: the next retention check walks the jobs once
  queues_.clear();
  for (auto& queue : image->queues) queues_[queue.spec.name] = std::move(queue);
  events_ = std::move(parts.events);
  next_event_seq_ = std::max<uint64_t>(image->next_event_seq, events_.empty() ? 1 : events_.back().seq + 1);
  sink_cursors_ = std::move(image->sink_cursors);
  breaker_open_ = image->breaker_open;
  breaker_opened_ms_ = image->breaker_opened_ms;
  forgotten_ = std::move(parts.forgotten);
  forgotten_count_ = image->forgotten_count;
  usage_.clear();
  for (auto& total : image->usage) usage_[{total.queue, total.user}] = std::move(total);
  users_.clear();
  for (auto& user : image->users) users_[user.name] = std::move(user);
  alerts_.clear();
  for (auto& alert : image->alerts) alerts_[alert.key] = std::move(alert);
  audit_ = std::move(parts.audit);
  enrolled_nodes_ = std::move(image->enrolled_nodes);
  pending_enrolments_.clear();
  for (auto& pending : image->pending_enrolments) pending_enrolments_[pending.key] = std::move(pending);
  join_tokens_.clear();
  for (auto& token : image->join_tokens) join_tokens_[token.id] = std::move(token);
  api_tokens_.Restore(std::move(image->api_tokens));
  replica_keys_.clear();
  for (auto& record : image->replica_keys) replica_keys_[record.replica_id] = std::move(record);
  billing_.FromImage(std::move(image->billing));
  next_audit_seq_ = std::max<uint64_t>(image->next_audit_seq, audit_.empty() ? 1 : audit_.back().seq + 1);
  EnsureBuiltinQueues();
  RebuildIndexes();
  return Status::Ok();
}

}  // namespace gpool::state
