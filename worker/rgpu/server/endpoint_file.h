// How gpool-rgpu-server tells the worker where it listens (--endpoint-file):
// it binds an ephemeral port ("tcp://IP:*") and writes the endpoint it got
// (ZMQ_LAST_ENDPOINT) to a file the worker named. The worker no longer picks
// a port for it: a port probed free and bound later could be taken by any
// process in between (issue 47).
//
// Format: one line, "tcp://IP:PORT\n". Written to "<path>.tmp" and renamed
// over <path>, so a reader sees the whole line or no file at all.
#pragma once

#include <string>

#include "protocol/base/status.h"

namespace gpool::rgpu {

// IoError (the reason included) when the file cannot be written; the
// temporary file is then removed.
Status WriteEndpointFile(const std::string& path, const std::string& endpoint);

}  // namespace gpool::rgpu
