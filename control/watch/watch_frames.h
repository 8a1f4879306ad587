// WatchUpdate frames assembled from items encoded once (issue 49).
//
// A change's summary is encoded once, the first time a push carries it
// (FeedChange::encoded); every watch it matches gets those same bytes. A
// push differs between watches only in watch_id and seq, so a frame is the
// envelope's prefix (the same for every push of an epoch), the three
// numbers, and an items block shared by every watch that gets the same
// items. msgpack lets pre-encoded values be spliced into an array, so the
// frame is byte for byte what MakeFrame(0, epoch, WatchUpdate{...}) encodes:
// clients see no difference (watch_frames_test.cc checks the bytes).
//
// Thread-safety: none; values are used on the coordinator's loop thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/event.h"

namespace gpool::control {

// The msgpack encoding of one item (a JobSummary, a NodeSummary or an
// event), as a watch reply or push carries it.
template <typename T>
std::string EncodeWatchItem(const T& item);

// The items part of a WatchUpdate body: the "jobs", "nodes" and "events"
// fields, each an array of pre-encoded items, in WatchItems' field order.
std::string EncodeWatchItemsBlock(const std::vector<std::string_view>& jobs,
                                  const std::vector<std::string_view>& nodes,
                                  const std::vector<ClusterEvent>& events = {});

class WatchUpdateEncoder {
 public:
  explicit WatchUpdateEncoder(uint64_t epoch);
  // A whole frame (envelope id 0, the coordinator as sender).
  std::string Frame(uint64_t watch_id, uint64_t seq, uint64_t position, std::string_view items_block) const;

 private:
  std::string prefix_;  // the envelope up to and including the "body" key
};

}  // namespace gpool::control
