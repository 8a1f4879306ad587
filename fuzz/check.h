// FUZZ_CHECK: an invariant a fuzz target asserts about a decoder's output
// (a value that decoded once decodes again after re-encoding, a converter's
// output is accepted by the parser it was made for). A broken invariant
// aborts, which libFuzzer and the replay driver both report as a crash with
// the input saved; an ordinary error status for hostile bytes is not one.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(cond, what)                                                        \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s\n", __FILE__, __LINE__, \
                   std::string(what).c_str());                                        \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)
