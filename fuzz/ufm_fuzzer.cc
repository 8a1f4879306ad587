// Fuzz target: the UFM fabric export converter (`gpool topology convert`),
// JSON. Its promise is that the topology it returns is one ParseTopologyFile
// accepts, so the target formats the result and parses it back.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "client/topology_file.h"
#include "client/ufm_convert.h"
#include "fuzz/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpool;
  auto converted = ConvertUfmExport(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
  if (!converted.ok()) return 0;
  auto parsed = ParseTopologyFile(FormatTopologyFile(converted->topology, converted->notes), "converted");
  FUZZ_CHECK(parsed.ok(), "a converted UFM export is not a valid topology file: " + parsed.status().ToString());
  return 0;
}
