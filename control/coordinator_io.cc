// The coordinator's sockets, frames in and out (coordinator.h): clients'
// and workers' frames go to the gateway and the node registry, each client
// connection counted against its key's limit first (client_monitor.h); and
// the endpoints file that tells tests and scripts the ports bound.
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "control/client_monitor.h"
#include "control/coordinator.h"
#include "control/endpoints_file.h"
#include "control/frame_intake.h"
#include "control/frames.h"
#include "protocol/envelope_peek.h"

namespace gpool::control {
namespace {

constexpr int kMaxFramesPerDrain = 1000;

}  // namespace

void Coordinator::WriteEndpoints() {
  // Tests and scripts that ask for ephemeral ports read them from here. A
  // full disk must not stop the coordinator: the file is written again once
  // the data dir takes writes.
  std::vector<std::pair<std::string, std::string>> ports = {{"client", client_endpoint_}, {"worker", worker_endpoint_}};
  if (peers_) ports.emplace_back("peer", peers_->listen_endpoint());
  if (http_) ports.emplace_back("http", http_->address());
  Status written = WriteEndpointsFile(options_.data_dir, ports);
  endpoints_written_ = written.ok();
  if (!written.ok()) {
    spdlog::warn("endpoints file not written; retried once the data dir takes writes error=\"{}\"",
                 written.ToString());
  }
}

void Coordinator::ToClient(const std::string& peer, std::string frame) {
  if (bridge_ && bridge_->Deliver(peer, frame)) return;  // an HTTP request's reply
  clients_.send(zmq::buffer(peer), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  clients_.send(zmq::buffer(frame), zmq::send_flags::dontwait);
}

void Coordinator::ToWorker(const std::string& peer, std::string frame) {
  workers_.send(zmq::buffer(peer), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  workers_.send(zmq::buffer(frame), zmq::send_flags::dontwait);
}

void Coordinator::Drain(zmq::socket_t& socket, bool from_clients) {
  DrainRouter(
      socket, kMaxFramesPerDrain,
      [&](const std::string& peer, std::string_view bytes, const Principal& sender, int fd) {
        const int64_t now = options_.clock->MonoMs();
        if (!from_clients) return registry_->OnFrame(peer, bytes, now, sender);
        if (client_monitor_) {
          Status admitted = client_monitor_->Admit(
              fd, peer, sender.key, [&] { return gateway_->IsAdminPrincipal(sender); }, now,
              [&](const std::string& closed) { gateway_->PeerClosed(closed); });
          if (!admitted.ok()) {
            return ToClient(peer, MakeError(PeekRequestId(bytes).value_or(0), tracker_->epoch(), admitted));
          }
        }
        gateway_->OnFrame(peer, bytes, now, sender);
      },
      [&](const std::string& peer, const Status& why) {
        std::string error = MakeError(0, tracker_->epoch(), why);
        from_clients ? ToClient(peer, std::move(error)) : ToWorker(peer, std::move(error));
      });
}

}  // namespace gpool::control
