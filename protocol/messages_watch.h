// The watch API (docs/protocol.md 7.19): a client subscribes to a topic (one
// job, the jobs of a filter, nodes, events) and the serving leader pushes
// each committed change as a WatchUpdate, ordered by position (the Raft log
// index that made the change; the event seq for events), resumable from the
// last position a client applied on whichever replica leads next.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/event.h"
#include "protocol/messages_client.h"
#include "protocol/messages_common.h"
#include "protocol/messages_nodes.h"

namespace gpool {

inline constexpr std::string_view kWatchTopics[] = {"job", "jobs", "nodes", "events"};

struct Watch {
  static constexpr MessageType kType = MessageType::kWatch;
  std::string topic;
  std::string key;     // job: the id; jobs: "", "user:NAME" or "queue:NAME"; nodes: "" or a node
  uint64_t after = 0;  // the last position applied; 0: start from a snapshot
  template <typename V>
  void Fields(V& v) {
    v.Required("topic", topic);
    v.Optional("key", key);
    v.Optional("after", after);
  }
};

// The items of a reply or a push; only the topic's own list is filled.
struct WatchItems {
  std::vector<JobSummary> jobs;
  std::vector<NodeSummary> nodes;
  std::vector<ClusterEvent> events;
  bool empty() const { return jobs.empty() && nodes.empty() && events.empty(); }
  template <typename V>
  void Fields(V& v) {
    v.Optional("jobs", jobs);
    v.Optional("nodes", nodes);
    v.Optional("events", events);
  }
};

struct WatchReply {
  static constexpr MessageType kType = MessageType::kWatchReply;
  uint64_t watch_id = 0;
  uint64_t position = 0;  // where the client stands once it applied this reply
  // true: the items are the current state (replace what you hold); false:
  // they are every change after the request's `after`, in order.
  bool reset = false;
  WatchItems items;
  template <typename V>
  void Fields(V& v) {
    v.Required("watch_id", watch_id);
    v.Required("position", position);
    v.Optional("reset", reset);
    items.Fields(v);
  }
};

// Pushed; envelope id 0.
struct WatchUpdate {
  static constexpr MessageType kType = MessageType::kWatchUpdate;
  uint64_t watch_id = 0;
  uint64_t seq = 0;  // 1, 2, ... per watch; a gap means pushes were lost
  uint64_t position = 0;
  WatchItems items;
  template <typename V>
  void Fields(V& v) {
    v.Required("watch_id", watch_id);
    v.Required("seq", seq);
    v.Required("position", position);
    items.Fields(v);
  }
};

struct WatchRenew {
  static constexpr MessageType kType = MessageType::kWatchRenew;
  std::vector<uint64_t> watch_ids;
  template <typename V>
  void Fields(V& v) {
    v.Required("watch_ids", watch_ids);
  }
};

struct WatchRenewReply {
  static constexpr MessageType kType = MessageType::kWatchRenewReply;
  std::vector<uint64_t> unknown;  // not held here: re-create them with Watch
  template <typename V>
  void Fields(V& v) {
    v.Optional("unknown", unknown);
  }
};

struct Unwatch {
  static constexpr MessageType kType = MessageType::kUnwatch;
  uint64_t watch_id = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("watch_id", watch_id);
  }
};

}  // namespace gpool
