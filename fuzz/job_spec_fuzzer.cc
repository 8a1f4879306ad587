// Fuzz target: the job spec reader (`gpool submit FILE`), YAML or JSON, with
// its validation. An accepted spec must also pass ValidateJobSpec on its
// own and survive the wire (the CLI sends what it parsed).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "client/job_spec_file.h"
#include "fuzz/check.h"
#include "protocol/validate.h"
#include "protocol/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpool;
  auto spec = ParseJobSpec(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  if (!spec.ok()) return 0;
  Status valid = ValidateJobSpec(*spec);
  FUZZ_CHECK(valid.ok(), "ParseJobSpec accepted a spec ValidateJobSpec refuses: " + valid.ToString());
  auto again = wire::UnpackFromString<JobSpec>(wire::PackToString(*spec));
  FUZZ_CHECK(again.ok(), "an accepted job spec did not survive the wire: " + again.status().ToString());
  return 0;
}
