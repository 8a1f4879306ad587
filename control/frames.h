// Small helpers for building coordinator frames with a consistent header.
#pragma once

#include <string>

#include "protocol/envelope.h"
#include "protocol/messages_common.h"

namespace gpool::control {

inline constexpr const char* kCoordinatorSender = "coordinator";

template <typename T>
std::string MakeFrame(uint64_t request_id, uint64_t epoch, const T& body) {
  Header header;
  header.request_id = request_id;
  header.sender = kCoordinatorSender;
  header.epoch = epoch;
  return EncodeEnvelope(header, body);
}

inline std::string MakeError(uint64_t request_id, uint64_t epoch, const Status& status) {
  return MakeFrame(request_id, epoch, ErrorReply::FromStatus(status));
}

// An error that, when it is NotLeader, tells the client where the leader is.
inline std::string MakeError(uint64_t request_id, uint64_t epoch, const Status& status, std::string leader) {
  if (status.code() != StatusCode::kNotLeader) leader.clear();
  return MakeFrame(request_id, epoch, ErrorReply::FromStatus(status, std::move(leader)));
}

inline Status NotLeaderStatus(const std::string& leader) {
  return Status::NotLeader(leader.empty() ? "this coordinator replica is not the leader and knows no leader yet "
                                            "(an election is under way); retry"
                                          : "this coordinator replica is not the leader; the leader is at " + leader);
}

}  // namespace gpool::control
