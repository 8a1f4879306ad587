// gpool-rgpu-server against a raw ZeroMQ client holding the owner's key:
// malformed, oversized and hostile requests get an error reply (or, above
// the frame limit, a dropped connection) and never crash the server, which
// then still serves a well-formed call. And how it tells the worker its
// port: the endpoint file names the port it bound and serves on.
#include <netinet/in.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "protocol/security/curve_socket.h"
#include "worker/cuda/cuda_driver_api.h"
#include "worker/rgpu/rgpu_test_support.h"
#include "worker/rgpu/wire.h"

namespace gpool::rgpu {
namespace {

using testing::ServerArgs;
using testing::ServerProcess;
using testing::SessionKeys;

struct RawReply {
  bool answered = false;
  std::uint64_t id = 0;
  CUresult result = -1;
};

class RawClient {
 public:
  RawClient(const SessionKeys& keys, const std::string& endpoint) : socket_(context_, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    EXPECT_TRUE(security::MakeCurveClient(socket_, keys.owner(), keys.server().public_key).ok());
    socket_.connect(endpoint);
  }

  RawReply Send(const std::vector<std::string>& frames, int timeout_ms = 10000) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
      socket_.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    RawReply reply;
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms)) == 0) return reply;
    std::vector<zmq::message_t> parts;
    (void)zmq::recv_multipart(socket_, std::back_inserter(parts));
    Reader header(parts[0].data(), parts[0].size());
    header.U8();
    header.U8();
    reply.answered = true;
    reply.id = header.U64();
    reply.result = header.I32();
    return reply;
  }

 private:
  zmq::context_t context_;
  zmq::socket_t socket_;
};

std::string Header(std::uint64_t id, std::uint32_t calls, std::uint8_t version = kWireVersion) {
  Writer w;
  w.U8(version);
  w.U8(kRequest);
  w.U64(id);
  w.U32(calls);
  return w.bytes();
}

std::string Call(Op op, std::uint32_t data_frames = 0, const std::string& args = "") {
  Writer w;
  w.U16(static_cast<std::uint16_t>(op));
  w.U64(0);
  w.U32(data_frames);
  return w.bytes() + args;
}

TEST(RgpuServer, MalformedRequestsGetAnErrorAndTheServerLivesOn) {
  SessionKeys keys;
  ServerProcess server;
  ASSERT_TRUE(server.Start(ServerArgs(keys, keys.owner().public_key, 60000), {}));
  RawClient client(keys, server.endpoint());

  Writer dtoh_huge;
  dtoh_huge.U64(0x1234);
  dtoh_huge.U64(std::uint64_t{1} << 40);
  Writer htod_wild;
  htod_wild.U64(0x1000);  // not an allocation of this session
  htod_wild.U64(0);
  htod_wild.U8(0);
  Writer launch_unknown;
  launch_unknown.U64(0xdead);
  for (int i = 0; i < 7; ++i) launch_unknown.U32(1);
  launch_unknown.U64(0);
  launch_unknown.Bytes("xyz");
  Writer name_huge;
  name_huge.U32(1u << 30);
  name_huge.I32(0);

  const std::vector<std::vector<std::string>> hostile = {
      {"garbage"},
      {Header(2, 1, /*version=*/99), Call(Op::kDriverGetVersion)},
      {Header(3, 1)},                                  // a call announced, none sent
      {Header(4, 0), Call(Op::kDriverGetVersion)},     // no calls
      {Header(5, 5000), Call(Op::kDriverGetVersion)},  // above the call limit
      {Header(6, 1), Call(static_cast<Op>(9999))},     // unknown op
      {Header(7, 1), Call(Op::kMemFree)},              // arguments missing
      {Header(8, 1), Call(Op::kMemcpyDtoH, 0, dtoh_huge.bytes())},
      {Header(9, 1), Call(Op::kMemcpyHtoD, 1, htod_wild.bytes()), std::string(4096, 'x')},
      {Header(10, 1), Call(Op::kMemcpyHtoD, 7, htod_wild.bytes()), "only one data frame"},
      {Header(11, 1), Call(Op::kLaunchKernel, 0, launch_unknown.bytes())},
      {Header(12, 1), Call(Op::kDeviceGetName, 0, name_huge.bytes())},
      {Header(13, 1), Call(Op::kModuleLoad, 0, std::string(1, '\0'))},  // no image
      {Header(14, 1), Call(Op::kCtxDestroy, 0, std::string(8, '\x7f'))},
      {Header(17, 2), Call(Op::kMemAlloc, 0, std::string(12, '\x01')), Call(Op::kDriverGetVersion)},  // not batchable
  };
  for (std::size_t i = 0; i < hostile.size(); ++i) {
    const RawReply reply = client.Send(hostile[i]);
    EXPECT_TRUE(reply.answered) << "request " << i;
    EXPECT_NE(reply.result, CUDA_SUCCESS) << "request " << i;
  }

  // A frame above the limit: libzmq drops the connection (no reply), and a
  // new connection is served.
  {
    RawClient oversize(keys, server.endpoint());
    EXPECT_FALSE(
        oversize
            .Send({Header(15, 1), Call(Op::kModuleLoad, 1, std::string(1, '\0')), std::string(kMaxFrameBytes + 1, 'x')},
                  1000)
            .answered);
  }
  RawClient fresh(keys, server.endpoint());
  const RawReply ok = fresh.Send({Header(16, 1), Call(Op::kDriverGetVersion)});
  EXPECT_TRUE(ok.answered);
  EXPECT_EQ(ok.id, 16u);
  EXPECT_EQ(ok.result, CUDA_SUCCESS);

  server.Signal(SIGTERM);
  const auto end = server.WaitExit(30);
  EXPECT_TRUE(end.exited);
  EXPECT_EQ(end.code, 0);
}

// The worker no longer picks the port (issue 47): the server binds one of
// its own choice and the file it writes names exactly that one, the port a
// client is then served on and no one else can bind.
TEST(RgpuServer, TheEndpointFileNamesThePortItBoundAndServesOn) {
  SessionKeys keys;
  const std::string file = keys.dir() + "/1.0.0.rgpu.endpoint";
  std::vector<std::string> args = ServerArgs(keys, keys.owner().public_key, 60000);
  args.insert(args.end(), {"--endpoint-file", file});
  ServerProcess server;
  ASSERT_TRUE(server.Start(args, {}));
  // Written before the ready line, whole, with no temporary file left.
  const std::string reported = testing::ReadFile(file);
  EXPECT_EQ(reported, server.endpoint() + "\n");
  EXPECT_FALSE(std::filesystem::exists(file + ".tmp"));
  const std::string endpoint = reported.substr(0, reported.size() - 1);
  const std::string prefix = "tcp://127.0.0.1:";
  ASSERT_EQ(endpoint.rfind(prefix, 0), 0u) << endpoint;
  const int port = std::stoi(endpoint.substr(prefix.size()));
  ASSERT_GT(port, 0);

  const int probe = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_NE(bind(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << "the server holds port " << port;
  close(probe);

  RawClient client(keys, endpoint);
  const RawReply ok = client.Send({Header(1, 1), Call(Op::kDriverGetVersion)});
  EXPECT_TRUE(ok.answered);
  EXPECT_EQ(ok.result, CUDA_SUCCESS);
  server.Signal(SIGTERM);
  EXPECT_EQ(server.WaitExit(30).code, 0);
}

// A server that cannot tell the worker where it listens would serve nobody:
// it does not start (exit 2, the reason on stderr).
TEST(RgpuServer, AServerThatCannotWriteItsEndpointFileDoesNotStart) {
  SessionKeys keys;
  std::vector<std::string> args = ServerArgs(keys, keys.owner().public_key, 60000);
  args.insert(args.end(), {"--endpoint-file", keys.dir() + "/missing/1.0.0.rgpu.endpoint"});
  ServerProcess server;
  EXPECT_FALSE(server.Start(args, {}));
  const auto end = server.WaitExit(30);
  EXPECT_TRUE(end.exited);
  EXPECT_EQ(end.code, 2);
}

}  // namespace
}  // namespace gpool::rgpu
