#include "control/raft/state.h"
#include "protocol/model/users.h"

#include <sstream>

namespace gpool::raft {

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kFollower: return "Follower";
    case Role::kPreCandidate: return "PreCandidate";
    case Role::kCandidate: return "Candidate";
    case Role::kLeader: return "Leader";
  }
  return "Unknown";
}

std::string NodeInfo::ToString() const {
  std::ostringstream os;
  os << "node " << id << " " << RoleName(role) << " term=" << term << " vote=" << vote << " lead=" << lead
     << " commit=" << commit << " applied=" << applied << " log=[" << first_index << "," << last_index
     << "] voters={";
  for (size_t i = 0; i < voters.size(); ++i) os << (i ? "," : "") << voters[i];
  os << "}";
  for (const auto& [peer, p] : progress) {
    os << " " << peer << ":" << ProgressStateName(p.state) << "(match=" << p.match << " next=" << p.next << ")";
  }
  return os.str();
}

}  // namespace gpool::raft
