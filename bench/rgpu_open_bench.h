// gpool-bench-rgpu's session-open latency (rgpu_open_bench.cc): starts its
// own coordinator and worker on loopback, prints JSON lines, returns the
// exit code (0: measured).
#pragma once

namespace gpool::bench {

int RunSessionOpenBench(int sessions);

}  // namespace gpool::bench
