#include "worker/rgpu/server/chunk_pool.h"

#include "worker/rgpu/wire.h"

namespace gpool::rgpu {

zmq::message_t ChunkPool::Take(std::size_t bytes) {
  if (bytes > kChunkBytes) return zmq::message_t(bytes);
  std::unique_ptr<char[]> buffer;
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      buffer = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  // Not zeroed: the driver's copy overwrites the `bytes` that are sent.
  if (!buffer) buffer.reset(new char[kChunkBytes]);
  return zmq::message_t(buffer.release(), bytes, &ChunkPool::GiveBack, this);
}

std::size_t ChunkPool::idle() const {
  std::lock_guard lock(mu_);
  return idle_.size();
}

void ChunkPool::GiveBack(void* data, void* pool) {
  std::unique_ptr<char[]> buffer(static_cast<char*>(data));
  auto* self = static_cast<ChunkPool*>(pool);
  std::lock_guard lock(self->mu_);
  if (self->idle_.size() < self->keep_) self->idle_.push_back(std::move(buffer));
}

}  // namespace gpool::rgpu
