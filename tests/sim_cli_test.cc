// gpool-sim as a user runs it: the stable paper-experiment command line on
// small trace files, the comparison table, the event mode with its CSV and
// chart, a cluster from a gpool node spec file, and bad input refused with
// a message and exit code.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/process.h"

namespace gpool::testing {
namespace {

class SimCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Write("openb_node_list_gpu_node.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,8,G2\nn1,32000,131072,2,T4\n");
    Write("openb_pod_list_default.csv",
          "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
          "scheduled_time\n"
          "p0,4000,8192,1,1000,,LS,Running,0,100,0\n"
          "p1,2000,4096,1,500,,BE,Running,10,50,10\n"
          "p2,8000,16384,4,1000,G2,LS,Running,20,200,20\n"
          "p3,1000,1024,0,0,,BE,Running,30,60,30\n");
  }
  void Write(const std::string& name, const std::string& text) { std::ofstream(Path(name)) << text; }
  std::string Path(const std::string& name) const { return dir_.Join(name); }
  CommandResult Sim(std::vector<std::string> args) {
    args.insert(args.begin(), GPOOL_SIM_BIN);
    return RunCommand(args, std::chrono::seconds(120));
  }

  TempDir dir_;
};

TEST_F(SimCliTest, PaperCommandLinePrintsOneJsonObject) {
  const auto run = Sim({"--nodes", Path("openb_node_list_gpu_node.csv"), "--pods", Path("openb_pod_list_default.csv"),
                        "--policy", "fragmentation", "--seeds", "3", "--arrival-pct", "130", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json.at("policy"), "fragmentation");
  EXPECT_EQ(json.at("seeds"), 3);
  const double alloc = json.at("alloc_pct_at_130").get<double>();
  EXPECT_GT(alloc, 50.0);
  EXPECT_LE(alloc, 100.0);
  EXPECT_TRUE(json.at("frag_pct_at_100").is_number());
  EXPECT_TRUE(json.at("published_alloc_pct_at_130").is_null());  // the paper has no "fragmentation" column
}

TEST_F(SimCliTest, DefaultPolicyAndTheComparisonTableWithItsChart) {
  const auto fallback = Sim({"--nodes", Path("openb_node_list_gpu_node.csv"), "--pods",
                             Path("openb_pod_list_default.csv"), "--policy", "default", "--seeds", "2", "--json"});
  ASSERT_EQ(fallback.exit_code, 0) << fallback.err;
  EXPECT_EQ(nlohmann::json::parse(fallback.out).at("policy"), "default");
  const auto all = Sim({"--nodes", Path("openb_node_list_gpu_node.csv"), "--pods", Path("openb_pod_list_default.csv"),
                        "--policy", "all", "--seeds", "2", "--csv", Path("curves.csv"), "--plot", Path("curves.png")});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.out.find("| fgd |"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("| 95.39 |"), std::string::npos) << all.out;  // published FGD on "default"
  EXPECT_GT(std::filesystem::file_size(Path("curves.png")), 1000u);
  std::ifstream csv(Path("curves.csv"));
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("arrival_pct,alloc_pct_random,", 0), 0u) << header;
}

TEST_F(SimCliTest, EventModeWritesTheTimeSeries) {
  Write("jobs.jsonl", "{\"arrival_s\": 0, \"duration_s\": 30, \"gpus\": 8, \"priority_class\": \"low\"}\n"
                      "{\"arrival_s\": 5, \"duration_s\": 10, \"gpus\": 8, \"priority_class\": \"high\"}\n");
  const auto run = Sim({"--mode", "events", "--nodes", Path("openb_node_list_gpu_node.csv"), "--workload",
                        Path("jobs.jsonl"), "--csv", Path("series.csv"), "--plot", Path("series.png"), "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json.at("jobs"), 2);
  EXPECT_GE(json.at("preemptions").get<int>(), 1);  // the default configuration preempts for the high job
  EXPECT_GT(std::filesystem::file_size(Path("series.csv")), 100u);
  EXPECT_GT(std::filesystem::file_size(Path("series.png")), 1000u);
}

TEST_F(SimCliTest, BadInputIsRefusedWithAMessage) {
  Write("bad.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,lots,1,1,T4\n");
  const auto bad_file = Sim({"--nodes", Path("bad.csv"), "--pods", Path("openb_pod_list_default.csv")});
  EXPECT_EQ(bad_file.exit_code, 1);
  EXPECT_NE(bad_file.err.find("bad.csv:2: cpu_milli"), std::string::npos) << bad_file.err;
  const auto bad_policy = Sim({"--nodes", Path("openb_node_list_gpu_node.csv"), "--pods",
                               Path("openb_pod_list_default.csv"), "--policy", "tetris"});
  EXPECT_EQ(bad_policy.exit_code, 2);
  EXPECT_NE(bad_policy.err.find("unknown placement strategy 'tetris'"), std::string::npos) << bad_policy.err;
  EXPECT_NE(bad_policy.err.find("or default (the coordinator's configuration) or all"), std::string::npos)
      << bad_policy.err;
  const auto no_nodes = Sim({"--pods", Path("openb_pod_list_default.csv")});
  EXPECT_EQ(no_nodes.exit_code, 2);
  const auto zero_seeds = Sim({"--nodes", Path("openb_node_list_gpu_node.csv"), "--pods",
                               Path("openb_pod_list_default.csv"), "--seeds", "0"});
  EXPECT_EQ(zero_seeds.exit_code, 2);
  EXPECT_NE(zero_seeds.err.find("--seeds must be 1..1000"), std::string::npos);
}

TEST_F(SimCliTest, NodeSpecFileClusterInBothModes) {
  Write("g2.yaml", "# an 8-GPU node, as gpool-worker --spec reads it\n"
                   "name: g2\ncpus: 64\nmemory: 256Gi\n"
                   "numa: [{cpus: 32, memory: 128Gi}, {cpus: 32, memory: 128Gi}]\n"
                   "gpus: {count: 8, model: G2, memory: 80Gi, nvlink: all}\n");
  const auto paper = Sim({"--nodes", Path("g2.yaml"), "--node-count", "3", "--pods", Path("openb_pod_list_default.csv"),
                          "--policy", "fragmentation", "--seeds", "2", "--json"});
  ASSERT_EQ(paper.exit_code, 0) << paper.err;
  const auto json = nlohmann::json::parse(paper.out);
  EXPECT_EQ(json.at("nodes"), 3);
  EXPECT_GT(json.at("alloc_pct_at_130").get<double>(), 50.0);
  EXPECT_TRUE(json.at("published_alloc_pct_at_130").is_null()) << "the paper's figures are for its own cluster";
  EXPECT_FALSE(json.at("paper_cluster").get<bool>());
  const auto table = Sim({"--nodes", Path("g2.yaml"), "--node-count", "3", "--pods", Path("openb_pod_list_default.csv"),
                          "--policy", "fgd", "--seeds", "1"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("| fgd | "), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("95.39"), std::string::npos) << "no published column on a spec cluster:\n" << table.out;
  EXPECT_NE(table.out.find("no published figures"), std::string::npos) << table.out;

  Write("jobs.jsonl", "{\"arrival_s\": 0, \"duration_s\": 30, \"gpus\": 8}\n"
                      "{\"arrival_s\": 0, \"duration_s\": 30, \"gpus\": 1, \"gpu_memory_mib\": 40960}\n"
                      "{\"arrival_s\": 0, \"duration_s\": 30, \"gpus\": 1, \"gpu_memory_mib\": 40960}\n");
  const auto events = Sim({"--mode", "events", "--nodes", Path("g2.yaml"), "--node-count", "2", "--workload",
                           Path("jobs.jsonl"), "--json"});
  ASSERT_EQ(events.exit_code, 0) << events.err;
  const auto summary = nlohmann::json::parse(events.out);
  EXPECT_EQ(summary.at("jobs"), 3);
  EXPECT_EQ(summary.at("started"), 3);
}

TEST_F(SimCliTest, BadNodeSpecInputIsRefusedWithAMessage) {
  Write("bad.yaml", "name: n\ncpus: 8\nmemory: 64Gi\ngpus: {count: 2, memory: 80Q}\n");
  const auto bad_spec = Sim({"--nodes", Path("bad.yaml"), "--pods", Path("openb_pod_list_default.csv")});
  EXPECT_EQ(bad_spec.exit_code, 1);
  EXPECT_NE(bad_spec.err.find("bad.yaml: gpus.memory: '80Q' is not a memory size"), std::string::npos) << bad_spec.err;
  Write("cpu.yaml", "name: c\ncpus: 8\nmemory: 64Gi\n");
  const auto no_gpus = Sim({"--nodes", Path("cpu.yaml"), "--pods", Path("openb_pod_list_default.csv")});
  EXPECT_EQ(no_gpus.exit_code, 1);
  EXPECT_NE(no_gpus.err.find("cpu.yaml: the cluster has no GPUs"), std::string::npos) << no_gpus.err;
  const auto count_for_trace = Sim({"--nodes", Path("openb_node_list_gpu_node.csv"), "--node-count", "4", "--pods",
                                    Path("openb_pod_list_default.csv")});
  EXPECT_EQ(count_for_trace.exit_code, 2);
  EXPECT_NE(count_for_trace.err.find("--node-count is for node spec files"), std::string::npos) << count_for_trace.err;
  const auto zero =
      Sim({"--nodes", Path("cpu.yaml"), "--node-count", "0", "--pods", Path("openb_pod_list_default.csv")});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("--node-count must be 1..10000"), std::string::npos) << zero.err;
  const auto missing = Sim({"--nodes", Path("missing.yaml"), "--pods", Path("openb_pod_list_default.csv")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("missing.yaml: cannot open"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace gpool::testing
