// gpool-bench-memory's ZeroMQ part: what the coordinator's worker socket
// holds per connected worker, measured against DEALERs in child processes.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <zmq.hpp>

namespace gpool::bench {

// Bytes a ROUTER socket holds per connected DEALER (what the coordinator's
// worker socket pays per node): after each DEALER's first heartbeat, and
// after `exchanges` heartbeats and replies more on every connection, as a
// node that has been up a while. The second is what a coordinator settles at:
// libzmq's pipes grow in chunks of 256 messages (16 KB) and keep a spare
// chunk once a pipe has wrapped one, in each direction, so a connection's
// cost rises for its first few hundred messages and is then flat (a
// coordinator with 12,500 nodes grows by this for the first minutes at 1 s
// heartbeats; it is not a leak). The DEALERs live in child processes, so only
// the ROUTER side is in this process's RSS; each DEALER costs its process two
// descriptors (the connection and the socket's mailbox), hence several
// children under `ulimit -n`. {0, 0} when it cannot be measured.
// `resident_bytes`: the process's RSS (after malloc_trim) at a reading.
struct ConnectionBytes {
  double first = 0;   // after one heartbeat
  double steady = 0;  // after `exchanges` heartbeats and replies more
};

inline ConnectionBytes BytesPerConnection(int64_t connections, int64_t exchanges,
                                          const std::function<size_t()>& resident_bytes) {
  constexpr int64_t kPerChild = 6000;
  const std::string heartbeat(160, 'h');  // a heartbeat's size
  const std::string reply(96, 'r');       // a heartbeat reply's size
  zmq::context_t context(1);
  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::sndhwm, 100'000);  // as the coordinator's (frame_intake.cc)
  router.set(zmq::sockopt::rcvhwm, 100'000);
  router.bind("tcp://127.0.0.1:*");
  const std::string endpoint = router.get(zmq::sockopt::last_endpoint);
  int go[2];
  int start_exchanges[2];
  if (pipe(go) != 0) return {};
  if (pipe(start_exchanges) != 0) return {};
  std::fflush(stdout);  // or the children would print the parent's buffered lines again
  const size_t before = resident_bytes();
  std::vector<pid_t> children;
  for (int64_t first = 0; first < connections; first += kPerChild) {
    const int64_t count = std::min(kPerChild, connections - first);
    const pid_t child = fork();
    if (child < 0) break;
    if (child > 0) {
      children.push_back(child);
      continue;
    }
    close(go[1]);
    close(start_exchanges[1]);
    try {
      zmq::context_t dealers_context(1);
      dealers_context.set(zmq::ctxopt::max_sockets, static_cast<int>(count) + 16);
      std::vector<zmq::socket_t> dealers;
      dealers.reserve(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) {
        dealers.emplace_back(dealers_context, zmq::socket_type::dealer);
        dealers.back().set(zmq::sockopt::linger, 0);
        dealers.back().connect(endpoint);
        dealers.back().send(zmq::buffer(heartbeat), zmq::send_flags::none);
      }
      char byte;
      // Exchanges start once the parent has taken the first reading.
      if (read(start_exchanges[0], &byte, 1) == 1) {
        for (int64_t round = 0; round < exchanges; ++round) {
          for (auto& dealer : dealers) dealer.send(zmq::buffer(heartbeat), zmq::send_flags::none);
          for (auto& dealer : dealers) {
            zmq::message_t answer;
            if (!dealer.recv(answer)) _exit(1);
          }
        }
      }
      (void)!read(go[0], &byte, 1);  // hold the connections until the parent has measured
    } catch (const zmq::error_t&) {
    }
    _exit(0);
  }
  close(go[0]);
  close(start_exchanges[0]);
  router.set(zmq::sockopt::rcvtimeo, 30'000);
  const auto receive_round = [&](bool answer) {
    int64_t received = 0;
    while (received < connections) {
      zmq::message_t identity, body;
      if (!router.recv(identity) || !router.recv(body)) break;
      ++received;
      if (answer) {
        router.send(identity, zmq::send_flags::sndmore);
        router.send(zmq::buffer(reply), zmq::send_flags::none);
      }
    }
    return received == connections;
  };
  ConnectionBytes bytes;
  bool arrived = receive_round(false);
  const size_t after_first = resident_bytes();
  if (exchanges > 0 && arrived) {
    // One byte per child: each starts its rounds.
    const std::string starts(children.size(), 'x');
    (void)!write(start_exchanges[1], starts.data(), starts.size());
    for (int64_t round = 0; round < exchanges && arrived; ++round) arrived = receive_round(true);
  }
  close(start_exchanges[1]);
  const size_t after_exchanges = resident_bytes();
  close(go[1]);  // every child's read returns
  for (pid_t child : children) waitpid(child, nullptr, 0);
  if (!arrived) {
    std::fprintf(stderr, "the worker connections' heartbeats did not all arrive\n");
    return {};
  }
  const double n = static_cast<double>(connections);
  bytes.first = (static_cast<double>(after_first) - static_cast<double>(before)) / n;
  bytes.steady = (static_cast<double>(after_exchanges) - static_cast<double>(before)) / n;
  return bytes;
}

}  // namespace gpool::bench
