#include "protocol/base/ids.h"

namespace gpool {

std::string TaskId::ToString() const {
  std::string out = std::to_string(job.value()) + "." + std::to_string(index);
  if (attempt != 0) out += "#" + std::to_string(attempt);
  return out;
}

}  // namespace gpool
