#include "worker/label_overlay.h"

#include <utility>

#include "protocol/labels_digest.h"

namespace gpool::worker {

LabelOverlay::LabelOverlay(std::map<std::string, std::string> spec_labels)
    : spec_(spec_labels.begin(), spec_labels.end()), digest_(LabelsDigest({})) {}

Status LabelOverlay::SetOperatorLabels(std::map<std::string, std::string> labels) {
  if (labels.size() > kMaxOperatorLabels) {
    return Status::InvalidArgument("node labels: " + std::to_string(labels.size()) + " labels, at most " +
                                   std::to_string(kMaxOperatorLabels) + " are taken");
  }
  if (labels.count("") > 0) return Status::InvalidArgument("node labels: a label with an empty key");
  digest_ = LabelsDigest(labels);
  operator_ = std::move(labels);
  return Status::Ok();
}

std::optional<std::string_view> LabelOverlay::Get(std::string_view key) const {
  // operator_ is keyed by std::string without a transparent comparator (it
  // travels as it came); the spec's lookup needs no copy.
  if (auto it = operator_.find(std::string(key)); it != operator_.end()) return std::string_view(it->second);
  if (auto it = spec_.find(key); it != spec_.end()) return std::string_view(it->second);
  return std::nullopt;
}

}  // namespace gpool::worker
