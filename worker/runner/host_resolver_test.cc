// HostResolver (host_resolver.h): lookups never block the caller, each host
// is looked up once per TTL, and a gang task waits for its names without
// holding the loop (issue 46: a 5 s DNS timeout on the loop wedged a fleet).
#include "worker/runner/host_resolver.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "protocol/base/testing/fake_clock.h"
#include "protocol/messages_worker.h"
#include "worker/runner/task_manager.h"
#include "worker/runner/task_manager_test_util.h"
#include "worker/runner/testing/fake_process_launcher.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

// A lookup that blocks until the test releases it: a DNS server that does
// not answer.
class GatedResolve {
 public:
  std::string operator()(const std::string& host) {
    std::unique_lock<std::mutex> lock(mu_);
    ++calls_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
    return host == "gone" ? "" : "10.1.2.3";
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    changed_.notify_all();
  }
  void WaitForCalls(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return calls_ >= n; });
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int calls_ = 0;
  bool open_ = false;
};

// Waits (bounded) until the resolver has finished `n` lookups.
bool Answered(const HostResolver& resolver, uint64_t n) {
  for (int i = 0; i < 5000; ++i) {
    if (resolver.lookups() >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

TEST(HostResolverTest, ALookupThatHangsNeverBlocksTheCaller) {
  FakeClock clock;
  GatedResolve gate;
  HostResolver resolver(HostResolverOptions{.resolve = std::ref(gate), .clock = &clock});
  // The lookup hangs in the background; the caller is answered at once.
  EXPECT_EQ(resolver.Lookup("node-a"), std::nullopt);
  gate.WaitForCalls(1);
  EXPECT_EQ(resolver.Lookup("node-a"), std::nullopt);
  EXPECT_EQ(resolver.Lookup("10.0.0.7"), "10.0.0.7") << "an address is its own answer, no lookup";
  gate.Open();
  ASSERT_TRUE(Answered(resolver, 1));
  EXPECT_EQ(resolver.Lookup("node-a"), "10.1.2.3");
  EXPECT_EQ(gate.calls(), 1) << "asked twice while in flight, looked up once";
}

TEST(HostResolverTest, AnswersAreKeptForTheirTtlAndRefreshedWithoutWaiting) {
  FakeClock clock;
  std::atomic<int> calls{0};
  std::atomic<bool> moved{false};
  auto resolve = [&](const std::string& host) -> std::string {
    ++calls;
    if (host == "gone") return "";
    return moved ? "10.0.0.2" : "10.0.0.1";
  };
  HostResolver resolver(
      HostResolverOptions{.resolve = resolve, .clock = &clock, .ttl_ms = 60'000, .negative_ttl_ms = 10'000});
  EXPECT_EQ(resolver.Lookup("node-a"), std::nullopt);
  EXPECT_EQ(resolver.Lookup("gone"), std::nullopt);
  ASSERT_TRUE(Answered(resolver, 2));
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(resolver.Lookup("node-a"), "10.0.0.1");
    EXPECT_EQ(resolver.Lookup("gone"), "") << "a name that does not resolve is remembered too";
  }
  EXPECT_EQ(calls.load(), 2);
  // Past the negative TTL the name is asked again; the stale answer is given meanwhile.
  clock.Advance(10'000);
  EXPECT_EQ(resolver.Lookup("gone"), "");
  ASSERT_TRUE(Answered(resolver, 3));
  EXPECT_EQ(resolver.Lookup("node-a"), "10.0.0.1") << "still within its TTL";
  EXPECT_EQ(calls.load(), 3);
  // Past the TTL: the old address now, the new one once it is fetched.
  moved = true;
  clock.Advance(50'000);
  EXPECT_EQ(resolver.Lookup("node-a"), "10.0.0.1");
  ASSERT_TRUE(Answered(resolver, 4));
  EXPECT_EQ(resolver.Lookup("node-a"), "10.0.0.2");
}

TEST(HostResolverTest, InlineModeResolvesInTheCaller) {
  FakeClock clock;
  int calls = 0;
  HostResolver resolver(HostResolverOptions{
      .resolve = [&](const std::string&) { return ++calls, std::string("10.0.0.9"); }, .clock = &clock, .threads = 0});
  EXPECT_EQ(resolver.Lookup("node-a"), "10.0.0.9");
  EXPECT_EQ(resolver.Lookup("node-a"), "10.0.0.9");
  EXPECT_EQ(calls, 1);
}

TEST(HostResolverTest, TheCacheStaysBounded) {
  FakeClock clock;
  HostResolver resolver(HostResolverOptions{
      .resolve = [](const std::string&) { return std::string("10.0.0.9"); }, .clock = &clock, .threads = 0,
      .max_entries = 10});
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(resolver.Lookup("node-" + std::to_string(i)), "10.0.0.9");
    EXPECT_LE(resolver.cached(), 10u);
  }
  EXPECT_EQ(resolver.lookups(), 1000u);
}

BindTask GangBind(std::vector<TaskHost> hosts) {
  BindTask bind;
  bind.task = TaskId{JobId(4), 0, 0};
  bind.command = {"true"};
  bind.task_hosts = std::move(hosts);
  return bind;
}

// A TaskManager whose resolver's lookups hang until the test opens the gate.
class GangStartTest : public ::testing::Test {
 protected:
  void TearDown() override {
    tm_.reset();
    gate_.Open();  // the resolver's destructor waits for a hanging lookup
  }
  void Open(int64_t names_wait_ms) {
    TaskManagerOptions options =
        testing::TaskManagerTestOptions(testing::TaskManagerNode(2), dir_, &launcher_, &clock_, log_);
    options.resolver = &resolver_;
    options.names_wait_ms = names_wait_ms;
    options.etc_hosts = dir_.Write("etc-hosts", "");
    auto tm = TaskManager::Open(std::move(options));
    ASSERT_TRUE(tm.ok());
    tm_ = std::move(tm).value();
    ASSERT_TRUE(tm_->Bind(GangBind({{"g-w-0", "node-a", 1}, {"g-w-1", "node-b", 1, "10.0.0.8"}})).ok());
  }
  std::string HostsFile() { return testing::ReadFile(dir_.path() + "/tasks/4.hosts"); }

  testing::TempDir dir_;
  testing::CapturedLog log_;
  FakeClock clock_;
  FakeProcessLauncher launcher_;
  GatedResolve gate_;
  HostResolver resolver_{HostResolverOptions{.resolve = std::ref(gate_), .clock = &clock_}};
  std::unique_ptr<TaskManager> tm_;
};

// The loop is never held by a lookup: Poll returns while the names are
// looked up, the task waits, and it starts with its lines once they are in.
TEST_F(GangStartTest, AGangTaskWaitsForItsNamesWithoutHoldingTheLoop) {
  ASSERT_NO_FATAL_FAILURE(Open(5000));
  gate_.WaitForCalls(1);
  tm_->Poll();  // returns although the lookup hangs
  EXPECT_TRUE(launcher_.launched().empty());
  gate_.Open();
  ASSERT_TRUE(Answered(resolver_, 1));
  tm_->Poll();
  ASSERT_EQ(launcher_.launched().size(), 1u);
  EXPECT_EQ(HostsFile(), "# gpool: the job's tasks by stable name\n10.1.2.3 g-w-0\n10.0.0.8 g-w-1\n");
  EXPECT_EQ(gate_.calls(), 1) << "node-b advertised its address: no lookup";
}

// A name that never answers holds its task names_wait_ms at most.
TEST_F(GangStartTest, AGangTaskStartsWithoutTheLinesItCouldNotGetInTime) {
  ASSERT_NO_FATAL_FAILURE(Open(3000));
  tm_->Poll();
  clock_.Advance(2999);
  tm_->Poll();
  EXPECT_TRUE(launcher_.launched().empty());
  clock_.Advance(1);
  tm_->Poll();
  ASSERT_EQ(launcher_.launched().size(), 1u);
  EXPECT_EQ(HostsFile(), "# gpool: the job's tasks by stable name\n10.0.0.8 g-w-1\n");
  EXPECT_TRUE(log_.Contains("have no hosts line task=4.0 names=g-w-0")) << log_.text();
}

}  // namespace
}  // namespace gpool::worker
