// gpool: the command-line client. Everything but process setup lives in
// client/cli.cc (RunCli), where it can be tested.
#include <iostream>
#include <string>
#include <vector>

#include "client/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return gpool::RunCli(std::move(args), std::cout, std::cerr, &gpool::Client::Connect);
}
