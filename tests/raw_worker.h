// RawWorker: one connection to a coordinator's worker port, authenticated
// with a key of the LocalCluster's, that sends a frame and reads its reply;
// FakeNode: a node spec with `gpus` GPUs. For tests that act as a worker (a
// stranger, a forger) without running gpool-worker.
#pragma once

#include <chrono>
#include <string>

#include <zmq.hpp>

#include "protocol/envelope.h"
#include "protocol/messages_worker.h"
#include "tests/local_cluster.h"

namespace gpool::testing {

class RawWorker {
 public:
  RawWorker(LocalCluster& cluster, const std::string& key_name) : socket_(context_, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    cluster.SecureSocket(socket_, key_name);
    socket_.connect(cluster.worker_endpoint());
  }
  template <typename T>
  Result<Envelope> Ask(const T& body) {
    socket_.send(zmq::buffer(EncodeEnvelope(Header{.request_id = ++id_}, body)), zmq::send_flags::none);
    while (true) {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(10'000)) == 0) return Status::DeadlineExceeded("no reply");
      zmq::message_t reply;
      if (!socket_.recv(reply)) return Status::Unavailable("recv failed");
      auto envelope = DecodeEnvelope(reply.to_string_view());
      if (!envelope.ok() || envelope->header().request_id == id_) return envelope;
    }
  }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_;
  uint64_t id_ = 0;
};

inline NodeSpec FakeNode(const std::string& name, uint32_t gpus) {
  NodeSpec node;
  node.name = name;
  node.cpu_milli = 32000;
  node.memory_mib = 1 << 18;
  for (uint32_t i = 0; i < gpus; ++i) node.gpus.push_back(GpuInfo{.index = i, .uuid = "fake-" + std::to_string(i)});
  return node;
}

}  // namespace gpool::testing
