// gpool-bench-interposer: what gpool's CUDA interposer (libgpool-cuda.so.1)
// adds to a driver call, against the same call made directly, in the same
// run. Each configuration runs in a child process of its own (the
// interposer reads its environment once, at load), which dlopens
// "libcuda.so.1" from a library directory, as the CUDA runtime does:
//   direct       the fake driver itself
//   interposed   the interposer in front of the fake, no share (the fast path)
//   ledger       with a task ledger (launches publish activity, allocations are counted)
//   throttled    with GPOOL_GPU_COMPUTE_PCT=99 fixed-share: small kernels take the throttle's fast
//                path, one launch in 16 on average is measured with events (issue 49)
//   bursting     with GPOOL_GPU_COMPUTE_PCT=30 burst-share, alone on the device (a private
//                activity directory): over its share, so every launch runs on a debt
// Calls timed: cuLaunchKernel of an empty kernel, cuMemGetInfo_v2 (intercepted)
// and cuCtxGetDevice (a forwarded export: one trampoline). ns/call is the
// best of 10 rounds of 20,000 calls, in the best of 3 child runs taken in
// turns with the other configurations. Every configuration runs the same
// rounds: on a loaded machine a short round escapes preemption more often
// than a long one, so rounds of different lengths would not compare (a
// throttled configuration once ran rounds a tenth as long as the direct
// one's and came out faster than it).
//
// With a real GPU (libcuda.so.1 at a usual path), the same launch loop runs
// on it directly and through the interposer; otherwise one line says it
// was skipped. Output: JSON lines {"metric", "value", "unit", "params"}.
#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "worker/cuda/cuda_driver_api.h"

extern char** environ;

namespace {

constexpr const char* kRealDrivers[] = {
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
    "/usr/lib64/libcuda.so.1",
    "/usr/local/nvidia/lib64/libcuda.so.1",
};

const char kNoopPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry noop()
{
  ret;
}
)";

template <typename Fn>
Fn Sym(void* lib, const char* name) {
  auto fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (fn == nullptr) {
    std::fprintf(stderr, "bench: libcuda.so.1 lacks %s\n", name);
    std::exit(2);
  }
  return fn;
}

// Best ns/call over rounds of `calls` calls of `call`.
template <typename Call>
double NsPerCall(int calls, Call&& call) {
  double best = 1e18;
  for (int round = 0; round < 10; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) call();
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    best = std::min(best, static_cast<double>(ns.count()) / calls);
  }
  return best;
}

// The child: times the calls on whatever "libcuda.so.1" the library path
// gives, prints "<launch> <meminfo> <ctxgetdevice>" in ns/call.
int Child(int calls) {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cuda == nullptr) return 2;
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  CUfunction noop = nullptr;
  if (Sym<cuInit_fn>(cuda, "cuInit")(0) != CUDA_SUCCESS ||
      Sym<cuDevicePrimaryCtxRetain_fn>(cuda, "cuDevicePrimaryCtxRetain")(&ctx, 0) != CUDA_SUCCESS ||
      Sym<cuCtxSetCurrent_fn>(cuda, "cuCtxSetCurrent")(ctx) != CUDA_SUCCESS ||
      Sym<cuModuleLoadData_fn>(cuda, "cuModuleLoadData")(&module, kNoopPtx) != CUDA_SUCCESS ||
      Sym<cuModuleGetFunction_fn>(cuda, "cuModuleGetFunction")(&noop, module, "noop") != CUDA_SUCCESS) {
    return 3;
  }
  const auto launch = Sym<cuLaunchKernel_fn>(cuda, "cuLaunchKernel");
  const auto get_info = Sym<cuMemGetInfo_v2_fn>(cuda, "cuMemGetInfo_v2");
  const auto get_device = Sym<cuCtxGetDevice_fn>(cuda, "cuCtxGetDevice");
  const auto sync = Sym<cuCtxSynchronize_fn>(cuda, "cuCtxSynchronize");
  const double launch_ns = NsPerCall(calls, [&] { launch(noop, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr); });
  sync();
  std::size_t free = 0, total = 0;
  CUdevice device = 0;
  const double info_ns = NsPerCall(calls, [&] { get_info(&free, &total); });
  const double device_ns = NsPerCall(calls, [&] { get_device(&device); });
  std::printf("%.2f %.2f %.2f\n", launch_ns, info_ns, device_ns);
  return 0;
}

struct Timing {
  bool ok = false;
  double launch_ns = 0, info_ns = 0, device_ns = 0;
};

// Runs this program as a child with `env` added; parses its line.
Timing RunChild(const std::vector<std::string>& env_extra, int calls) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "LD_LIBRARY_PATH=", 16) != 0 && std::strncmp(*e, "GPOOL_", 6) != 0) env.emplace_back(*e);
  }
  env.insert(env.end(), env_extra.begin(), env_extra.end());
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string self = std::filesystem::read_symlink("/proc/self/exe");
  std::string mode = "--child";
  std::string n = std::to_string(calls);
  char* argv[] = {self.data(), mode.data(), n.data(), nullptr};
  int out[2];
  if (pipe(out) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  std::string text;
  char buf[256];
  for (ssize_t got; (got = read(out[0], buf, sizeof(buf))) > 0;) text.append(buf, static_cast<std::size_t>(got));
  close(out[0]);
  int status = 0;
  if (spawned != 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
  Timing t;
  t.ok = std::sscanf(text.c_str(), "%lf %lf %lf", &t.launch_ns, &t.info_ns, &t.device_ns) == 3;
  return t;
}

// Keeps the faster of `*best` and `t` per call; a failed run fails the whole.
void Best(Timing* best, const Timing& t) {
  if (!t.ok) {
    best->launch_ns = -1;
    return;
  }
  if (best->launch_ns < 0) return;
  if (!best->ok) {
    *best = t;
    return;
  }
  best->launch_ns = std::min(best->launch_ns, t.launch_ns);
  best->info_ns = std::min(best->info_ns, t.info_ns);
  best->device_ns = std::min(best->device_ns, t.device_ns);
}

void Print(const char* metric, double value, const char* unit, const std::string& params) {
  std::printf("{\"metric\": \"%s\", \"value\": %.2f, \"unit\": \"%s\", \"params\": {%s}}\n", metric, value, unit,
              params.c_str());
}

// A directory holding only a libcuda.so.1 symlink to `target`.
std::string LibraryDir(const std::string& root, const char* name, const std::string& target) {
  const std::string dir = root + "/" + name;
  std::filesystem::create_directories(dir);
  std::filesystem::create_symlink(target, dir + "/libcuda.so.1");
  return dir;
}

void Compare(const char* driver, const Timing& direct, const Timing& through, const char* config, int calls) {
  const std::string params = std::string("\"driver\": \"") + driver + "\", \"config\": \"" + config +
                             "\", \"calls\": " + std::to_string(calls);
  Print("cuLaunchKernel_direct", direct.launch_ns, "ns/call", params);
  Print("cuLaunchKernel_interposed", through.launch_ns, "ns/call", params);
  Print("cuLaunchKernel_overhead", through.launch_ns - direct.launch_ns, "ns/call", params);
  Print("cuMemGetInfo_direct", direct.info_ns, "ns/call", params);
  Print("cuMemGetInfo_interposed", through.info_ns, "ns/call", params);
  Print("cuCtxGetDevice_direct", direct.device_ns, "ns/call", params);
  Print("cuCtxGetDevice_forwarded", through.device_ns, "ns/call", params);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--child") == 0) return Child(std::atoi(argv[2]));
  char root_template[] = "/tmp/gpool-bench-interposer-XXXXXX";
  const std::string root = mkdtemp(root_template);
  const std::string fake_dir = LibraryDir(root, "fake", GPOOL_FAKE_CUDA_PATH);
  const std::string shim_dir = LibraryDir(root, "interposer", GPOOL_CUDA_INTERPOSER_PATH);
  const std::string real_fake = std::string("GPOOL_CUDA_REAL_DRIVER=") + GPOOL_FAKE_CUDA_PATH;
  constexpr int kCalls = 20000;
  int rc = 0;

  // The configurations take turns, three times, and each keeps its best:
  // a neighbour's load on the machine then hits them alike.
  Timing direct, plain, ledger, throttled, bursting;
  for (int turn = 0; turn < 3; ++turn) {
    Best(&direct, RunChild({"LD_LIBRARY_PATH=" + fake_dir}, kCalls));
    Best(&plain, RunChild({"LD_LIBRARY_PATH=" + shim_dir, real_fake}, kCalls));
    Best(&ledger, RunChild({"LD_LIBRARY_PATH=" + shim_dir, real_fake, "GPOOL_CUDA_LEDGER=" + root + "/ledger-a",
                            "GPOOL_GPU_MEMORY_MIB=1024"},
                           kCalls));
    Best(&throttled, RunChild({"LD_LIBRARY_PATH=" + shim_dir, real_fake, "GPOOL_CUDA_LEDGER=" + root + "/ledger-b",
                               "GPOOL_GPU_COMPUTE_PCT=99", "GPOOL_SHARING_QOS=fixed-share"},
                              kCalls));
    Best(&bursting, RunChild({"LD_LIBRARY_PATH=" + shim_dir, real_fake, "GPOOL_CUDA_LEDGER=" + root + "/ledger-d",
                              "GPOOL_CUDA_ACTIVITY=" + root + "/activity", "GPOOL_GPU_COMPUTE_PCT=30",
                              "GPOOL_SHARING_QOS=burst-share"},
                             kCalls));
  }
  const auto good = [](const Timing& t) { return t.ok && t.launch_ns >= 0; };
  if (good(direct) && good(plain) && good(ledger) && good(throttled) && good(bursting)) {
    Compare("fake", direct, plain, "no share (fast path)", kCalls);
    Compare("fake", direct, ledger, "ledger + 1024 MiB limit", kCalls);
    Compare("fake", direct, throttled, "ledger + 99% fixed-share", kCalls);
    Compare("fake", direct, bursting, "ledger + 30% burst-share, alone", kCalls);
  } else {
    std::fprintf(stderr, "bench: a fake-driver child failed\n");
    rc = 1;
  }

  const char* real = nullptr;
  for (const char* path : kRealDrivers) {
    if (access(path, R_OK) == 0) {
      real = path;
      break;
    }
  }
  if (real == nullptr) {
    Print("real_gpu_launch", 0, "skipped", "\"reason\": \"no libcuda.so.1 at the usual paths: no real GPU driver\"");
  } else {
    const std::string real_dir = LibraryDir(root, "real", real);
    const std::string real_env = std::string("GPOOL_CUDA_REAL_DRIVER=") + real;
    const Timing gpu_direct = RunChild({"LD_LIBRARY_PATH=" + real_dir}, kCalls);
    const Timing gpu_plain = RunChild({"LD_LIBRARY_PATH=" + shim_dir, real_env}, kCalls);
    const Timing gpu_throttled =
        RunChild({"LD_LIBRARY_PATH=" + shim_dir, real_env, "GPOOL_CUDA_LEDGER=" + root + "/ledger-c",
                  "GPOOL_GPU_COMPUTE_PCT=99", "GPOOL_SHARING_QOS=fixed-share"},
                 kCalls);
    if (gpu_direct.ok && gpu_plain.ok && gpu_throttled.ok) {
      Compare("real", gpu_direct, gpu_plain, "no share (fast path)", kCalls);
      Compare("real", gpu_direct, gpu_throttled, "ledger + 99% fixed-share", kCalls);
      const std::string params = std::string("\"driver\": \"") + real + "\"";
      Print("real_gpu_launch_rate_direct", 1e9 / gpu_direct.launch_ns, "launches/s", params);
      Print("real_gpu_launch_rate_interposed", 1e9 / gpu_plain.launch_ns, "launches/s", params);
      Print("real_gpu_launch_rate_throttled_99pct", 1e9 / gpu_throttled.launch_ns, "launches/s", params);
    } else {
      std::fprintf(stderr, "bench: a real-GPU child failed\n");
      rc = 1;
    }
  }
  std::filesystem::remove_all(root);
  return rc;
}
