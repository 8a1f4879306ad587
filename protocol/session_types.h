// Remote GPU (rGPU) sessions on the wire (issue 33; docs/protocol.md
// "Sessions").
//
// A session is a job with `session.enabled`: one task of one replica whose
// process the worker replaces with gpool-rgpu-server, the data plane a
// client's CUDA driver calls go to. Being a job, it is admitted against its
// queue's quotas, counted in DRF, placed by the scheduler, preempted by its
// priority class and survives leader failover like any job. Its TTL is the
// job's max_runtime_ms.
#pragma once

#include <cstdint>
#include <string>

namespace gpool {

// gpool-rgpu-server's exit code when it closed itself after the idle
// timeout (its client went away): the session is Expired, not Failed.
inline constexpr int kRgpuIdleExitCode = 3;

struct SessionSpec {
  bool enabled = false;
  // The session server frees everything and exits after this long without
  // a driver call (the client went away); the session is then Expired.
  uint64_t idle_timeout_ms = 15 * 60'000;
  // The client renews the session (RenewSession) at least this often while
  // it uses it; a session not renewed for this long is closed as Expired.
  // 0: the idle timeout.
  uint64_t lease_ms = 0;
  // The CurveZMQ public key (Z85) the session server admits, and no other.
  // On a secured cluster the gateway sets it to the caller's own key,
  // whatever the client wrote; on an --insecure one the client draws a key
  // pair for the session and sends its public half.
  std::string owner_key;

  uint64_t LeaseMs() const { return lease_ms != 0 ? lease_ms : idle_timeout_ms; }
  template <typename V>
  void Fields(V& v) {
    v.Optional("enabled", enabled);
    v.Optional("idle_timeout_ms", idle_timeout_ms);
    v.Optional("lease_ms", lease_ms);
    v.Optional("owner_key", owner_key);
  }
  bool operator==(const SessionSpec&) const = default;
};

// What a worker needs to run a session's server (BindTask::rgpu); the
// worker fills in the endpoint and the server's key when it starts it.
struct RgpuBind {
  std::string owner_key;  // empty: not a session
  uint64_t idle_timeout_ms = 0;
  std::string endpoint;    // tcp://host:port the server listens on (worker)
  std::string server_key;  // its CurveZMQ public key, Z85 (worker)
  template <typename V>
  void Fields(V& v) {
    v.Optional("owner_key", owner_key);
    v.Optional("idle_timeout_ms", idle_timeout_ms);
    v.Optional("endpoint", endpoint);
    v.Optional("server_key", server_key);
  }
  bool operator==(const RgpuBind&) const = default;
};

// A session as clients see it (JobSummary::session).
//   state: Queued | Placed | Open | Closing | Closed | Expired | Preempted | Failed
struct SessionInfo {
  std::string state;       // empty: the job is not a session
  std::string reason;      // why it is in that state (pending reason, how it ended)
  std::string endpoint;    // where to send driver calls, once Open
  std::string server_key;  // the session server's public key, once Open
  std::string owner_key;
  std::string node;
  int64_t renew_ms = 0;        // last renewal (or the open request)
  uint64_t lease_ms = 0;
  uint64_t idle_timeout_ms = 0;
  uint64_t ttl_ms = 0;         // 0: none
  uint64_t gpu_ms = 0;         // GPUs (or the share's fraction) x milliseconds open
  template <typename V>
  void Fields(V& v) {
    v.Required("state", state);
    v.Optional("reason", reason);
    v.Optional("endpoint", endpoint);
    v.Optional("server_key", server_key);
    v.Optional("owner_key", owner_key);
    v.Optional("node", node);
    v.Optional("renew_ms", renew_ms);
    v.Optional("lease_ms", lease_ms);
    v.Optional("idle_timeout_ms", idle_timeout_ms);
    v.Optional("ttl_ms", ttl_ms);
    v.Optional("gpu_ms", gpu_ms);
  }
};

}  // namespace gpool
