#include "worker/runner/job_hosts.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <set>

#include "protocol/messages_worker.h"
#include "protocol/validate.h"

namespace gpool::worker {
namespace {

bool IsHostname(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  size_t label = 0;
  for (char c : name) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok || ++label > 63) return false;
  }
  return label != 0;
}

}  // namespace

Status ValidateTaskHosts(const std::vector<TaskHost>& task_hosts) {
  std::set<std::string> seen;
  for (size_t i = 0; i < task_hosts.size(); ++i) {
    const TaskHost& t = task_hosts[i];
    const std::string where = "task_hosts[" + std::to_string(i) + "]";
    if (!IsHostname(t.name)) {
      return Status::InvalidArgument(where + ".name: '" + t.name.substr(0, 64) +
                                     "' is not a hostname (letters, digits, '-', '.'; labels up to 63 bytes)");
    }
    if (!seen.insert(t.name).second) return Status::InvalidArgument(where + ".name: " + t.name + " appears twice");
    if (t.host.empty() || t.host.size() > 253 ||
        t.host.find_first_of(std::string(" \t\r\n#\0", 6)) != std::string::npos) {
      return Status::InvalidArgument(where + ".host: empty, longer than 253 bytes or holds whitespace");
    }
    if (t.slots == 0) return Status::InvalidArgument(where + ".slots: must be at least 1");
    if (!t.address.empty() && !IsIpAddress(t.address)) {
      return Status::InvalidArgument(where + ".address: '" + t.address.substr(0, 64) + "' is not an IP address");
    }
  }
  return Status::Ok();
}

std::string ResolveHost(const std::string& host) {
  if (IsIpAddress(host)) return host;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return {};
  char text[INET6_ADDRSTRLEN] = {};
  const void* address = found->ai_family == AF_INET
                            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr)
                            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr);
  const bool ok = inet_ntop(found->ai_family, address, text, sizeof(text)) != nullptr;
  freeaddrinfo(found);
  return ok ? std::string(text) : std::string();
}

std::string JobHostsFile(const std::string& base, const std::vector<TaskHost>& task_hosts,
                         const std::function<std::string(const std::string&)>& resolve,
                         std::vector<std::string>* unresolved) {
  std::string out = base;
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += "# gpool: the job's tasks by stable name\n";
  std::map<std::string, std::string> address_of;  // host -> address, resolved once
  for (const TaskHost& t : task_hosts) {
    auto [it, fresh] = address_of.try_emplace(t.host);
    if (fresh) it->second = t.address.empty() ? resolve(t.host) : t.address;
    if (it->second.empty()) {
      if (unresolved != nullptr) unresolved->push_back(t.name);
      continue;
    }
    out += it->second + " " + t.name + "\n";
  }
  return out;
}

std::string MpiHostfileByName(const std::vector<TaskHost>& task_hosts) {
  std::string out;
  for (const TaskHost& t : task_hosts) out += t.name + " slots=" + std::to_string(t.slots) + "\n";
  return out;
}

std::string JobHostsPath(const std::string& log_dir, const TaskId& task) {
  return log_dir + "/" + std::to_string(task.job.value()) + ".hosts";
}

std::map<std::string, std::string> MpiLauncherEnv(const std::string& rsh_agent, const std::string& hostfile,
                                                  const std::vector<std::string>& env) {
  std::map<std::string, std::string> wanted;
  wanted["OMPI_MCA_if_base_do_not_resolve"] = "1";
  wanted["PMIX_MCA_gds"] = "hash";
  if (!rsh_agent.empty()) {
    wanted["OMPI_MCA_plm_rsh_agent"] = rsh_agent;
    wanted["HYDRA_LAUNCHER"] = "ssh";  // Hydra runs HYDRA_LAUNCHER_EXEC as if it were ssh
    wanted["HYDRA_LAUNCHER_EXEC"] = rsh_agent;
  }
  if (!hostfile.empty()) wanted["OMPI_MCA_orte_default_hostfile"] = hostfile;
  for (const std::string& entry : env) {
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) wanted.erase(entry.substr(0, eq));
  }
  return wanted;
}

}  // namespace gpool::worker
