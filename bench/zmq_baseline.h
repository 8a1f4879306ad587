// The raw ZeroMQ baseline the network benches print beside their numbers:
// a DEALER/ROUTER echo of a 200-byte message on loopback, in microseconds.
#pragma once

#include <atomic>
#include <chrono>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

namespace gpool::bench {

inline std::vector<double> ZmqRoundTripUs(double seconds) {
  std::vector<double> us;
  zmq::context_t context;
  zmq::socket_t router(context, zmq::socket_type::router);
  router.bind("tcp://127.0.0.1:*");
  const std::string endpoint = router.get(zmq::sockopt::last_endpoint);
  std::atomic<bool> stop{false};
  std::thread echo([&] {
    zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
    while (!stop) {
      if (zmq::poll(&item, 1, std::chrono::milliseconds(50)) == 0) continue;
      std::vector<zmq::message_t> parts;
      if (!zmq::recv_multipart(router, std::back_inserter(parts))) continue;
      zmq::send_multipart(router, parts);
    }
  });
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(endpoint);
  std::string payload(200, 'x');
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    const auto start = std::chrono::steady_clock::now();
    dealer.send(zmq::buffer(payload), zmq::send_flags::none);
    zmq::message_t reply;
    if (!dealer.recv(reply)) break;
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  stop = true;
  echo.join();
  return us;
}

}  // namespace gpool::bench
