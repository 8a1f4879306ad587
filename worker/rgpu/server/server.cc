#include "worker/rgpu/server/server.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <chrono>
#include <iterator>

#include <zmq_addon.hpp>

#include "protocol/security/curve_socket.h"

namespace gpool::rgpu {

namespace {

using Clock = std::chrono::steady_clock;

// Why a request was refused before any of its calls ran, for the log.
const char* Malformed(const std::vector<zmq::message_t>& frames, Reader& header) {
  if (frames.size() < 3) return "too_few_frames";
  if (frames.size() > kMaxFramesPerRequest + 1) return "too_many_frames";
  if (header.U8() != kWireVersion) return "wrong_version";
  if (header.U8() != kRequest) return "not_a_request";
  return nullptr;
}

}  // namespace

Server::Server(const ServerOptions& options, std::unique_ptr<Driver> driver)
    : options_(options),
      log_(options.logger ? options.logger : spdlog::default_logger()),
      driver_(std::move(driver)),
      chunks_(kKeptReplyChunks),
      session_(*driver_, chunks_),
      socket_(context_, zmq::socket_type::router) {}

Server::~Server() {
  session_.Release();
  socket_.close();
  zap_.reset();
}

Result<std::unique_ptr<Server>> Server::Open(const ServerOptions& options, std::unique_ptr<Driver> driver) {
  if (!security::IsZ85Key(options.owner_key)) {
    return Status::InvalidArgument("--owner-key is not a 40-character Z85 public key");
  }
  if (options.idle_timeout_ms <= 0) return Status::InvalidArgument("--idle-timeout-ms must be positive");
  std::unique_ptr<Server> server(new Server(options, std::move(driver)));
  const std::string owner = options.owner_key;
  auto zap = security::ZapHandler::Start(
      server->context_, [owner](std::string_view domain, std::string_view key) -> std::optional<std::string> {
        if (domain == kZapDomain && key == owner) return std::string("owner");
        return std::nullopt;
      });
  if (!zap.ok()) return zap.status();
  server->zap_ = std::move(zap).value();
  if (Status s = security::MakeCurveServer(server->socket_, options.own, kZapDomain); !s.ok()) return s;
  server->socket_.set(zmq::sockopt::linger, 0);
  server->socket_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(kMaxFrameBytes));
  try {
    server->socket_.bind(options.endpoint);
  } catch (const zmq::error_t& e) {
    return Status::Unavailable("cannot bind " + options.endpoint + ": " + e.what());
  }
  server->endpoint_ = server->socket_.get(zmq::sockopt::last_endpoint);
  return server;
}

ServerEnd Server::Run() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  const int signal_fd = signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);
  ServerEnd end = ServerEnd::kIdle;
  auto last_request = Clock::now();
  const auto idle = std::chrono::milliseconds(options_.idle_timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(last_request + idle - Clock::now());
    if (left.count() <= 0) {
      log_->info("rgpu session idle idle_timeout_ms={} requests={}", options_.idle_timeout_ms, requests_);
      break;
    }
    zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, signal_fd, ZMQ_POLLIN, 0}};
    zmq::poll(items, signal_fd >= 0 ? 2 : 1, left);
    if (signal_fd >= 0 && (items[1].revents & ZMQ_POLLIN) != 0) {
      signalfd_siginfo info{};
      (void)!read(signal_fd, &info, sizeof(info));
      log_->info("rgpu session signalled signal={} requests={}", info.ssi_signo, requests_);
      end = ServerEnd::kSignalled;
      break;
    }
    if ((items[0].revents & ZMQ_POLLIN) == 0) continue;
    std::vector<zmq::message_t> frames;
    if (!zmq::recv_multipart(socket_, std::back_inserter(frames), zmq::recv_flags::dontwait)) continue;
    last_request = Clock::now();
    ++requests_;
    HandleMessage(frames);
  }
  if (signal_fd >= 0) close(signal_fd);
  const ReleaseCounts n = session_.Release();
  log_->info(
      "rgpu session released events={} streams={} modules={} allocations={} contexts={} primary_retains={} "
      "malformed_requests={}",
      n.events, n.streams, n.modules, n.allocations, n.contexts, n.primary_retains, malformed_);
  return end;
}

void Server::HandleMessage(std::vector<zmq::message_t>& frames) {
  if (frames.size() < 2) return;  // no routing id and header: nobody to answer
  Reader header(frames[1].data(), frames[1].size());
  const char* malformed = Malformed(frames, header);
  const std::uint64_t id = header.U64();
  const std::uint32_t calls = header.U32();
  if (malformed == nullptr && (!header.ok() || calls == 0 || calls > kMaxCallsPerRequest)) malformed = "bad_header";
  if (malformed != nullptr) {
    ++malformed_;
    log_->warn("rgpu request refused reason={} frames={}", malformed, frames.size());
    Reply(frames[0], header.ok() ? id : 0, CUDA_ERROR_INVALID_VALUE, 0, Writer(), {});
    return;
  }
  const auto refuse = [&](const char* reason, std::uint32_t call, std::uint16_t op) {
    ++malformed_;
    log_->warn("rgpu request refused reason={} call={} op={}", reason, call, op);
    Reply(frames[0], id, CUDA_ERROR_INVALID_VALUE, call, Writer(), {});
  };
  std::size_t at = 2;
  for (std::uint32_t i = 0; i < calls; ++i) {
    if (at >= frames.size()) return refuse("missing_call_frame", i, 0);
    Reader call(frames[at].data(), frames[at].size());
    const std::uint16_t op = call.U16();
    const std::uint64_t context = call.U64();
    const std::uint32_t data_count = call.U32();
    ++at;
    if (!call.ok() || op == 0 || op >= static_cast<std::uint16_t>(Op::kOpEnd) || data_count > frames.size() - at) {
      return refuse("bad_call", i, op);
    }
    // Only the last call has its outputs answered: one with outputs before
    // it would have them dropped (a handle the client never learns).
    if (i + 1 < calls && !IsBatchable(static_cast<Op>(op))) return refuse("not_batchable", i, op);
    std::vector<DataFrame> data;
    for (std::uint32_t k = 0; k < data_count; ++k, ++at) data.push_back({frames[at].data(), frames[at].size()});
    // Bulk chunks are collected and sent with the reply: ZeroMQ hands a
    // multipart message to its I/O thread only once the last part is
    // queued, so sending them earlier would overlap nothing.
    std::vector<zmq::message_t> bulk;
    const BulkSink sink = [&](zmq::message_t& chunk) { bulk.push_back(std::move(chunk)); };
    Writer out;
    const CUresult r = session_.Execute(static_cast<Op>(op), context, call, data, out, sink);
    // Arguments ran short: whatever ran saw zeros, so say so.
    if (!call.ok()) return refuse("short_arguments", i, op);
    if (r != CUDA_SUCCESS) {
      Reply(frames[0], id, r, i, Writer(), {});
      return;
    }
    if (i + 1 == calls) {
      Reply(frames[0], id, r, i, out, std::move(bulk));
      return;
    }
  }
}

void Server::Reply(const zmq::message_t& routing, std::uint64_t id, CUresult result, std::uint32_t index,
                   const Writer& out, std::vector<zmq::message_t> bulk) {
  Writer header;
  header.U8(kWireVersion);
  header.U8(kReply);
  header.U64(id);
  header.I32(result);
  header.U32(index);
  zmq::message_t route(routing.data(), routing.size());
  (void)socket_.send(route, zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  (void)socket_.send(zmq::buffer(header.bytes()), zmq::send_flags::sndmore);
  (void)socket_.send(zmq::buffer(out.bytes()), bulk.empty() ? zmq::send_flags::none : zmq::send_flags::sndmore);
  for (std::size_t i = 0; i < bulk.size(); ++i) {
    (void)socket_.send(bulk[i], i + 1 == bulk.size() ? zmq::send_flags::none : zmq::send_flags::sndmore);
  }
}

}  // namespace gpool::rgpu
