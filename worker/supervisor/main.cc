// gpool-task-supervisor: see worker/supervisor/supervisor.h.
#include <cstdio>

#include "worker/supervisor/supervisor.h"

int main(int argc, char** argv) {
  auto options = gpool::worker::ParseSupervisorArgs(argc, argv);
  if (!options.ok()) {
    std::fprintf(stderr, "gpool-task-supervisor: %s\nusage: gpool-task-supervisor --state-dir DIR [--status-fd N] "
                         "[--lease FILE]\n",
                 options.status().message().c_str());
    return 2;
  }
  return gpool::worker::RunSupervisor(*options);
}
