#include "worker/rgpu/server/chunk_pool.h"

#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "worker/rgpu/wire.h"

namespace gpool::rgpu {
namespace {

TEST(ChunkPoolTest, ASentChunkIsReusedForTheNextCopy) {
  ChunkPool pool(2);
  const void* first = nullptr;
  {
    zmq::message_t chunk = pool.Take(kChunkBytes);
    ASSERT_EQ(chunk.size(), kChunkBytes);
    first = chunk.data();
    EXPECT_EQ(pool.idle(), 0u);
  }
  EXPECT_EQ(pool.idle(), 1u);
  zmq::message_t again = pool.Take(100);  // shorter: the last chunk of a copy
  EXPECT_EQ(again.size(), 100u);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(pool.idle(), 0u);
}

TEST(ChunkPoolTest, KeepsAtMostItsLimit) {
  ChunkPool pool(2);
  {
    std::vector<zmq::message_t> reply;
    for (int i = 0; i < 5; ++i) reply.push_back(pool.Take(kChunkBytes));
  }
  EXPECT_EQ(pool.idle(), 2u);
}

TEST(ChunkPoolTest, AboveAChunkIsAPlainMessageNotKept) {
  ChunkPool pool(2);
  { zmq::message_t big = pool.Take(kChunkBytes + 1); EXPECT_EQ(big.size(), kChunkBytes + 1); }
  EXPECT_EQ(pool.idle(), 0u);
}

// ZeroMQ frees sent chunks on its I/O thread while the loop takes more.
TEST(ChunkPoolTest, ChunksComeBackFromAnotherThread) {
  ChunkPool pool(4);
  for (int round = 0; round < 200; ++round) {
    std::vector<zmq::message_t> reply;
    for (int i = 0; i < 3; ++i) reply.push_back(pool.Take(4096));
    std::thread sender([reply = std::move(reply)]() mutable { reply.clear(); });
    zmq::message_t meanwhile = pool.Take(4096);
    sender.join();
  }
  EXPECT_LE(pool.idle(), 4u);
  EXPECT_GE(pool.idle(), 3u);
}

// Through a real socket pair: the bytes arrive intact and the buffer is
// back once ZeroMQ has sent it.
TEST(ChunkPoolTest, ASentMessageReturnsItsBuffer) {
  ChunkPool pool(1);
  zmq::context_t context;
  zmq::socket_t out(context, zmq::socket_type::pair);
  zmq::socket_t in(context, zmq::socket_type::pair);
  in.bind("inproc://chunks");
  out.connect("inproc://chunks");
  zmq::message_t chunk = pool.Take(64);
  std::memset(chunk.data(), 0x5a, 64);
  ASSERT_TRUE(out.send(chunk, zmq::send_flags::none));
  zmq::message_t got;
  ASSERT_TRUE(in.recv(got));
  ASSERT_EQ(got.size(), 64u);
  EXPECT_EQ(static_cast<const unsigned char*>(got.data())[63], 0x5a);
  got.rebuild();  // inproc passes the buffer itself: dropping it gives it back
  EXPECT_EQ(pool.idle(), 1u);
}

}  // namespace
}  // namespace gpool::rgpu
