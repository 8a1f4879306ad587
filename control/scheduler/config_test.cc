#include "control/scheduler/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <limits>

namespace gpool::scheduler {
namespace {

std::vector<std::string> Names(const std::vector<Action>& actions) {
  std::vector<std::string> names;
  for (Action action : actions) names.emplace_back(ActionName(action));
  return names;
}

// The structs have no operator==; comparing field by field also names the one
// that differs.
void ExpectSameConfig(const SchedulerConfig& got, const SchedulerConfig& want) {
  EXPECT_EQ(Names(got.actions), Names(want.actions));
  EXPECT_EQ(StrategyName(got.node_order.strategy), StrategyName(want.node_order.strategy));
  EXPECT_EQ(got.node_order.gpu_weight, want.node_order.gpu_weight);
  EXPECT_EQ(got.node_order.cpu_weight, want.node_order.cpu_weight);
  EXPECT_EQ(got.node_order.memory_weight, want.node_order.memory_weight);
  EXPECT_EQ(got.node_order.prefer_label_weight, want.node_order.prefer_label_weight);
  EXPECT_EQ(got.node_order.candidates, want.node_order.candidates);
  EXPECT_EQ(got.fairness.drf, want.fairness.drf);
  EXPECT_EQ(got.gpu_cpu_ratio.cpu_milli_per_free_gpu, want.gpu_cpu_ratio.cpu_milli_per_free_gpu);
  EXPECT_EQ(got.gpu_cpu_ratio.memory_mib_per_free_gpu, want.gpu_cpu_ratio.memory_mib_per_free_gpu);
  EXPECT_EQ(got.reservation.enabled, want.reservation.enabled);
  EXPECT_EQ(got.reservation.min_gpus, want.reservation.min_gpus);
  EXPECT_EQ(got.reservation.small_job_bound_ms, want.reservation.small_job_bound_ms);
}

// Every field differs from its default, so a key that is parsed but dropped
// (or rendered but not parsed) shows.
SchedulerConfig NonDefault() {
  SchedulerConfig c;
  c.actions = {Action::kReclaim, Action::kAllocate, Action::kEnqueue};
  c.node_order = {Strategy::kSpread, 7, 0, 1'000'000, 3, 100'000};
  c.fairness.drf = false;
  c.gpu_cpu_ratio = {2500, 1};
  c.reservation = {false, 1, 0};
  return c;
}

// Unique per call and per process, so parallel test runs do not collide.
std::filesystem::path TempPath(const std::string& name) {
  static std::atomic<int> counter{0};
  return std::filesystem::path(testing::TempDir()) /
         ("gpool_config_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" + name);
}

void WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

TEST(StrategyTest, NamesRoundTrip) {
  for (Strategy strategy : {Strategy::kBinpack, Strategy::kSpread, Strategy::kFragmentation, Strategy::kFgd,
                            Strategy::kRandom, Strategy::kDotProduct, Strategy::kGpuPacking,
                            Strategy::kGpuClustering, Strategy::kBestFit}) {
    auto back = StrategyFromName(StrategyName(strategy));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, strategy);
  }
  EXPECT_EQ(StrategyName(Strategy::kBinpack), "binpack");
  EXPECT_EQ(StrategyName(Strategy::kSpread), "spread");
}

TEST(StrategyTest, UnknownNameIsRefused) {
  auto strategy = StrategyFromName("Binpack");
  ASSERT_FALSE(strategy.ok());
  EXPECT_EQ(strategy.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(strategy.status().message(),
            "unknown placement strategy 'Binpack' (expected one of binpack, spread, fragmentation, fgd, random, "
            "dot-product, gpu-packing, gpu-clustering, best-fit)");
}

TEST(ActionTest, NamesRoundTrip) {
  const std::vector<std::pair<Action, std::string_view>> cases = {
      {Action::kEnqueue, "enqueue"}, {Action::kAllocate, "allocate"}, {Action::kBackfill, "backfill"},
      {Action::kPreempt, "preempt"}, {Action::kReclaim, "reclaim"},
  };
  for (const auto& [action, name] : cases) {
    EXPECT_EQ(ActionName(action), name);
    auto back = ActionFromName(name);
    ASSERT_TRUE(back.ok()) << name << ": " << back.status().ToString();
    EXPECT_EQ(*back, action) << name;
  }
}

TEST(ActionTest, UnknownNameIsRefused) {
  auto action = ActionFromName("evict");
  ASSERT_FALSE(action.ok());
  EXPECT_EQ(action.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(action.status().message(),
            "unknown action 'evict' (expected enqueue, allocate, backfill, preempt or reclaim)");
}

TEST(ParseSchedulerConfigTest, EmptyTextGivesTheDocumentedDefaults) {
  for (std::string_view text : {"", "\n\n", "# only a comment\n   \t\n"}) {
    auto config = ParseSchedulerConfig(text);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    // Spelled out rather than compared with SchedulerConfig{}, so a changed
    // default in the header is a deliberate, visible edit here too.
    EXPECT_EQ(Names(config->actions),
              (std::vector<std::string>{"enqueue", "allocate", "backfill", "preempt", "reclaim"}));
    // fragmentation since issue 30 (binpack before): the default places as
    // the best strategy does (docs/simulator.md, "The default placement").
    EXPECT_EQ(config->node_order.strategy, Strategy::kFragmentation);
    EXPECT_EQ(config->node_order.gpu_weight, 10u);
    EXPECT_EQ(config->node_order.cpu_weight, 1u);
    EXPECT_EQ(config->node_order.memory_weight, 1u);
    EXPECT_EQ(config->node_order.prefer_label_weight, 100u);
    EXPECT_EQ(config->node_order.candidates, 32u);
    EXPECT_TRUE(config->fairness.drf);
    EXPECT_EQ(config->gpu_cpu_ratio.cpu_milli_per_free_gpu, 1000u);
    EXPECT_EQ(config->gpu_cpu_ratio.memory_mib_per_free_gpu, 4096u);
    EXPECT_TRUE(config->reservation.enabled);
    EXPECT_EQ(config->reservation.min_gpus, 16u);
    EXPECT_EQ(config->reservation.small_job_bound_ms, 600'000);
  }
}

TEST(ParseSchedulerConfigTest, ParsesEveryKey) {
  auto config = ParseSchedulerConfig(R"(
actions = reclaim, allocate, enqueue

[nodeorder]
strategy = spread
gpu_weight = 7
cpu_weight = 0
memory_weight = 1000000
prefer_label_weight = 3
candidates = 100000

[fairness]
drf = false

[gpu_cpu_ratio]
cpu_milli_per_free_gpu = 2500
memory_mib_per_free_gpu = 1

[reservation]
enabled = false
min_gpus = 1
small_job_bound_ms = 0
)");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ExpectSameConfig(*config, NonDefault());
}

TEST(ParseSchedulerConfigTest, KeysLeftOutKeepTheirDefaults) {
  auto config = ParseSchedulerConfig("[nodeorder]\ngpu_weight = 3\n[reservation]\nmin_gpus = 8\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  SchedulerConfig want;
  want.node_order.gpu_weight = 3;
  want.reservation.min_gpus = 8;
  ExpectSameConfig(*config, want);
}

TEST(ParseSchedulerConfigTest, ToleratesCommentsWhitespaceAndCrlf) {
  auto config = ParseSchedulerConfig(
      "  actions=allocate   # just place\r\n"
      "\t[ nodeorder ]\t# spaces inside the brackets\r\n"
      "strategy\t=\tspread#no space before the comment\r\n"
      "  candidates =   5  \r\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(Names(config->actions), (std::vector<std::string>{"allocate"}));
  EXPECT_EQ(config->node_order.strategy, Strategy::kSpread);
  EXPECT_EQ(config->node_order.candidates, 5u);
}

TEST(ParseSchedulerConfigTest, AcceptsTheLargestDuration) {
  auto config = ParseSchedulerConfig("[reservation]\nsmall_job_bound_ms = 9223372036854775807\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->reservation.small_job_bound_ms, std::numeric_limits<int64_t>::max());
}

struct ErrorCase {
  std::string name;
  std::string text;
  std::string message;
};

class ParseErrorTest : public testing::TestWithParam<ErrorCase> {};

TEST_P(ParseErrorTest, IsRefusedNamingTheLine) {
  auto config = ParseSchedulerConfig(GetParam().text);
  ASSERT_FALSE(config.ok()) << "accepted:\n" << GetParam().text;
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message(), GetParam().message);
}

const std::string kWeightRange = "must be in 0..1000000";

INSTANTIATE_TEST_SUITE_P(
    Errors, ParseErrorTest,
    testing::Values(
        // Structure.
        ErrorCase{"UnknownSection", "# c\n[scoring]\n",
                  "line 2: [scoring]: unknown section (known: nodeorder, fairness, gpu_cpu_ratio, reservation)"},
        ErrorCase{"EmptySectionName", "[ ]\n",
                  "line 1: []: unknown section (known: nodeorder, fairness, gpu_cpu_ratio, reservation)"},
        ErrorCase{"UnterminatedHeader", "[nodeorder\n", "line 1: '[nodeorder': a section header ends with ]"},
        ErrorCase{"DuplicateSection", "[fairness]\ndrf = true\n\n[fairness]\n",
                  "line 4: [fairness]: section appears twice (first on line 1)"},
        ErrorCase{"NotAnAssignment", "[nodeorder]\nstrategy spread\n",
                  "line 2: [nodeorder] 'strategy spread': expected key = value"},
        ErrorCase{"MissingKey", "= allocate\n", "line 1: '= allocate': missing key before ="},
        ErrorCase{"MissingValue", "[nodeorder]\ngpu_weight =   # later\n",
                  "line 2: [nodeorder] gpu_weight: missing value"},
        // Keys.
        ErrorCase{"UnknownTopLevelKey", "strategy = spread\n",
                  "line 1: strategy: unknown key (known: actions)"},
        ErrorCase{"UnknownKeyInSection", "[fairness]\n\ndrf = true\nfifo = true\n",
                  "line 4: [fairness] fifo: unknown key (known: drf)"},
        ErrorCase{"KeyOfAnotherSection", "[reservation]\ncandidates = 3\n",
                  "line 2: [reservation] candidates: unknown key (known: enabled, min_gpus, small_job_bound_ms, starve_after_ms, "
     "max_per_pool)"},
        ErrorCase{"ActionsInsideASection", "[nodeorder]\nactions = allocate\n",
                  "line 2: [nodeorder] actions: only valid at the top of the file, before any [section]"},
        ErrorCase{"DuplicateKey", "[nodeorder]\ncpu_weight = 1\ngpu_weight = 2\ncpu_weight = 1\n",
                  "line 4: [nodeorder] cpu_weight: set twice (first on line 2)"},
        ErrorCase{"DuplicateTopLevelKey", "actions = allocate\nactions = allocate\n",
                  "line 2: actions: set twice (first on line 1)"},
        // Numbers.
        ErrorCase{"NotANumber", "[nodeorder]\ngpu_weight = ten\n",
                  "line 2: [nodeorder] gpu_weight: 'ten' is not a whole number"},
        ErrorCase{"TrailingJunk", "[nodeorder]\ncpu_weight = 5x\n",
                  "line 2: [nodeorder] cpu_weight: '5x' is not a whole number"},
        ErrorCase{"Fraction", "[gpu_cpu_ratio]\ncpu_milli_per_free_gpu = 1.5\n",
                  "line 2: [gpu_cpu_ratio] cpu_milli_per_free_gpu: '1.5' is not a whole number"},
        ErrorCase{"PlusSign", "[nodeorder]\ncandidates = +4\n",
                  "line 2: [nodeorder] candidates: '+4' is not a whole number"},
        ErrorCase{"NegativeWeight", "[nodeorder]\nmemory_weight = -1\n",
                  "line 2: [nodeorder] memory_weight: '-1' " + kWeightRange},
        ErrorCase{"WeightTooLarge", "[nodeorder]\nprefer_label_weight = 1000001\n",
                  "line 2: [nodeorder] prefer_label_weight: '1000001' " + kWeightRange},
        ErrorCase{"Overflow", "[nodeorder]\ngpu_weight = 99999999999999999999\n",
                  "line 2: [nodeorder] gpu_weight: '99999999999999999999' " + kWeightRange},
        ErrorCase{"ZeroCandidates", "[nodeorder]\ncandidates = 0\n",
                  "line 2: [nodeorder] candidates: '0' must be in 1..100000"},
        ErrorCase{"TooManyCandidates", "[nodeorder]\ncandidates = 100001\n",
                  "line 2: [nodeorder] candidates: '100001' must be in 1..100000"},
        ErrorCase{"ZeroMinGpus", "[reservation]\nmin_gpus = 0\n",
                  "line 2: [reservation] min_gpus: '0' must be in 1..1000000"},
        ErrorCase{"NegativeDuration", "[reservation]\nsmall_job_bound_ms = -1\n",
                  "line 2: [reservation] small_job_bound_ms: '-1' must be >= 0"},
        ErrorCase{"PerFreeGpuTooLarge", "[gpu_cpu_ratio]\nmemory_mib_per_free_gpu = 1099511627777\n",
                  "line 2: [gpu_cpu_ratio] memory_mib_per_free_gpu: '1099511627777' must be in 0..1099511627776"},
        // Booleans and names.
        ErrorCase{"BooleanSpelledYes", "[fairness]\ndrf = yes\n",
                  "line 2: [fairness] drf: 'yes' is not true or false"},
        ErrorCase{"BooleanCapitalised", "[reservation]\nenabled = True\n",
                  "line 2: [reservation] enabled: 'True' is not true or false"},
        ErrorCase{"UnknownStrategy", "\n\n\n\n\n[nodeorder]\nstrategy = fastest\n",
                  "line 7: [nodeorder] strategy: unknown placement strategy 'fastest' (expected one of binpack, spread, fragmentation, fgd, random, dot-product, gpu-packing, gpu-clustering, best-fit)"},
        // Action lists.
        ErrorCase{"EmptyActionEntry", "actions = enqueue,, allocate\n", "line 1: actions: entry 2 is empty"},
        ErrorCase{"TrailingComma", "actions = allocate,\n", "line 1: actions: entry 2 is empty"},
        ErrorCase{"DuplicateAction", "actions = enqueue, allocate, enqueue\n",
                  "line 1: actions: 'enqueue' is listed twice"},
        ErrorCase{"UnknownAction", "actions = allocate, evict\n",
                  "line 1: actions: unknown action 'evict' (expected enqueue, allocate, backfill, preempt or reclaim)"},
        ErrorCase{"ActionsWithoutAllocate", "actions = enqueue, backfill\n",
                  "line 1: actions: must include allocate, or no job is ever placed"},
        // Long values are clipped, not echoed whole.
        ErrorCase{"LongValueIsClipped", "[fairness]\ndrf = " + std::string(100, 'x') + "\n",
                  "line 2: [fairness] drf: '" + std::string(64, 'x') + "...' is not true or false"}),
    [](const testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

TEST(ParseSchedulerConfigTest, TheFirstBadLineIsTheOneReported) {
  auto config = ParseSchedulerConfig("[nodeorder]\ngpu_weight = x\ncpu_weight = y\n");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(), "line 2: [nodeorder] gpu_weight: 'x' is not a whole number");
}

TEST(ParseSchedulerConfigTest, RefusesInputOverOneMebibyte) {
  const size_t limit = size_t{1} << 20;
  // All comment: only the size can be the reason.
  std::string at_limit = "#" + std::string(limit - 1, 'x');
  EXPECT_TRUE(ParseSchedulerConfig(at_limit).ok());
  auto config = ParseSchedulerConfig(at_limit + "x");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message(), "config is larger than 1048576 bytes");
}

TEST(RenderSchedulerConfigTest, RoundTripsThroughParse) {
  SchedulerConfig extremes = NonDefault();
  extremes.actions = {Action::kAllocate};
  extremes.gpu_cpu_ratio = {uint64_t{1} << 40, 0};
  extremes.reservation.small_job_bound_ms = std::numeric_limits<int64_t>::max();
  for (const SchedulerConfig& config : {SchedulerConfig{}, NonDefault(), extremes}) {
    const std::string text = RenderSchedulerConfig(config);
    auto parsed = ParseSchedulerConfig(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << text;
    ExpectSameConfig(*parsed, config);
    EXPECT_EQ(RenderSchedulerConfig(*parsed), text);
  }
}

TEST(RenderSchedulerConfigTest, WritesTheDocumentedFormat) {
  EXPECT_EQ(RenderSchedulerConfig(SchedulerConfig{}),
            "actions = enqueue, allocate, backfill, preempt, reclaim\n"
            "\n[nodeorder]\n"
            "strategy = fragmentation\n"
            "gpu_weight = 10\n"
            "cpu_weight = 1\n"
            "memory_weight = 1\n"
            "prefer_label_weight = 100\n"
            "candidates = 32\n"
            "\n[fairness]\n"
            "drf = true\n"
            "\n[gpu_cpu_ratio]\n"
            "cpu_milli_per_free_gpu = 1000\n"
            "memory_mib_per_free_gpu = 4096\n"
            "\n[reservation]\n"
            "enabled = true\n"
            "min_gpus = 16\n"
            "small_job_bound_ms = 600000\n"
            "starve_after_ms = 600000\n"
            "max_per_pool = 2\n");
}

TEST(LoadSchedulerConfigTest, MissingFileIsNotFound) {
  const std::filesystem::path path = TempPath("missing.conf");
  auto config = LoadSchedulerConfig(path.string());
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(config.status().message(), "no scheduler config at " + path.string());
}

TEST(LoadSchedulerConfigTest, ReadsAFile) {
  const std::filesystem::path path = TempPath("good.conf");
  WriteFile(path, RenderSchedulerConfig(NonDefault()));
  auto config = LoadSchedulerConfig(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ExpectSameConfig(*config, NonDefault());
}

TEST(LoadSchedulerConfigTest, ParseErrorsNameThePathAndLine) {
  const std::filesystem::path path = TempPath("bad.conf");
  WriteFile(path, "actions = allocate\n[fairness]\ndrf = maybe\n");
  auto config = LoadSchedulerConfig(path.string());
  std::filesystem::remove(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message(), path.string() + ": line 3: [fairness] drf: 'maybe' is not true or false");
}

TEST(LoadSchedulerConfigTest, OversizedFileIsRefused) {
  const std::filesystem::path path = TempPath("huge.conf");
  WriteFile(path, std::string(3 << 20, '#'));
  auto config = LoadSchedulerConfig(path.string());
  std::filesystem::remove(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message(), path.string() + ": config is larger than 1048576 bytes");
}

TEST(LoadSchedulerConfigTest, ADirectoryIsAnIoError) {
  const std::filesystem::path path = TempPath("dir.conf");
  ASSERT_TRUE(std::filesystem::create_directory(path));
  auto config = LoadSchedulerConfig(path.string());
  std::filesystem::remove(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kIoError);
  EXPECT_NE(config.status().message().find(path.string()), std::string::npos) << config.status().message();
}

}  // namespace
}  // namespace gpool::scheduler
