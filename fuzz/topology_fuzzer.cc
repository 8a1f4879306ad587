// Fuzz target: the topology file reader (`gpool topology apply FILE`). An
// accepted file's labels are computed, and its formatted form must parse
// back to the same switches (`topology convert` writes files that way).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "client/topology_file.h"
#include "fuzz/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpool;
  auto topology = ParseTopologyFile(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  if (!topology.ok()) return 0;
  (void)NodeLabels(*topology);
  (void)SummarizeTopology(*topology);
  auto again = ParseTopologyFile(FormatTopologyFile(*topology, {"fuzz"}), "formatted");
  FUZZ_CHECK(again.ok(), "a formatted topology did not parse back: " + again.status().ToString());
  FUZZ_CHECK(again->switches.size() == topology->switches.size(), "formatting lost switches");
  return 0;
}
