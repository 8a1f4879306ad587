// A message's fingerprint: the hash of its msgpack encoding. Two watchers of
// the same item (the coordinator's change feed, a client's Watcher) use it
// to tell a new state from one already recorded or returned.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

#include "protocol/wire.h"

namespace gpool {

template <typename T>
size_t Fingerprint(const T& message) {
  msgpack::sbuffer buffer;
  wire::Packer packer(buffer);
  packer.Value(message);
  return std::hash<std::string_view>{}(std::string_view(buffer.data(), buffer.size()));
}

}  // namespace gpool
