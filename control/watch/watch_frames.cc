#include "control/watch/watch_frames.h"

#include "control/frames.h"
#include "protocol/envelope.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_watch.h"
#include "protocol/wire.h"

namespace gpool::control {

namespace {

// wire::Packer writes straight into its buffer, so raw bytes written to the
// same buffer between its calls land exactly where a packed value would.
void WatchFramesSplice(msgpack::sbuffer& buffer, std::string_view bytes) { buffer.write(bytes.data(), bytes.size()); }

std::string WatchFramesBytes(const msgpack::sbuffer& buffer) { return std::string(buffer.data(), buffer.size()); }

}  // namespace

template <typename T>
std::string EncodeWatchItem(const T& item) {
  msgpack::sbuffer buffer(512);
  wire::Packer packer(buffer);
  packer.Value(item);
  return WatchFramesBytes(buffer);
}

template std::string EncodeWatchItem<JobSummary>(const JobSummary&);
template std::string EncodeWatchItem<NodeSummary>(const NodeSummary&);
template std::string EncodeWatchItem<ClusterEvent>(const ClusterEvent&);

std::string EncodeWatchItemsBlock(const std::vector<std::string_view>& jobs,
                                  const std::vector<std::string_view>& nodes,
                                  const std::vector<ClusterEvent>& events) {
  size_t bytes = 64;
  for (std::string_view item : jobs) bytes += item.size();
  for (std::string_view item : nodes) bytes += item.size();
  msgpack::sbuffer buffer(bytes);
  wire::Packer packer(buffer);
  // WatchItems::Fields' order: jobs, nodes, events.
  packer.Key("jobs");
  packer.BeginArray(static_cast<uint32_t>(jobs.size()));
  for (std::string_view item : jobs) WatchFramesSplice(buffer, item);
  packer.Key("nodes");
  packer.BeginArray(static_cast<uint32_t>(nodes.size()));
  for (std::string_view item : nodes) WatchFramesSplice(buffer, item);
  packer.Field("events", events);
  return WatchFramesBytes(buffer);
}

WatchUpdateEncoder::WatchUpdateEncoder(uint64_t epoch) {
  // EncodeEnvelope's fields, in its order, with MakeFrame's header.
  Header header;
  header.type = WatchUpdate::kType;
  header.sender = kCoordinatorSender;
  header.epoch = epoch;
  msgpack::sbuffer buffer(128);
  wire::Packer p(buffer);
  p.BeginMap(7);
  p.Field("v", header.version);
  p.Field("type", MessageTypeName(header.type));
  p.Field("id", header.request_id);
  p.Field("from", header.sender);
  p.Field("epoch", header.epoch);
  p.Field("token", header.token);
  p.Key("body");
  prefix_ = WatchFramesBytes(buffer);
}

std::string WatchUpdateEncoder::Frame(uint64_t watch_id, uint64_t seq, uint64_t position,
                                      std::string_view items_block) const {
  msgpack::sbuffer numbers(64);
  wire::Packer p(numbers);
  wire::FieldCounter fields;
  WatchUpdate{}.Fields(fields);
  p.BeginMap(fields.count);
  p.Field("watch_id", watch_id);
  p.Field("seq", seq);
  p.Field("position", position);
  std::string frame;
  frame.reserve(prefix_.size() + numbers.size() + items_block.size());
  frame.append(prefix_);
  frame.append(numbers.data(), numbers.size());
  frame.append(items_block);
  return frame;
}

}  // namespace gpool::control
