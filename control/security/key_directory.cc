#include "control/security/key_directory.h"

#include <vector>

#include "protocol/security/curve_socket.h"
#include "protocol/security/keys.h"
#include "protocol/security/task_exec_key.h"

namespace gpool::control {

std::string_view WorkerEnrolmentName(WorkerEnrolment enrolment) {
  switch (enrolment) {
    case WorkerEnrolment::kAdmin: return "admin";
    case WorkerEnrolment::kFirstUse: return "first-use";
    case WorkerEnrolment::kAdmission: return "admission";
  }
  return "admission";
}

Result<WorkerEnrolment> WorkerEnrolmentFromName(std::string_view name) {
  if (name == "admission") return WorkerEnrolment::kAdmission;
  if (name == "first-use") return WorkerEnrolment::kFirstUse;
  if (name == "admin") return WorkerEnrolment::kAdmin;
  return Status::InvalidArgument("--worker-enrolment must be admission, admin or first-use, not '" +
                                 std::string(name) + "'");
}

std::optional<std::string> KeyDirectory::Authorize(std::string_view domain, std::string_view key) const {
  const std::string k(key);
  // A client key nobody else claims may be a live task's whose key is not
  // derived yet: derive those first (at most once per task), then decide.
  if (domain == security::kClientsDomain) {
    bool known = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      known = users_.count(k) != 0 || k == admin_key_ || task_of_key_.count(k) != 0;
    }
    if (!known) DeriveTaskKeys();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (domain == security::kClientsDomain) {
    if (auto it = users_.find(k); it != users_.end()) {
      auto expiry = user_key_expiry_.find(k);
      if (expiry == user_key_expiry_.end() || clock_->WallMs() < expiry->second) return "user|" + it->second + "|" + k;
    }
    if (!admin_key_.empty() && k == admin_key_) return "user|admin|" + k;
    if (auto it = task_of_key_.find(k); it != task_of_key_.end()) {
      return "task|" + security::TaskExecName(it->second) + "|" + k;
    }
    if (bootstrap_open_) return "bootstrap||" + k;
    return std::nullopt;
  }
  if (domain == security::kWorkersDomain) {
    if (auto it = node_of_key_.find(k); it != node_of_key_.end()) return "node|" + it->second + "|" + k;
    // Past its deadline a retired key is a stranger: under admission it
    // reaches the registry, which refuses it the name it was rotated from.
    if (auto it = retired_.find(k); it != retired_.end() && clock_->WallMs() < it->second.until_ms) {
      return "node|" + it->second.node + "|" + k;
    }
    // Admitted to the handshake only: what the key may do is the node registry's call.
    if (enrolment_ != WorkerEnrolment::kAdmin) return "new-node||" + k;
    return std::nullopt;
  }
  if (domain == security::kPeersDomain) {
    for (const auto& [id, replica_key] : replicas_) {
      if (replica_key == k) return "replica|" + std::to_string(id) + "|" + k;
    }
    // A rotated replica may still run on its old key until the operator
    // restarts it on the new one: admitted as that replica until the deadline.
    const int64_t now = clock_->WallMs();
    for (const auto& [id, retired] : retired_replicas_) {
      if (retired.key == k && now < retired.until_ms) return "replica|" + std::to_string(id) + "|" + k;
    }
    return std::nullopt;
  }
  return std::nullopt;  // a domain this coordinator does not serve
}

void KeyDirectory::SetUsers(std::map<std::string, std::string> users) {
  std::lock_guard<std::mutex> lock(mu_);
  users_ = std::move(users);
}

void KeyDirectory::SetUserKeyExpiry(std::map<std::string, int64_t> expiry) {
  std::lock_guard<std::mutex> lock(mu_);
  user_key_expiry_ = std::move(expiry);
}

void KeyDirectory::SetLiveTasks(std::map<TaskId, std::string> job_secrets) {
  std::lock_guard<std::mutex> lock(mu_);
  task_secret_ = std::move(job_secrets);
  std::erase_if(task_secret_, [](const auto& entry) { return entry.second.empty(); });
  PruneTaskKeysLocked(task_key_.begin(), task_key_.end());
}

void KeyDirectory::SetJobLiveTasks(uint64_t job, std::map<TaskId, std::string> job_secrets) {
  std::lock_guard<std::mutex> lock(mu_);
  // TaskIds order by job first: the job's tasks are one range of each map,
  // so one job's change costs its own tasks, not every live task's.
  const TaskId first{JobId(job), 0, 0};
  const auto job_end = [&](auto& map) {
    return job == UINT64_MAX ? map.end() : map.lower_bound(TaskId{JobId(job + 1), 0, 0});
  };
  task_secret_.erase(task_secret_.lower_bound(first), job_end(task_secret_));
  for (auto& [task, secret] : job_secrets) {
    if (task.job == JobId(job) && !secret.empty()) task_secret_[task] = std::move(secret);
  }
  PruneTaskKeysLocked(task_key_.lower_bound(first), job_end(task_key_));
}

size_t KeyDirectory::task_keys() const {
  std::lock_guard<std::mutex> lock(mu_);
  return task_key_.size();
}

void KeyDirectory::PruneTaskKeysLocked(std::map<TaskId, std::string>::iterator from,
                                       std::map<TaskId, std::string>::iterator to) const {
  while (from != to) {
    if (task_secret_.count(from->first) != 0) {
      ++from;
      continue;
    }
    task_of_key_.erase(from->second);
    from = task_key_.erase(from);
  }
}

bool KeyDirectory::DeriveTaskKeys() const {
  std::vector<std::pair<TaskId, std::string>> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // task_key_ holds live tasks only (pruned as they end): as many keys as
    // live tasks means none is pending, and a stranger's handshake costs no scan.
    if (task_key_.size() == task_secret_.size()) return false;
    for (const auto& [task, secret] : task_secret_) {
      if (task_key_.count(task) == 0) pending.emplace_back(task, secret);
    }
  }
  if (pending.empty()) return false;
  std::vector<std::pair<TaskId, std::string>> derived;
  derived.reserve(pending.size());
  for (const auto& [task, job_secret] : pending) {
    auto secret = security::TaskExecSecret(job_secret, task);
    auto pair = secret.ok() ? security::KeyPairOfSecret(*secret) : secret.status();
    if (pair.ok()) derived.emplace_back(task, pair->public_key);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [task, key] : derived) {
    // The task may have ended (or its job been re-synced) meanwhile.
    auto live = task_secret_.find(task);
    if (live == task_secret_.end()) continue;
    task_of_key_[key] = task;
    task_key_[task] = std::move(key);
  }
  return !derived.empty();
}

void KeyDirectory::SetAdminKey(std::string key) {
  std::lock_guard<std::mutex> lock(mu_);
  admin_key_ = std::move(key);
}

void KeyDirectory::SetBootstrapOpen(bool open) {
  std::lock_guard<std::mutex> lock(mu_);
  bootstrap_open_ = open;
}

void KeyDirectory::SetNodeKeys(const std::map<std::string, std::string>& node_keys) {
  std::lock_guard<std::mutex> lock(mu_);
  key_of_node_.clear();
  node_of_key_.clear();
  for (const auto& [node, key] : node_keys) {
    if (key.empty()) continue;
    key_of_node_[node] = key;
    node_of_key_[key] = node;
  }
}

void KeyDirectory::EnrolNode(const std::string& node, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto old = key_of_node_.find(node); old != key_of_node_.end()) node_of_key_.erase(old->second);
  // One key names one node: a key re-enrolled under another name leaves the old one.
  if (auto other = node_of_key_.find(key); other != node_of_key_.end()) key_of_node_.erase(other->second);
  key_of_node_[node] = key;
  node_of_key_[key] = node;
}

void KeyDirectory::RetireNodeKey(const std::string& node, const std::string& key, int64_t until_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(retired_, [&](const auto& entry) { return entry.second.node == node; });
  if (key.empty() || until_ms <= clock_->WallMs()) return;
  retired_[key] = Retired{node, until_ms};
}

void KeyDirectory::SetRetiredNodeKeys(const std::map<std::string, std::pair<std::string, int64_t>>& retired) {
  std::lock_guard<std::mutex> lock(mu_);
  retired_.clear();
  for (const auto& [node, entry] : retired) {
    if (!entry.first.empty()) retired_[entry.first] = Retired{node, entry.second};
  }
}

void KeyDirectory::SetWorkerEnrolment(WorkerEnrolment enrolment) {
  std::lock_guard<std::mutex> lock(mu_);
  enrolment_ = enrolment;
}

std::optional<std::string> KeyDirectory::KeyOfReplica(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = replicas_.find(id);
  if (it == replicas_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> KeyDirectory::KeyOfNode(const std::string& node) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = key_of_node_.find(node);
  if (it == key_of_node_.end()) return std::nullopt;
  return it->second;
}

void KeyDirectory::SetReplicas(const std::map<uint64_t, std::string>& replicas) {
  std::lock_guard<std::mutex> lock(mu_);
  replicas_.clear();
  for (const auto& [id, key] : replicas) {
    if (!key.empty()) replicas_[id] = key;
  }
}

void KeyDirectory::AddReplica(uint64_t id, const std::string& key) {
  if (key.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  replicas_[id] = key;
}

void KeyDirectory::RemoveReplica(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  replicas_.erase(id);
  retired_replicas_.erase(id);
}

void KeyDirectory::RetireReplicaKey(uint64_t id, const std::string& key, int64_t until_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  if (key.empty()) {
    retired_replicas_.erase(id);
    return;
  }
  retired_replicas_[id] = RetiredReplica{key, until_ms};
}

bool KeyDirectory::RetiredReplicaKeyExpired(uint64_t id, std::string_view key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto retired = retired_replicas_.find(id);
  if (retired == retired_replicas_.end() || retired->second.key != key) return false;
  if (auto current = replicas_.find(id); current != replicas_.end() && current->second == key) return false;
  return clock_->WallMs() >= retired->second.until_ms;
}

}  // namespace gpool::control
