#include "worker/runner/host_resolver.h"

#include <utility>

#include "protocol/validate.h"

namespace gpool::worker {

HostResolver::HostResolver(HostResolverOptions options) : options_(std::move(options)) {}

HostResolver::~HostResolver() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

std::optional<std::string> HostResolver::Lookup(const std::string& host) {
  if (IsIpAddress(host)) return host;
  if (options_.threads == 0) {
    // Inline: the caller asked for a fake, synchronous resolver.
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(host);
      if (it != cache_.end() && options_.clock->MonoMs() < it->second.expires_ms) return it->second.address;
    }
    Store(host, options_.resolve(host));
  }
  std::lock_guard<std::mutex> lock(mu_);
  MakeRoomFor(host);
  Entry& entry = cache_[host];
  if (!entry.answered) {
    if (!entry.queued) Queue(host, entry);
    return std::nullopt;
  }
  // Past its time: still the answer now, and fetched again for next time.
  if (options_.clock->MonoMs() >= entry.expires_ms && !entry.queued) Queue(host, entry);
  return entry.address;
}

void HostResolver::Queue(const std::string& host, Entry& entry) {
  if (options_.threads == 0) return;
  entry.queued = true;
  queue_.push_back(host);
  // Threads start with the first lookups: a worker whose nodes all
  // advertise their addresses never has one.
  if (threads_.size() < static_cast<size_t>(options_.threads) && queue_.size() > idle_) {
    threads_.emplace_back([this] { Run(); });
  }
  wake_.notify_one();
}

uint64_t HostResolver::lookups() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lookups_;
}

void HostResolver::MakeRoomFor(const std::string& host) {
  if (cache_.size() < options_.max_entries || cache_.count(host)) return;
  // Hosts queued now are looked up all the same and stored again.
  std::erase_if(cache_, [](const auto& item) { return !item.second.queued; });
}

size_t HostResolver::cached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

void HostResolver::Store(const std::string& host, std::string address) {
  std::lock_guard<std::mutex> lock(mu_);
  MakeRoomFor(host);
  ++lookups_;
  Entry& entry = cache_[host];
  entry.expires_ms = options_.clock->MonoMs() + (address.empty() ? options_.negative_ttl_ms : options_.ttl_ms);
  entry.address = std::move(address);
  entry.answered = true;
  entry.queued = false;
}

void HostResolver::Run() {
  for (;;) {
    std::string host;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++idle_;
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      --idle_;
      if (stopping_) return;
      host = std::move(queue_.front());
      queue_.pop_front();
    }
    Store(host, options_.resolve(host));
  }
}

}  // namespace gpool::worker
