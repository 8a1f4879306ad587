// PeekRequestId: the request id of a frame EncodeEnvelope wrote, read from
// its header without decoding the body, so a component that only sees
// encoded replies (the coordinator's count of requests not yet answered,
// issue 48) can tell which request each answers at the cost of a few bytes.
//
// Reads the msgpack map's entries up to "id"; nothing (no id) for a frame
// of any other shape: the caller treats it as answering nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpool {

std::optional<uint64_t> PeekRequestId(std::string_view frame);

}  // namespace gpool
