#include "protocol/security/zap_handler.h"

#include <array>
#include <vector>

#include <spdlog/spdlog.h>

#include "protocol/security/keys.h"

namespace gpool::security {
namespace {

// One per process is enough to keep stop pipes of several handlers (tests
// run several contexts) apart.
std::atomic<uint64_t> g_pipe_serial{0};

}  // namespace

ZapHandler::ZapHandler(zmq::context_t& context, Authorizer authorizer)
    : authorizer_(std::move(authorizer)), socket_(context, zmq::socket_type::rep),
      stop_send_(context, zmq::socket_type::pair), stop_recv_(context, zmq::socket_type::pair) {}

Result<std::unique_ptr<ZapHandler>> ZapHandler::Start(zmq::context_t& context, Authorizer authorizer) {
  if (!CurveAvailable()) return Status::Unavailable("libzmq was built without CURVE (libsodium)");
  std::unique_ptr<ZapHandler> handler(new ZapHandler(context, std::move(authorizer)));
  const std::string pipe = "inproc://gpool-zap-stop-" + std::to_string(g_pipe_serial.fetch_add(1));
  try {
    for (auto* socket : {&handler->socket_, &handler->stop_send_, &handler->stop_recv_}) {
      socket->set(zmq::sockopt::linger, 0);
    }
    handler->socket_.bind(kZapEndpoint);
    handler->stop_recv_.bind(pipe);
    handler->stop_send_.connect(pipe);
  } catch (const zmq::error_t& e) {
    return Status::Unavailable(std::string("cannot bind the ZAP handler at ") + kZapEndpoint + ": " + e.what() +
                               " (is another handler running in this context?)");
  }
  // The sockets move to the thread here; starting a thread is the full
  // memory barrier ZeroMQ asks for when a socket changes threads.
  handler->thread_ = std::thread([h = handler.get()] { h->Run(); });
  return handler;
}

ZapHandler::~ZapHandler() {
  if (thread_.joinable()) {
    stop_send_.send(zmq::str_buffer("$TERM"), zmq::send_flags::none);
    thread_.join();
    // Unbound at once (closing unbinds only later, on ZeroMQ's reaper
    // thread), so a handler started next in this context can bind.
    try {
      socket_.unbind(kZapEndpoint);
    } catch (const zmq::error_t&) {
    }
  }
  socket_.close();
  stop_recv_.close();
  stop_send_.close();
}

void ZapHandler::Run() {
  std::array<zmq::pollitem_t, 2> items = {{{socket_.handle(), 0, ZMQ_POLLIN, 0},
                                           {stop_recv_.handle(), 0, ZMQ_POLLIN, 0}}};
  while (true) {
    try {
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(-1));
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      if (e.num() != ETERM) spdlog::error("zap handler stopped error=\"{}\"", e.what());
      return;
    }
    if (items[1].revents & ZMQ_POLLIN) return;
    if (items[0].revents & ZMQ_POLLIN) {
      try {
        Answer();
      } catch (const zmq::error_t& e) {
        if (e.num() == ETERM) return;
        spdlog::warn("zap request failed error=\"{}\"", e.what());
      }
    }
  }
}

void ZapHandler::Answer() {
  std::vector<zmq::message_t> frames;
  do {
    zmq::message_t frame;
    if (!socket_.recv(frame, zmq::recv_flags::none)) return;
    frames.push_back(std::move(frame));
  } while (socket_.get(zmq::sockopt::rcvmore));

  auto reply = [&](std::string_view request_id, std::string_view code, std::string_view text,
                   std::string_view user_id) {
    socket_.send(zmq::str_buffer("1.0"), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(request_id), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(code), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(text), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(user_id), zmq::send_flags::sndmore);
    socket_.send(zmq::str_buffer(""), zmq::send_flags::none);  // metadata: none
  };
  // RFC 27: version, request id, domain, address, identity, mechanism,
  // credentials (CURVE: one, the client's 32-byte public key).
  const std::string_view request_id = frames.size() >= 2 ? frames[1].to_string_view() : std::string_view();
  if (frames.size() != 7 || frames[0].to_string_view() != "1.0" || frames[5].to_string_view() != "CURVE" ||
      frames[6].size() != 32) {
    malformed_.fetch_add(1);
    refused_.fetch_add(1);
    spdlog::warn("zap request refused: malformed frames={} mechanism={}", frames.size(),
                 frames.size() > 5 ? std::string(frames[5].to_string_view()) : std::string("-"));
    return reply(request_id, frames.size() >= 1 && frames[0].to_string_view() == "1.0" ? "400" : "500",
                 "malformed ZAP request or mechanism not CURVE", "");
  }
  std::array<char, kZ85KeyChars + 1> key{};
  zmq_z85_encode(key.data(), static_cast<const uint8_t*>(frames[6].data()), 32);
  const std::string_view domain = frames[2].to_string_view();
  const std::string_view address = frames[3].to_string_view();
  std::optional<std::string> user_id = authorizer_(domain, key.data());
  if (!user_id.has_value()) {
    refused_.fetch_add(1);
    spdlog::warn("connection refused at the handshake domain={} address={} key={}", domain, address, key.data());
    return reply(request_id, "400", "key not admitted in this domain", "");
  }
  admitted_.fetch_add(1);
  spdlog::debug("connection admitted domain={} address={} user_id={}", domain, address, *user_id);
  reply(request_id, "200", "OK", *user_id);
}

}  // namespace gpool::security
