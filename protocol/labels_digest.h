// LabelsDigest: a short fingerprint of a node's labels, so a worker's
// heartbeat can say which operator labels it holds (Heartbeat.labels_digest)
// in eight bytes and the leader sends the labels themselves (NodeLabels) only
// when they differ. FNV-1a over each key and value with its length, in the
// map's order: the same labels give the same digest on every replica and
// every build. Never 0, which on the wire means "a worker that does not take
// the operator's labels".
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace gpool {

uint64_t LabelsDigest(const std::map<std::string, std::string>& labels);

}  // namespace gpool
