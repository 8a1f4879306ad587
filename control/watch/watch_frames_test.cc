// Frames assembled from items encoded once (watch_frames.h) must be the very
// bytes that encoding the WatchUpdate gives: clients (the CLI, the Python
// SDK) decode them as before, so any difference here is a wire change.
#include "control/watch/watch_frames.h"

#include <gtest/gtest.h>

#include "control/frames.h"
#include "protocol/envelope.h"
#include "protocol/messages_watch.h"

namespace gpool::control {
namespace {

WatchItems WatchFramesSomeItems() {
  WatchItems items;
  JobSummary job;
  job.job_id = 7;
  job.name = "train";
  job.queue = "research";
  job.state = "Running";
  job.tasks_total = 2;
  job.tasks_running = 2;
  job.start_ms = 1'700'000'000'000;
  job.reason = std::string(300, 'r');  // past msgpack's short string forms
  items.jobs.push_back(job);
  job.job_id = 1ULL << 40;
  job.state = "Pending";
  items.jobs.push_back(job);
  NodeSummary node;
  node.name = "n0";
  node.state = "Ready,Cordoned";
  node.cordoned = true;
  node.gpus_total = 8;
  node.labels = {{"rack", "r1"}};
  items.nodes.push_back(node);
  return items;
}

std::vector<std::string> WatchFramesEncodeEach(const auto& items) {
  std::vector<std::string> out;
  for (const auto& item : items) out.push_back(EncodeWatchItem(item));
  return out;
}

std::vector<std::string_view> WatchFramesViews(const std::vector<std::string>& encoded) {
  return {encoded.begin(), encoded.end()};
}

TEST(WatchFramesTest, AFrameFromEncodedItemsIsTheEncodedUpdateByteForByte) {
  const WatchItems items = WatchFramesSomeItems();
  const std::vector<std::string> jobs = WatchFramesEncodeEach(items.jobs);
  const std::vector<std::string> nodes = WatchFramesEncodeEach(items.nodes);
  const std::string block = EncodeWatchItemsBlock(WatchFramesViews(jobs), WatchFramesViews(nodes));
  // Numbers of every msgpack width: fixint, uint8/16/32/64.
  for (uint64_t number : {uint64_t{1}, uint64_t{200}, uint64_t{70'000}, uint64_t{5'000'000'000}}) {
    for (uint64_t epoch : {uint64_t{0}, uint64_t{3}, uint64_t{1} << 33}) {
      WatchUpdate update;
      update.watch_id = number;
      update.seq = number + 1;
      update.position = number * 3;
      update.items = items;
      const std::string want = MakeFrame(0, epoch, update);
      EXPECT_EQ(WatchUpdateEncoder(epoch).Frame(update.watch_id, update.seq, update.position, block), want)
          << "number=" << number << " epoch=" << epoch;
    }
  }
}

TEST(WatchFramesTest, EmptyListsAndEventsMatchToo) {
  WatchUpdate update;
  update.watch_id = 4;
  update.seq = 9;
  update.position = 12;
  EXPECT_EQ(WatchUpdateEncoder(2).Frame(4, 9, 12, EncodeWatchItemsBlock({}, {})), MakeFrame(0, 2, update));

  ClusterEvent event;
  event.seq = 31;
  event.kind = "node-cordoned";
  event.node = "n0";
  event.message = "cordoned by alice";
  update.items.events = {event, event};
  update.items.events[1].seq = 32;
  const std::string frame = WatchUpdateEncoder(2).Frame(4, 9, 12, EncodeWatchItemsBlock({}, {}, update.items.events));
  EXPECT_EQ(frame, MakeFrame(0, 2, update));

  // And it decodes as a WatchUpdate with everything in place.
  auto envelope = DecodeEnvelope(frame);
  ASSERT_TRUE(envelope.ok()) << envelope.status().ToString();
  EXPECT_EQ(envelope->header().request_id, 0u);
  EXPECT_EQ(envelope->header().epoch, 2u);
  auto body = envelope->Body<WatchUpdate>();
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(body->watch_id, 4u);
  EXPECT_EQ(body->seq, 9u);
  ASSERT_EQ(body->items.events.size(), 2u);
  EXPECT_EQ(body->items.events[1].seq, 32u);
}

}  // namespace
}  // namespace gpool::control
