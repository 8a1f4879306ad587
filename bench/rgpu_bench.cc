// gpool-bench-rgpu: the rGPU data plane (worker/rgpu/) on loopback, beside
// raw ZeroMQ CURVE in the same run:
//   rgpu_call_rtt_p50/p99       a remote cuDeviceGetAttribute (one request, one reply)
//   zmq_curve_rtt_p50           a DEALER/ROUTER CURVE echo of the same frame sizes
//   rgpu_call_rtt_ratio         remote p50 / raw p50 (target <= 1.5)
//   rgpu_htod_mib_s / rgpu_dtoh_mib_s     cuMemcpyHtoD_v2 / cuMemcpyDtoH_v2 of 1..256 MiB
//   zmq_curve_up_mib_s / zmq_curve_down_mib_s  the same bytes in the same frames, raw
//   rgpu_htod_ratio / rgpu_dtoh_ratio     remote / raw (target >= 0.8)
//   local_htod_mib_s / local_dtoh_mib_s   with --driver: the driver called in this process
// The server is gpool-rgpu-server on the fake driver, or on --driver PATH
// (a real libcuda.so.1). The client is libgpool-rgpu.so.1, dlopened here
// directly (the interposer in front adds one indirect call). Session open
// latency is the control plane's to measure (gpool session open).
// First it measures session open latency on a coordinator and worker of its
// own (rgpu_open_bench.cc; --sessions 0 skips it).
//   gpool-bench-rgpu [--driver PATH] [--calls N] [--max-mib N] [--sessions N]
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "bench/bench_process.h"
#include "bench/rgpu_open_bench.h"
#include "protocol/security/curve_socket.h"
#include "protocol/security/zap_handler.h"
#include "worker/cuda/cuda_driver_api.h"
#include "worker/rgpu/rgpu_test_support.h"
#include "worker/rgpu/server/chunk_pool.h"
#include "worker/rgpu/wire.h"

namespace {

using gpool::bench::Percentile;
using Clock = std::chrono::steady_clock;

void Print(const char* metric, double value, const char* unit, const std::string& params) {
  std::printf("{\"metric\": \"%s\", \"value\": %.2f, \"unit\": \"%s\", \"params\": {%s}}\n", metric, value, unit,
              params.c_str());
  std::fflush(stdout);
}

double Us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// The driver API entry points the bench calls, from one library.
struct Api {
  void* lib = nullptr;
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*set_current)(CUcontext) = nullptr;
  CUresult (*attribute)(int*, int, CUdevice) = nullptr;
  CUresult (*alloc)(CUdeviceptr*, std::size_t) = nullptr;
  CUresult (*free)(CUdeviceptr) = nullptr;
  CUresult (*htod)(CUdeviceptr, const void*, std::size_t) = nullptr;
  CUresult (*dtoh)(void*, CUdeviceptr, std::size_t) = nullptr;

  bool Open(const std::string& path) {
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return false;
    init = reinterpret_cast<decltype(init)>(dlsym(lib, "cuInit"));
    retain = reinterpret_cast<decltype(retain)>(dlsym(lib, "cuDevicePrimaryCtxRetain"));
    set_current = reinterpret_cast<decltype(set_current)>(dlsym(lib, "cuCtxSetCurrent"));
    attribute = reinterpret_cast<decltype(attribute)>(dlsym(lib, "cuDeviceGetAttribute"));
    alloc = reinterpret_cast<decltype(alloc)>(dlsym(lib, "cuMemAlloc_v2"));
    free = reinterpret_cast<decltype(free)>(dlsym(lib, "cuMemFree_v2"));
    htod = reinterpret_cast<decltype(htod)>(dlsym(lib, "cuMemcpyHtoD_v2"));
    dtoh = reinterpret_cast<decltype(dtoh)>(dlsym(lib, "cuMemcpyDtoH_v2"));
    return init && retain && set_current && attribute && alloc && free && htod && dtoh;
  }
  bool Start() {
    CUcontext ctx = nullptr;
    return init(0) == CUDA_SUCCESS && retain(&ctx, 0) == CUDA_SUCCESS && set_current(ctx) == CUDA_SUCCESS;
  }
};

// Best-of-`reps` MiB/s of `copy` moving `bytes`.
template <typename Copy>
double MibPerSecond(std::size_t bytes, int reps, Copy&& copy) {
  double best = 0;
  for (int i = 0; i < reps; ++i) {
    const auto start = Clock::now();
    if (!copy()) return -1;
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::max(best, static_cast<double>(bytes) / (1 << 20) / s);
  }
  return best;
}

// The raw baseline: a CURVE ROUTER on a thread that answers like the
// server would (a 22-byte reply to a request; `down` bytes in kChunkBytes
// frames when asked), without executing anything. Its chunks come from a
// ChunkPool as the server's do, so that neither side pays for fresh
// memory the other does not.
class RawEcho {
 public:
  // Two contexts, as two processes have: each side encrypts on its own
  // I/O thread (one shared context would put both on one thread).
  RawEcho() : router_(server_context_, zmq::socket_type::router), dealer_(client_context_, zmq::socket_type::dealer) {
    auto server = gpool::security::GenerateKeyPair().value();
    auto client = gpool::security::GenerateKeyPair().value();
    zap_ = std::move(gpool::security::ZapHandler::Start(server_context_, [](auto, auto) {
                       return std::optional<std::string>("bench");
                     }).value());
    (void)gpool::security::MakeCurveServer(router_, server, "rgpu");
    router_.set(zmq::sockopt::linger, 0);
    router_.bind("tcp://127.0.0.1:*");
    (void)gpool::security::MakeCurveClient(dealer_, client, server.public_key);
    dealer_.set(zmq::sockopt::linger, 0);
    dealer_.connect(router_.get(zmq::sockopt::last_endpoint));
    thread_ = std::thread([this] { Serve(); });
  }
  ~RawEcho() {
    stop_ = true;
    thread_.join();
  }

  // Sends the request frames (zero copy) and receives the reply into `into`.
  bool RoundTrip(const std::vector<std::pair<const void*, std::size_t>>& frames, void* into, std::size_t down) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
      zmq::message_t m(const_cast<void*>(frames[i].first), frames[i].second, nullptr, nullptr);
      if (!dealer_.send(m, i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none)) return false;
    }
    std::vector<zmq::message_t> reply;
    if (!zmq::recv_multipart(dealer_, std::back_inserter(reply))) return false;
    std::size_t at = 0;
    for (std::size_t i = 2; i < reply.size() && at < down; ++i) {
      std::memcpy(static_cast<char*>(into) + at, reply[i].data(), reply[i].size());
      at += reply[i].size();
    }
    return true;
  }

 private:
  void Serve() {
    zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
    while (!stop_) {
      if (zmq::poll(&item, 1, std::chrono::milliseconds(50)) == 0) continue;
      std::vector<zmq::message_t> parts;
      if (!zmq::recv_multipart(router_, std::back_inserter(parts))) continue;
      // The second frame's first 8 bytes: how many bytes to send back.
      std::uint64_t down = 0;
      if (parts.size() > 2 && parts[2].size() >= 8) std::memcpy(&down, parts[2].data(), 8);
      router_.send(parts[0], zmq::send_flags::sndmore);
      router_.send(zmq::buffer(std::string(18, 'h')), zmq::send_flags::sndmore);
      router_.send(zmq::buffer(std::string(4, 'o')), down > 0 ? zmq::send_flags::sndmore : zmq::send_flags::none);
      for (std::uint64_t at = 0; at < down; at += gpool::rgpu::kChunkBytes) {
        const std::size_t n = std::min<std::uint64_t>(gpool::rgpu::kChunkBytes, down - at);
        zmq::message_t chunk = chunks_.Take(n);
        std::memset(chunk.data(), 1, n);  // as the server's driver copy writes it
        router_.send(chunk, at + n < down ? zmq::send_flags::sndmore : zmq::send_flags::none);
      }
    }
  }

  gpool::rgpu::ChunkPool chunks_{gpool::rgpu::kKeptReplyChunks};  // as the server's; outlives the contexts
  zmq::context_t server_context_;
  zmq::context_t client_context_;
  std::unique_ptr<gpool::security::ZapHandler> zap_;
  zmq::socket_t router_;
  zmq::socket_t dealer_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  std::string driver;
  int calls = 5000;
  std::size_t max_mib = 256;
  int sessions = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--driver")
      driver = argv[i + 1];
    else if (flag == "--calls")
      calls = std::atoi(argv[i + 1]);
    else if (flag == "--max-mib")
      max_mib = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--sessions")
      sessions = std::atoi(argv[i + 1]);
  }
  // First, before this process's environment points at a session: the
  // control plane's half, on a cluster of its own.
  if (sessions > 0 && gpool::bench::RunSessionOpenBench(sessions) != 0) {
    std::fprintf(stderr, "gpool-bench-rgpu: the session open measurement failed\n");
    return 1;
  }
  gpool::rgpu::testing::SessionKeys keys;
  gpool::rgpu::testing::ServerProcess server;
  auto args = gpool::rgpu::testing::ServerArgs(keys, keys.owner().public_key, 600000, driver.empty());
  if (!driver.empty()) args.insert(args.end(), {"--driver", driver});
  if (!server.Start(args, {})) {
    std::fprintf(stderr, "gpool-bench-rgpu: the server did not start\n");
    return 1;
  }
  for (const std::string& kv : gpool::rgpu::testing::RemoteEnv(keys, server.endpoint(), "owner", 60000)) {
    putenv(strdup(kv.c_str()));
  }
  Api remote;
  if (!remote.Open(GPOOL_RGPU_CLIENT_LIB) || !remote.Start()) {
    std::fprintf(stderr, "gpool-bench-rgpu: no session through %s\n", GPOOL_RGPU_CLIENT_LIB);
    return 1;
  }
  const std::string where = "\"driver\": \"" + (driver.empty() ? std::string("fake") : driver) + "\"";

  // Round trips: the same frame sizes on both paths (header 14 bytes, call
  // 22 bytes; reply 18 + 4).
  RawEcho raw;
  std::vector<double> remote_us, raw_us;
  const std::string header(14, 'h');
  std::string call(22, '\0');
  for (int i = 0; i < calls + 200; ++i) {
    int value = 0;
    auto start = Clock::now();
    remote.attribute(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
    if (i >= 200) remote_us.push_back(Us(Clock::now() - start));
    start = Clock::now();
    raw.RoundTrip({{header.data(), header.size()}, {call.data(), call.size()}}, nullptr, 0);
    if (i >= 200) raw_us.push_back(Us(Clock::now() - start));
  }
  const std::string rtt_params = where + ", \"calls\": " + std::to_string(calls);
  Print("rgpu_call_rtt_p50", Percentile(remote_us, 0.5), "us", rtt_params + ", \"call\": \"cuDeviceGetAttribute\"");
  Print("rgpu_call_rtt_p99", Percentile(remote_us, 0.99), "us", rtt_params + ", \"call\": \"cuDeviceGetAttribute\"");
  Print("zmq_curve_rtt_p50", Percentile(raw_us, 0.5), "us", rtt_params);
  Print("rgpu_call_rtt_ratio", Percentile(remote_us, 0.5) / Percentile(raw_us, 0.5), "x",
        rtt_params + ", \"target\": \"<= 1.5\"");

  Api local;
  const bool with_local = !driver.empty() && local.Open(driver) && local.Start();
  for (std::size_t mib : {1, 4, 16, 64, 256}) {
    if (mib > max_mib) break;
    const std::size_t bytes = mib << 20;
    const int reps = mib >= 64 ? 3 : 8;
    std::vector<char> host(bytes, 7);
    CUdeviceptr dev = 0;
    if (remote.alloc(&dev, bytes) != CUDA_SUCCESS) break;
    // Remote and raw rounds alternate, so a burst of load elsewhere on the
    // machine hits both sides alike; each keeps its best round.
    std::uint64_t none = 0, down = bytes;
    std::vector<std::pair<const void*, std::size_t>> up_frames{{header.data(), header.size()}, {&none, 8}};
    for (std::size_t at = 0; at < bytes; at += gpool::rgpu::kChunkBytes) {
      up_frames.emplace_back(host.data() + at, std::min(gpool::rgpu::kChunkBytes, bytes - at));
    }
    double htod = 0, dtoh = 0, up_raw = 0, down_raw = 0;
    for (int rep = 0; rep < reps; ++rep) {
      htod = std::max(htod, MibPerSecond(bytes, 1, [&] { return remote.htod(dev, host.data(), bytes) == 0; }));
      up_raw = std::max(up_raw, MibPerSecond(bytes, 1, [&] { return raw.RoundTrip(up_frames, nullptr, 0); }));
      dtoh = std::max(dtoh, MibPerSecond(bytes, 1, [&] { return remote.dtoh(host.data(), dev, bytes) == 0; }));
      down_raw = std::max(down_raw, MibPerSecond(bytes, 1, [&] {
                            return raw.RoundTrip({{header.data(), header.size()}, {&down, 8}}, host.data(), bytes);
                          }));
    }
    remote.free(dev);
    const std::string p = where + ", \"mib\": " + std::to_string(mib);
    Print("rgpu_htod_mib_s", htod, "MiB/s", p);
    Print("zmq_curve_up_mib_s", up_raw, "MiB/s", p);
    Print("rgpu_htod_ratio", htod / up_raw, "x", p + ", \"target\": \">= 0.8\"");
    Print("rgpu_dtoh_mib_s", dtoh, "MiB/s", p);
    Print("zmq_curve_down_mib_s", down_raw, "MiB/s", p);
    Print("rgpu_dtoh_ratio", dtoh / down_raw, "x", p + ", \"target\": \">= 0.8\"");
    if (with_local && local.alloc(&dev, bytes) == CUDA_SUCCESS) {
      Print("local_htod_mib_s", MibPerSecond(bytes, reps, [&] { return local.htod(dev, host.data(), bytes) == 0; }),
            "MiB/s", p);
      Print("local_dtoh_mib_s", MibPerSecond(bytes, reps, [&] { return local.dtoh(host.data(), dev, bytes) == 0; }),
            "MiB/s", p);
      local.free(dev);
    }
  }
  server.Signal(SIGTERM);
  server.WaitExit(30);
  return 0;
}
