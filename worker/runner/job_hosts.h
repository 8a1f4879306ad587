// The names a gang's tasks know each other by (issue 30): every task has a
// stable name, <job-name>-<group>-<index> (GPOOL_TASK_NAME), and the bind
// lists them all with their nodes' hosts (BindTask.task_hosts). From that
// the worker writes, next to the task logs:
//
//   <tasks dir>/<job>.hosts      hosts(5): this node's /etc/hosts, then one
//                                "ADDRESS NAME" line per task, so the names
//                                resolve in the task (bind-mounted over
//                                /etc/hosts when the worker is root,
//                                task_exec.h; always named by
//                                GPOOL_HOSTS_FILE)
//   <job>.<index>.<attempt>.hostfile  the MPI hostfile, "NAME slots=N" per
//                                task (GPOOL_HOSTFILE), so mpirun addresses
//                                tasks by name and its remote agent, `gpool
//                                exec-rsh NAME ...`, runs daemons inside them
//
// and the variables that point MPI at them (MpiLauncherEnv). Pure apart from
// ResolveHost.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/messages_worker.h"

namespace gpool::worker {

// InvalidArgument naming the entry when a task name is not a hostname
// (letters, digits, '-' and '.', labels of 1-63 bytes, at most 253 bytes)
// or appears twice, a host is empty, too long or holds whitespace,
// slots is 0, or an address is set but not an IP address.
Status ValidateTaskHosts(const std::vector<TaskHost>& task_hosts);

// An address for `host` (an IP literal as it is; otherwise the first
// address getaddrinfo gives); empty when it does not resolve.
std::string ResolveHost(const std::string& host);

// The hosts file: `base` (the node's /etc/hosts) and a marked section of
// "ADDRESS NAME" lines, the address the task's node advertised
// (TaskHost.address), else resolve(host). A task whose host does not
// resolve gets no line; its name is added to `unresolved`.
std::string JobHostsFile(const std::string& base, const std::vector<TaskHost>& task_hosts,
                         const std::function<std::string(const std::string&)>& resolve,
                         std::vector<std::string>* unresolved);

// "NAME slots=N" per task.
std::string MpiHostfileByName(const std::vector<TaskHost>& task_hosts);

// <log_dir>/<job>.hosts
std::string JobHostsPath(const std::string& log_dir, const TaskId& task);

// What makes mpirun in a task start its ranks in the sibling tasks through
// `gpool exec` (no sshd): Open MPI's and MPICH/Hydra's remote agent set to
// `rsh_agent` (a `gpool-rsh`, the CLI in its exec-rsh mode) and Open MPI's
// default hostfile. Several tasks may share a machine (and its hostname and
// /tmp), which Open MPI otherwise gets wrong, so also:
//   OMPI_MCA_if_base_do_not_resolve=1  a task name that resolves to this
//       machine stays a node of its own (Open MPI merges every name that
//       resolves to a local address into one node, and refuses a hostfile
//       that then gives it slots twice);
//   PMIX_MCA_gds=hash  no shared-memory store that such daemons would share.
// (Their session directories are kept apart by `gpool exec-rsh` itself,
// cli_exec.cc says why.)
// Entries the task's env already has are left out: a job's own settings win.
std::map<std::string, std::string> MpiLauncherEnv(const std::string& rsh_agent, const std::string& hostfile,
                                                  const std::vector<std::string>& env);

}  // namespace gpool::worker
