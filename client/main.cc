// gpool: the command-line client. Everything but process setup lives in
// client/cli.cc (RunCli), where it can be tested.
#include <iostream>
#include <string>
#include <vector>

#include "client/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // Run as gpool-rsh (the link a worker gives gang tasks' MPI as its remote
  // agent), it is `gpool exec-rsh`.
  const std::string self = argc > 0 ? argv[0] : "";
  if (self == "gpool-rsh" || (self.size() > 10 && self.substr(self.size() - 10) == "/gpool-rsh")) {
    args.insert(args.begin(), "exec-rsh");
  }
  return gpool::RunCli(std::move(args), std::cout, std::cerr, &gpool::Client::Connect);
}
