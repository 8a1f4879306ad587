// gpool-task-supervisor: see worker/supervisor/supervisor.h.
#include <unistd.h>

#include <cstdio>

#include "worker/supervisor/supervisor.h"

int main(int argc, char** argv) {
  auto options = gpool::worker::ParseSupervisorArgs(argc, argv);
  if (!options.ok()) {
    std::fprintf(stderr, "gpool-task-supervisor: %s\nusage: gpool-task-supervisor --state-dir DIR [--status-fd N] "
                         "[--lease FILE] [--detach]\n",
                 options.status().message().c_str());
    return 2;
  }
  if (options->detach) {
    const pid_t child = fork();
    if (child != 0) _exit(child < 0 ? 1 : 0);  // the child goes on, re-parented to init
  }
  return gpool::worker::RunSupervisor(*options);
}
