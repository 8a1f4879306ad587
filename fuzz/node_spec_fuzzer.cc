// Fuzz target: the node spec reader (the worker's --spec, gpool-sim's
// --nodes), YAML or JSON, including the simulated-GPU shorthand.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/check.h"
#include "protocol/validate.h"
#include "topology/node_spec_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpool;
  topology::NodeSpecFileOptions options{.default_name = "fuzz-node", .default_hostname = "fuzz-host"};
  auto spec = topology::ParseNodeSpec(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.yaml",
                                      options);
  if (!spec.ok()) return 0;
  Status valid = ValidateNodeSpec(*spec);
  FUZZ_CHECK(valid.ok(), "ParseNodeSpec returned a spec ValidateNodeSpec refuses: " + valid.ToString());
  return 0;
}
