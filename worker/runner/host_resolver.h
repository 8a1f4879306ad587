// HostResolver: a node's host name to an address for the job hosts files
// (job_hosts.h), without ever blocking the thread that asks.
//
// Why: a gang task's hosts file needs an address per node, and the name
// lookup (getaddrinfo) is a blocking call whose cost the worker does not
// control. Done on the worker's loop for every bind, one lookup in ~25 met a
// resolver's 5 s timeout on a machine whose DNS server throttles, and the
// loop (a fleet's single thread, or a real worker's agent) stopped sending
// heartbeats: 1,000 nodes went NotReady and tasks started at 5 a second
// (issue 46). Here a lookup runs on a thread of its own, each host at most
// once per `ttl_ms` (`negative_ttl_ms` for a name that does not resolve),
// and a cached answer past its time is still given while a fresh one is
// fetched, so a known host never waits again.
//
// Most binds need no lookup at all: the coordinator sends each node's
// advertised address (TaskHost.address, `gpool-worker --advertise-address`);
// this is the fallback for nodes that advertise none.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "protocol/base/clock.h"

namespace gpool::worker {

struct HostResolverOptions {
  // The lookup: an address, or "" when the name does not resolve
  // (job_hosts.h ResolveHost).
  std::function<std::string(const std::string&)> resolve;
  const Clock* clock = nullptr;  // required
  int64_t ttl_ms = 60'000;
  int64_t negative_ttl_ms = 10'000;
  // Lookup threads at most, started as lookups are queued; 0 resolves
  // inline in the caller (tests with a fake resolve).
  int threads = 2;
  // Hosts kept at most (a worker sees at most the cluster's nodes); past it
  // the whole cache is dropped and refilled on demand.
  size_t max_entries = 100'000;
};

class HostResolver {
 public:
  explicit HostResolver(HostResolverOptions options);
  ~HostResolver();  // joins the lookup threads; a lookup in progress is waited for
  HostResolver(const HostResolver&) = delete;
  HostResolver& operator=(const HostResolver&) = delete;

  // The address of `host` ("" when it does not resolve), or nullopt while it
  // has never been answered: the lookup is then queued (once) and a later
  // call finds it. An IP literal is its own answer.
  std::optional<std::string> Lookup(const std::string& host);

  // Lookups finished since construction (for tests and metrics).
  uint64_t lookups() const;
  // Hosts in the cache now (at most max_entries).
  size_t cached() const;

 private:
  struct Entry {
    std::string address;
    int64_t expires_ms = 0;
    bool answered = false;  // false: the first lookup is in progress or queued
    bool queued = false;    // a lookup (first or refresh) is queued or running
  };
  void Queue(const std::string& host, Entry& entry);  // mutex held
  void MakeRoomFor(const std::string& host);          // mutex held: drops the cache when full
  void Run();
  void Store(const std::string& host, std::string address);

  HostResolverOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::unordered_map<std::string, Entry> cache_;
  std::deque<std::string> queue_;
  uint64_t lookups_ = 0;
  size_t idle_ = 0;  // threads waiting for a host
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpool::worker
