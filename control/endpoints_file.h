// The coordinator's endpoints file (<data-dir>/endpoints): one "name
// endpoint" line per bound port (client, worker, peer, http), which tests and
// scripts that ask for ephemeral ports read. Written atomically (a temp file
// renamed over it), so a reader sees all the lines or the previous file.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "protocol/base/status.h"

namespace gpool::control {

Status WriteEndpointsFile(const std::string& data_dir, const std::vector<std::pair<std::string, std::string>>& ports);

// Where tasks on other machines can reach a client endpoint: a wildcard
// bind (tcp://0.0.0.0:7400, tcp://*:7400, tcp://[::]:7400) names this
// machine by its hostname instead.
std::string ReachableEndpoint(const std::string& endpoint);

}  // namespace gpool::control
