#include "client/format.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpool {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;

JobSummary Summary(uint64_t id, std::string name, std::string state) {
  JobSummary s;
  s.job_id = id;
  s.name = std::move(name);
  s.queue = "default";
  s.state = std::move(state);
  return s;
}

TEST(FormatTest, Durations) {
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(-5), "0s");
  EXPECT_EQ(FormatDuration(45'999), "45s");
  EXPECT_EQ(FormatDuration(192'000), "3m12s");
  EXPECT_EQ(FormatDuration(2 * 3'600'000 + 5 * 60'000), "2h05m");
  EXPECT_EQ(FormatDuration(3 * 86'400'000LL + 4 * 3'600'000), "3d04h");
  EXPECT_EQ(FormatAgo(0, kNow), "-");
  EXPECT_EQ(FormatAgo(kNow - 5000, kNow), "5s ago");
}

TEST(FormatTest, Quantities) {
  EXPECT_EQ(FormatCores(4500), "4.5");
  EXPECT_EQ(FormatCores(64000), "64");
  EXPECT_EQ(FormatCores(250), "0.25");
  EXPECT_EQ(FormatCores(1), "0.001");
  EXPECT_EQ(FormatGiB(1536), "1.5");
  EXPECT_EQ(FormatGiB(16384), "16");
  EXPECT_EQ(FormatGiB(0), "0");
  EXPECT_EQ(FormatGiB(100), "0.1");
  EXPECT_EQ(FormatMemory(4096), "4Gi");
  EXPECT_EQ(FormatMemory(1536), "1.5Gi");
  EXPECT_EQ(FormatMemory(512), "512Mi");
}

TEST(FormatTest, TableAlignsColumnsAndFlattensCells) {
  Table t({"A", "LONGER", "C"});
  t.AddRow({"xyz", "1", ""});
  t.AddRow({"q", "line\nbreak", "end"});
  EXPECT_EQ(t.Render(),
            "A    LONGER      C\n"
            "xyz  1\n"
            "q    line break  end\n");
}

TEST(FormatTest, JobsTable) {
  ListJobsReply reply;
  JobSummary a = Summary(17, "train", "Running");
  a.priority = 5;
  a.priority_class = "high";
  a.tasks_total = 2;
  a.tasks_running = 1;
  a.gpus = 8;
  a.submit_ms = kNow - 192'000;
  JobSummary b = Summary(18, "too-big", "Pending");
  b.tasks_total = 1;
  b.gpus = 9;
  b.submit_ms = kNow - 5'000;
  b.reason = "no node has 9 GPUs";
  reply.jobs = {a, b};
  EXPECT_EQ(FormatJobsTable(reply, kNow),
            "ID  NAME     QUEUE    CLASS  PRIO  STATE    TASKS  GPUS  AGE    REASON\n"
            "17  train    default  high   5     Running  1/2    8     3m12s  -\n"
            "18  too-big  default  -      0     Pending  0/1    9     5s     no node has 9 GPUs\n");
  EXPECT_EQ(FormatJobsTable(ListJobsReply{}, kNow), "No jobs.\n");
}

TEST(FormatTest, LongReasonsAreShortened) {
  ListJobsReply reply;
  JobSummary a = Summary(1, "j", "Pending");
  a.reason = std::string(100, 'x');
  reply.jobs = {a};
  std::string table = FormatJobsTable(reply, kNow);
  EXPECT_NE(table.find(std::string(57, 'x') + "...\n"), std::string::npos) << table;
  EXPECT_EQ(table.find(std::string(58, 'x')), std::string::npos) << table;
}

GetJobReply SampleJob() {
  GetJobReply job;
  job.summary = Summary(17, "train", "Running");
  job.summary.priority = 5;
  job.summary.tasks_total = 3;
  job.summary.tasks_running = 1;
  job.summary.tasks_finished = 1;
  job.summary.gpus = 12;
  job.summary.submit_ms = kNow - 300'000;
  job.summary.start_ms = kNow - 240'000;
  TaskGroupSpec group;
  group.name = "worker";
  group.replicas = 3;
  group.command = {"python3", "train.py", "--name", "a b"};
  group.resources = Resources{4, 8000, 32768};
  job.spec.name = "train";
  job.spec.tasks = {group};
  TaskInfo t0;
  t0.index = 0;
  t0.group = "worker";
  t0.state = "Running";
  t0.node = "node-a";
  t0.gpu_indices = {0, 1, 2, 3};
  t0.pid = 4242;
  t0.start_ms = kNow - 240'000;
  TaskInfo t1;
  t1.index = 1;
  t1.attempt = 1;
  t1.group = "worker";
  t1.state = "Failed";
  t1.node = "node-b";
  t1.gpu_indices = {4, 5, 6, 7};
  t1.pid = 99;
  t1.signal = 9;
  t1.exit_code = 137;
  t1.start_ms = kNow - 240'000;
  t1.finish_ms = kNow - 180'000;
  t1.message = "killed: out of memory";
  TaskInfo t2;
  t2.index = 2;
  t2.group = "worker";
  t2.state = "Pending";
  job.tasks = {t0, t1, t2};
  job.reasons = {"node-c: 2 free GPUs, need 4", "node-d: not ready"};
  return job;
}

TEST(FormatTest, JobDetail) {
  EXPECT_EQ(FormatJobDetail(SampleJob(), kNow),
            "Job 17: train\n"
            "  State:      Running\n"
            "  Queue:      default\n"
            "  Class:      medium\n"
            "  Priority:   5\n"
            "  Pool:       public\n"
            "  Tasks:      1 running, 1 finished, 3 total\n"
            "  GPUs:       12\n"
            "  Submitted:  5m00s ago\n"
            "  Started:    4m00s ago\n"
            "  Finished:   -\n"
            "\n"
            "Task groups:\n"
            "  GROUP   REPLICAS  RESOURCES                   COMMAND\n"
            "  worker  3         4 GPUs, 8 CPU, 32Gi memory  python3 train.py --name 'a b'\n"
            "\n"
            "Pending reasons:\n"
            "  - node-c: 2 free GPUs, need 4\n"
            "  - node-d: not ready\n"
            "\n"
            "Tasks:\n"
            "  INDEX  STATE    NODE    GPUS     PID   EXIT     STARTED    DURATION  MESSAGE\n"
            "  0      Running  node-a  0,1,2,3  4242  -        4m00s ago  4m00s     -\n"
            "  1#1    Failed   node-b  4,5,6,7  99    SIGKILL  4m00s ago  1m00s     killed: out of memory\n"
            "  2      Pending  -       -        -     -        -          -         -\n");
}

TEST(FormatTest, JobDetailShowsReasonAndGroupsWhenSeveral) {
  GetJobReply job = SampleJob();
  job.summary.reason = "task 1 failed";
  job.tasks[2].group = "ps";
  std::string text = FormatJobDetail(job, kNow);
  EXPECT_NE(text.find("  Reason:     task 1 failed\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  INDEX  GROUP   STATE"), std::string::npos) << text;
  EXPECT_NE(text.find("  2      ps      Pending"), std::string::npos) << text;
}

TEST(FormatTest, NodesTable) {
  ListNodesReply reply;
  NodeSummary a;
  a.name = "node-a";
  a.state = "Ready";
  a.gpus_total = 8;
  a.gpus_used = 4;
  a.cpu_milli_total = 64000;
  a.cpu_milli_used = 4500;
  a.memory_mib_total = 512 * 1024;
  a.memory_mib_used = 1536;
  a.gpu_models = {"H100", "A100"};
  a.tasks = 2;
  a.last_seen_ms = kNow - 1000;
  a.pool = "public";
  NodeSummary b;
  b.name = "node-b";
  b.state = "NotReady";
  reply.nodes = {a, b};
  EXPECT_EQ(FormatNodesTable(reply, kNow),
            "NAME    STATE     HEALTH  POOL    GPUS  CPUS    MEM(GiB)  MODELS     TASKS  LAST SEEN  TAINTS  LABELS\n"
            "node-a  Ready     ok      public  4/8   4.5/64  1.5/512   H100,A100  2      1s ago     -       -\n"
            "node-b  NotReady  -       -       0/0   0/0     0/0       -          0      -          -       -\n");
  EXPECT_EQ(FormatNodesTable(ListNodesReply{}, kNow), "No nodes.\n");
}

// Two NVLink islands of four GPUs each (0-3 on NUMA 0, 4-7 on NUMA 1), as
// the coordinator reports them; GPUs 1 and 5 are busy, GPU 6 is unhealthy.
NodeSummary EightGpuNode() {
  NodeSummary node;
  node.name = "gpu-node-1";
  node.state = "Ready";
  node.hostname = "gpu-node-1.lab";
  node.pool = "public";
  node.gpus_total = 7;
  node.gpus_used = 2;
  node.cpu_milli_total = 64000;
  node.cpu_milli_used = 8000;
  node.memory_mib_total = 512 * 1024;
  node.memory_mib_used = 64 * 1024;
  node.gpu_models = {"H100"};
  node.tasks = 2;
  node.last_seen_ms = kNow - 3000;
  node.labels = {{"rack", "r1"}};
  node.taints = {{"maintenance", ""}};
  for (uint32_t i = 0; i < 8; ++i) {
    DeviceSummary d;
    d.index = i;
    d.uuid = "GPU-" + std::to_string(i) + "a3f2c1e-1111-2222-3333-444455556666";
    d.vendor = "nvidia";
    d.model = "H100";
    d.memory_mib = 80 * 1024;
    d.numa = i < 4 ? 0 : 1;
    const uint32_t base = i < 4 ? 0 : 4;
    for (uint32_t p = base; p < base + 4; ++p) {
      if (p != i) d.nvlink_peers.push_back(p);
    }
    node.devices.push_back(d);
  }
  node.devices[1].task = "17.0";
  node.devices[5].task = "18.2#1";
  node.devices[6].healthy = false;
  const auto groups = LinkGroups(node.devices);
  for (size_t i = 0; i < groups.size(); ++i) node.devices[i].link_group = groups[i];
  node.numa = {NumaSummary{0, 32000, 256 * 1024, {0, 1, 2, 3}}, NumaSummary{1, 32000, 256 * 1024, {4, 5, 6, 7}}};
  return node;
}

DeviceSummary Device(uint32_t index, std::vector<uint32_t> peers) {
  DeviceSummary d;
  d.index = index;
  d.nvlink_peers = std::move(peers);
  return d;
}

TEST(FormatTest, LinkGroupsOfTwoNvlinkIslands) {
  EXPECT_EQ(LinkGroups(EightGpuNode().devices), (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 1}));
  // Only GPU 0 names its peers and only GPU 5 names 4: links count from either end.
  EXPECT_EQ(LinkGroups({Device(0, {1, 2}), Device(1, {}), Device(2, {}), Device(3, {}), Device(4, {}),
                        Device(5, {4})}),
            (std::vector<int32_t>{0, 0, 0, -1, 1, 1}));
  // Chains join transitively; groups are numbered by their lowest GPU index,
  // whatever the order of the devices.
  EXPECT_EQ(LinkGroups({Device(7, {6}), Device(6, {}), Device(2, {3}), Device(3, {}), Device(5, {0}), Device(0, {})}),
            (std::vector<int32_t>{2, 2, 1, 1, 0, 0}));
  EXPECT_EQ(LinkGroups({Device(0, {1}), Device(1, {2}), Device(2, {})}), (std::vector<int32_t>{0, 0, 0}));
}

TEST(FormatTest, LinkGroupsWithoutLinks) {
  EXPECT_EQ(LinkGroups({Device(0, {}), Device(1, {})}), (std::vector<int32_t>{-1, -1}));
  // Naming itself, or a GPU the node does not have, is no link.
  EXPECT_EQ(LinkGroups({Device(0, {0, 9}), Device(1, {1})}), (std::vector<int32_t>{-1, -1}));
  EXPECT_TRUE(LinkGroups({}).empty());
}

TEST(FormatTest, IndexRangesAndShortUuids) {
  EXPECT_EQ(FormatIndexRanges({}), "-");
  EXPECT_EQ(FormatIndexRanges({3}), "3");
  EXPECT_EQ(FormatIndexRanges({3, 0, 1, 2, 6, 6, 8, 9}), "0-3,6,8-9");
  EXPECT_EQ(ShortUuid("GPU-8a3f2c1e-1111-2222-3333-444455556666"), "GPU-8a3f2c1e...");
  EXPECT_EQ(ShortUuid("GPU-8a3f2c1e"), "GPU-8a3f2c1e");
  EXPECT_EQ(ShortUuid("GPU-8a3f2c1e-11"), "GPU-8a3f2c1e-11");  // 15: short enough
  EXPECT_EQ(ShortUuid(""), "-");
}

TEST(FormatTest, DescribeLinkGroups) {
  EXPECT_EQ(DescribeLinkGroups(EightGpuNode()),
            (std::vector<std::string>{"group 0: GPUs 0-3 (NVLink)", "group 1: GPUs 4-7 (NVLink)"}));
  NodeSummary mixed;
  for (auto [index, group] : std::vector<std::pair<uint32_t, int32_t>>{{0, -1}, {1, 0}, {2, -1}, {3, 0}, {4, -1}}) {
    DeviceSummary d;
    d.index = index;
    d.link_group = group;
    mixed.devices.push_back(d);
  }
  EXPECT_EQ(DescribeLinkGroups(mixed), (std::vector<std::string>{"group 0: GPUs 1,3 (NVLink)", "no NVLink: GPUs 0,2,4"}));
  mixed.devices.resize(1);
  EXPECT_EQ(DescribeLinkGroups(mixed), (std::vector<std::string>{"no NVLink: GPU 0"}));
  EXPECT_TRUE(DescribeLinkGroups(NodeSummary{}).empty());
}

TEST(FormatTest, NodeDevices) {
  ListNodesReply reply;
  NodeSummary cpu_only;
  cpu_only.name = "cpu-node";
  cpu_only.state = "Ready";
  reply.nodes = {EightGpuNode(), cpu_only};
  EXPECT_EQ(FormatNodeDevices(reply),
            "\n"
            "Node gpu-node-1:\n"
            "  INDEX  UUID             MODEL  MEM(GiB)  NUMA  LINK GROUP  HEALTH     SHARING  TASK\n"
            "  0      GPU-0a3f2c1e...  H100   80        0     0           ok         -        -\n"
            "  1      GPU-1a3f2c1e...  H100   80        0     0           ok         -        17.0\n"
            "  2      GPU-2a3f2c1e...  H100   80        0     0           ok         -        -\n"
            "  3      GPU-3a3f2c1e...  H100   80        0     0           ok         -        -\n"
            "  4      GPU-4a3f2c1e...  H100   80        1     1           ok         -        -\n"
            "  5      GPU-5a3f2c1e...  H100   80        1     1           ok         -        18.2#1\n"
            "  6      GPU-6a3f2c1e...  H100   80        1     1           unhealthy  -        -\n"
            "  7      GPU-7a3f2c1e...  H100   80        1     1           ok         -        -\n"
            "\n"
            "Node cpu-node:\n"
            "  No devices.\n");
  EXPECT_EQ(FormatNodeDevices(ListNodesReply{}), "");
}

TEST(FormatTest, NodeDetail) {
  EXPECT_EQ(FormatNodeDetail(EightGpuNode(), kNow),
            "Node gpu-node-1\n"
            "  State:      Ready\n"
            "  Hostname:   gpu-node-1.lab\n"
            "  Pool:       public\n"
            "  Labels:     rack=r1\n"
            "  Taints:     maintenance=\n"
            "  GPUs:       2/7 used (H100); 1 unhealthy, not counted\n"
            "  CPUs:       8/64 cores used\n"
            "  Memory:     64/512 GiB used\n"
            "  Tasks:      2\n"
            "  Last seen:  3s ago\n"
            "  Health:     ok\n"
            "\n"
            "Conditions:\n"
            "  none\n"
            "\n"
            "NUMA nodes:\n"
            "  ID  CPUS  MEM(GiB)  GPUS\n"
            "  0   32    256       0-3\n"
            "  1   32    256       4-7\n"
            "\n"
            "Devices:\n"
            "  INDEX  UUID                                      MODEL  MEM(GiB)  NUMA  LINK GROUP  HEALTH     SHARING  TASK\n"
            "  0      GPU-0a3f2c1e-1111-2222-3333-444455556666  H100   80        0     0           ok         -        -\n"
            "  1      GPU-1a3f2c1e-1111-2222-3333-444455556666  H100   80        0     0           ok         -        17.0\n"
            "  2      GPU-2a3f2c1e-1111-2222-3333-444455556666  H100   80        0     0           ok         -        -\n"
            "  3      GPU-3a3f2c1e-1111-2222-3333-444455556666  H100   80        0     0           ok         -        -\n"
            "  4      GPU-4a3f2c1e-1111-2222-3333-444455556666  H100   80        1     1           ok         -        -\n"
            "  5      GPU-5a3f2c1e-1111-2222-3333-444455556666  H100   80        1     1           ok         -        18.2#1\n"
            "  6      GPU-6a3f2c1e-1111-2222-3333-444455556666  H100   80        1     1           unhealthy  -        -\n"
            "  7      GPU-7a3f2c1e-1111-2222-3333-444455556666  H100   80        1     1           ok         -        -\n"
            "\n"
            "NVLink groups:\n"
            "  group 0: GPUs 0-3 (NVLink)\n"
            "  group 1: GPUs 4-7 (NVLink)\n");
}

TEST(FormatTest, NodeDetailWithoutLinksOrTopology) {
  NodeSummary node;
  node.name = "small";
  node.state = "NotReady";
  node.gpus_total = 2;
  for (uint32_t i = 0; i < 2; ++i) {
    DeviceSummary d;
    d.index = i;
    d.uuid = "GPU-" + std::to_string(i);
    d.model = "T4";
    node.devices.push_back(d);  // no NUMA node, no memory size, no links
  }
  const std::string text = FormatNodeDetail(node, kNow);
  EXPECT_NE(text.find("  Labels:     none\n  Taints:     none\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  GPUs:       0/2 used\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nNUMA nodes: none reported\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  0      GPU-0  T4     -         -     -           ok      -        -\n"), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.find("\nNVLink groups:")), "\nNVLink groups:\n  no NVLink: GPUs 0-1\n");

  // What an older coordinator sends: no devices at all.
  node.devices.clear();
  const std::string old = FormatNodeDetail(node, kNow);
  EXPECT_EQ(old.substr(old.find("\nNUMA nodes:")), "\nNUMA nodes: none reported\n\nDevices: none reported\n");
}

TEST(FormatTest, NodeDevicesInJson) {
  ListNodesReply reply;
  reply.nodes = {EightGpuNode()};
  auto json = nlohmann::json::parse(ToJson(reply));
  const auto& gpu5 = json["nodes"][0]["devices"][5];
  EXPECT_EQ(gpu5["index"], 5);
  EXPECT_EQ(gpu5["uuid"], "GPU-5a3f2c1e-1111-2222-3333-444455556666");
  EXPECT_EQ(gpu5["link_group"], 1);
  EXPECT_EQ(gpu5["numa"], 1);
  EXPECT_EQ(gpu5["task"], "18.2#1");
  EXPECT_EQ(gpu5["nvlink_peers"], (nlohmann::json{4, 6, 7}));
  EXPECT_EQ(json["nodes"][0]["devices"][6]["healthy"], false);
  EXPECT_EQ(json["nodes"][0]["numa"][1]["gpus"], (nlohmann::json{4, 5, 6, 7}));
  EXPECT_EQ(json["nodes"][0]["numa"][1]["cpu_milli"], 32000);

  auto back = wire::UnpackFromString<ListNodesReply>(wire::PackToString(reply));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->nodes[0].devices, reply.nodes[0].devices);
  EXPECT_EQ(back->nodes[0].numa, reply.nodes[0].numa);
}

// A NodeSummary as a coordinator from before devices and NUMA nodes sends it.
struct OldNodeSummary {
  std::string name = "old-node";
  std::string state = "Ready";
  uint32_t gpus_total = 4;
  template <typename V>
  void Fields(V& v) {
    v.Required("name", name);
    v.Required("state", state);
    v.Optional("gpus_total", gpus_total);
  }
};

TEST(FormatTest, NodeSummaryFromAnOlderCoordinatorDecodes) {
  auto node = wire::UnpackFromString<NodeSummary>(wire::PackToString(OldNodeSummary{}));
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->name, "old-node");
  EXPECT_EQ(node->gpus_total, 4u);
  EXPECT_TRUE(node->devices.empty());
  EXPECT_TRUE(node->numa.empty());
}

TEST(FormatTest, NodesTableShowsCordonPoolAndLabels) {
  ListNodesReply reply;
  NodeSummary a;
  a.name = "node-0";
  a.state = "Ready,Cordoned";  // as the coordinator sends it
  a.cordoned = true;
  a.pool = "exclusive";
  a.gpus_total = 8;
  a.labels = {{"team", "vision"}, {"rack", "r1"}, {"zone", ""}};
  NodeSummary b;
  b.name = "node-1";
  b.state = "Ready";
  b.pool = "pooled";
  b.gpus_total = 8;
  b.labels = {{"key-" + std::string(20, 'k'), std::string(30, 'v')}};
  reply.nodes = {a, b};
  EXPECT_EQ(FormatNodesTable(reply, kNow),
            "NAME    STATE           HEALTH  POOL       GPUS  CPUS  MEM(GiB)  MODELS  TASKS  LAST SEEN  TAINTS  LABELS\n"
            "node-0  Ready,Cordoned  ok      exclusive  0/8   0/0   0/0       -       0      -          -       rack=r1,team=vision,zone=\n"
            "node-1  Ready           ok      pooled     0/8   0/0   0/0       -       0      -          -       key-kkkkkkkkkkkkkkkkkkkk=vvvvvvvvvvvv...\n");
  // Shortened to 40 columns; the full labels are in --json.
  const std::string table = FormatNodesTable(reply, kNow);
  const std::string last = table.substr(table.rfind("key-"));
  EXPECT_EQ(last.size(), 40u + 1) << last;

  auto json = nlohmann::json::parse(ToJson(reply));
  EXPECT_EQ(json["nodes"][0]["cordoned"], true);
  EXPECT_EQ(json["nodes"][0]["pool"], "exclusive");
  EXPECT_EQ(json["nodes"][0]["labels"]["team"], "vision");
  EXPECT_EQ(json["nodes"][1]["labels"]["key-" + std::string(20, 'k')], std::string(30, 'v'));
}

TEST(FormatTest, JsonIsTheWireForm) {
  ListJobsReply reply;
  JobSummary a = Summary(17, "train", "Running");
  a.gpus = 8;
  reply.jobs = {a};
  auto json = nlohmann::json::parse(ToJson(reply));
  ASSERT_EQ(json["jobs"].size(), 1u);
  EXPECT_EQ(json["jobs"][0]["job_id"], 17);
  EXPECT_EQ(json["jobs"][0]["name"], "train");
  EXPECT_EQ(json["jobs"][0]["state"], "Running");
  EXPECT_EQ(json["jobs"][0]["gpus"], 8);

  auto detail = nlohmann::json::parse(ToJson(SampleJob()));
  EXPECT_EQ(detail["summary"]["job_id"], 17);
  EXPECT_EQ(detail["spec"]["tasks"][0]["resources"]["gpus"], 4);
  EXPECT_EQ(detail["spec"]["tasks"][0]["command"][3], "a b");
  EXPECT_EQ(detail["tasks"][1]["signal"], 9);
  EXPECT_EQ(detail["reasons"][1], "node-d: not ready");

  EXPECT_EQ(ToJson(SubmitJobReply{5, true}), R"({"duplicate":true,"job_id":5})");
}

TEST(FormatTest, LogJsonSurvivesBinaryData) {
  GetTaskLogReply log;
  log.data = std::string("ok\n\xff\xfe", 5);
  log.size = 100;
  log.truncated = true;
  auto json = nlohmann::json::parse(LogToJson(JobId(3), 1, log));
  EXPECT_EQ(json["job_id"], 3);
  EXPECT_EQ(json["task_index"], 1);
  EXPECT_EQ(json["size"], 100);
  EXPECT_EQ(json["truncated"], true);
  EXPECT_EQ(json["data"].get<std::string>().substr(0, 3), "ok\n");
}

// --- Policy fields, taints, queues, explain ---------------------------------------

TEST(FormatTest, JobDetailShowsClassPoolUserPlacementAndElasticGroups) {
  GetJobReply job = SampleJob();
  job.spec.priority_class = "high";
  job.spec.pool = "exclusive";
  job.spec.user = "alice";
  job.spec.node_selector = {{"rack", "r1"}, {"gpu", "a100"}};
  job.spec.prefer_labels = {{"zone", "a"}};
  job.spec.tolerations = {"maint", "dedicated=ml"};
  job.spec.tasks[0].replicas = 4;
  job.spec.tasks[0].min_replicas = 2;
  job.spec.tasks[0].resources.gpu_model = "A100";
  const std::string text = FormatJobDetail(job, kNow);
  EXPECT_NE(text.find("  Queue:          default\n"
                      "  Class:          high\n"
                      "  Priority:       5\n"
                      "  Pool:           exclusive\n"
                      "  User:           alice\n"
                      "  Node selector:  gpu=a100, rack=r1\n"
                      "  Prefers:        zone=a\n"
                      "  Tolerates:      maint, dedicated=ml\n"
                      "  Tasks:  "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  worker  4 (min 2)  4 GPUs (A100), 8 CPU, 32Gi memory  python3"), std::string::npos) << text;

  // min_replicas equal to replicas is not elastic: no "(min N)".
  job.spec.tasks[0].min_replicas = 4;
  EXPECT_NE(FormatJobDetail(job, kNow).find("  worker  4         4 GPUs (A100)"), std::string::npos);
}

TEST(FormatTest, NodesTableShowsTaints) {
  ListNodesReply reply;
  NodeSummary a;
  a.name = "node-0";
  a.state = "Ready";
  a.taints = {{"maint", ""}, {"dedicated", "ml"}};
  a.labels = {{"rack", "r1"}};
  reply.nodes = {a};
  EXPECT_EQ(FormatNodesTable(reply, kNow),
            "NAME    STATE  HEALTH  POOL  GPUS  CPUS  MEM(GiB)  MODELS  TASKS  LAST SEEN  TAINTS               LABELS\n"
            "node-0  Ready  ok      -     0/0   0/0   0/0       -       0      -          dedicated=ml,maint=  rack=r1\n");
  EXPECT_EQ(nlohmann::json::parse(ToJson(reply))["nodes"][0]["taints"]["dedicated"], "ml");
}

TEST(FormatTest, QuotasInFlagFormAndDisplayOrder) {
  EXPECT_EQ(FormatQuota({}), "none");
  EXPECT_EQ(FormatQuota({{"memory", 262144}, {"cpu", 64000}, {"gpu/H100", 2}, {"gpu", 16}, {"gpu/A100", 8}}),
            "gpu=16,gpu/A100=8,gpu/H100=2,cpu=64,memory=256Gi");
  EXPECT_EQ(FormatQuota({{"cpu", 500}, {"memory", 1536}}), "cpu=0.5,memory=1.5Gi");
  EXPECT_EQ(FormatQuota({{"memory", 100}}), "memory=100Mi");
  Quota a = {{"gpu/V100", 1}};
  Quota b = {{"gpu/A100", 1}, {"cpu", 1}};
  EXPECT_EQ(QuotaResources({&a, &b}), (std::vector<std::string>{"gpu", "gpu/A100", "gpu/V100", "cpu", "memory"}));
  EXPECT_EQ(QuotaResources({}), (std::vector<std::string>{"gpu", "cpu", "memory"}));
}

QueueSummary Queue(std::string name, std::string parent) {
  QueueSummary q;
  q.spec.name = std::move(name);
  q.spec.parent = std::move(parent);
  return q;
}

TEST(FormatTest, QueueTreeIndentsChildrenAndShowsEveryQuota) {
  QueueSummary root = Queue("root", "");
  root.allocated = {{"gpu", 12}, {"gpu/A100", 4}, {"cpu", 96000}, {"memory", 524288}};
  QueueSummary research = Queue("research", "root");
  research.spec.capability = {{"gpu", 16}, {"gpu/A100", 8}, {"cpu", 64000}, {"memory", 262144}};
  research.spec.deserved = {{"gpu", 8}, {"cpu", 32000}};
  research.spec.guarantee = {{"gpu", 4}};
  research.allocated = {{"gpu", 12}, {"gpu/A100", 4}, {"cpu", 96000}, {"memory", 524288}};
  research.jobs_pending = 3;
  research.jobs_running = 2;
  QueueSummary vision = Queue("vision", "research");
  vision.spec.deserved = {{"cpu", 500}};
  vision.allocated = {{"gpu", 2}, {"memory", 1536}};
  vision.jobs_running = 1;
  ListQueuesReply reply;
  // Parents first, but breadth first: the table still shows vision under research.
  reply.queues = {root, Queue("default", "root"), research, vision};
  EXPECT_EQ(FormatQueueTree(reply),
            "QUEUE       GPU        GPU/A100  CPU         MEM(GiB)     PENDING  RUNNING\n"
            "root        12/-/-/-   4/-/-/-   96/-/-/-    512/-/-/-    0        0\n"
            "  default   0/-/-/-    0/-/-/-   0/-/-/-     0/-/-/-      0        0\n"
            "  research  12/8/4/16  4/-/-/8   96/32/-/64  512/-/-/256  3        2\n"
            "    vision  2/-/-/-    0/-/-/-   0/0.5/-/-   1.5/-/-/-    0        1\n"
            "(each resource: allocated/deserved/guarantee/capability; - = not set)\n");
  EXPECT_EQ(FormatQueueTree(ListQueuesReply{}), "No queues.\n");

  // A queue whose parent is not in the reply is shown at the top rather than dropped.
  ListQueuesReply orphan;
  orphan.queues = {Queue("lost", "gone")};
  EXPECT_EQ(FormatQueueTree(orphan),
            "QUEUE  GPU      CPU      MEM(GiB)  PENDING  RUNNING\n"
            "lost   0/-/-/-  0/-/-/-  0/-/-/-   0        0\n"
            "(each resource: allocated/deserved/guarantee/capability; - = not set)\n");
}

ExplainJobReply SampleExplain() {
  ExplainJobReply reply;
  reply.job = Summary(17, "train", "Pending");
  reply.job.queue = "vision";
  reply.job.priority = 5;
  reply.job.gpus = 8;
  reply.reasons = {"queue research: capability gpu=16 reached (12 allocated, job asks 8)",
                   "node-c: 2 free GPUs, need 4"};
  QueueSummary vision = Queue("vision", "research");
  vision.spec.deserved = {{"gpu", 4}};
  vision.allocated = {{"gpu", 4}};
  QueueSummary research = Queue("research", "root");
  research.spec.capability = {{"gpu", 16}, {"gpu/A100", 8}};
  research.spec.deserved = {{"gpu", 8}};
  research.spec.guarantee = {{"gpu", 4}};  // not shown: explain shows allocated/deserved/capability
  research.allocated = {{"gpu", 12}, {"cpu", 1500}};
  QueueSummary root = Queue("root", "");
  root.allocated = {{"gpu", 12}, {"cpu", 1500}, {"memory", 2048}};
  reply.queue_path = {vision, research, root};
  reply.jobs_ahead = 3;
  return reply;
}

TEST(FormatTest, ExplainShowsReasonsQueuePathAndJobsAhead) {
  EXPECT_EQ(FormatExplain(SampleExplain()),
            "Job 17 train: Pending in queue vision, priority 5, 8 GPUs\n"
            "Reasons:\n"
            "  - queue research: capability gpu=16 reached (12 allocated, job asks 8)\n"
            "  - node-c: 2 free GPUs, need 4\n"
            "Queue path (leaf to root; each resource: allocated/deserved/capability, - = not set):\n"
            "  QUEUE     GPU      GPU/A100  CPU      MEM(GiB)\n"
            "  vision    4/4/-    0/-/-     0/-/-    0/-/-\n"
            "  research  12/8/16  0/-/8     1.5/-/-  0/-/-\n"
            "  root      12/-/-   0/-/-     1.5/-/-  2/-/-\n"
            "3 jobs ahead in queue vision\n");
}

TEST(FormatTest, ExplainWithoutReasonsOrPath) {
  ExplainJobReply reply;
  reply.job = Summary(4, "solo", "Running");
  reply.job.gpus = 1;
  reply.jobs_ahead = 1;
  EXPECT_EQ(FormatExplain(reply),
            "Job 4 solo: Running in queue default, priority 0, 1 GPU\n"
            "Reasons: none\n"
            "1 job ahead in queue default\n");
  auto json = nlohmann::json::parse(ToJson(SampleExplain()));
  EXPECT_EQ(json["jobs_ahead"], 3);
  EXPECT_EQ(json["queue_path"][1]["spec"]["capability"]["gpu/A100"], 8);
  EXPECT_EQ(json["queue_path"][1]["allocated"]["cpu"], 1500);
  EXPECT_EQ(json["reasons"].size(), 2u);
}

TEST(FormatTest, JobDetailShowsSharesAndMeasuredGpuMemory) {
  GetJobReply reply;
  reply.summary.job_id = 9;
  reply.summary.name = "nb";
  reply.summary.state = "Running";
  TaskInfo share;
  share.index = 0;
  share.state = "Running";
  share.node = "n1";
  share.gpu_indices = {0};
  share.grant.shared = true;
  share.grant.gpu_memory_mib = 20480;
  share.grant.gpu_compute_pct = 30;
  share.grant.sharing_qos = "fixed-share";
  share.gpu_memory_used_mib = 5120;
  TaskInfo mig = share;
  mig.index = 1;
  mig.grant = DeviceGrant{};
  mig.grant.mig_profile = "1g.10gb";
  mig.gpu_memory_used_mib = -1;
  reply.tasks = {share, mig};
  const std::string text = FormatJobDetail(reply, 0);
  EXPECT_NE(text.find("GPU SHARE"), std::string::npos) << text;
  EXPECT_NE(text.find("20 GiB/GPU 30% fixed-share  5 GiB"), std::string::npos) << text;
  EXPECT_NE(text.find("MIG 1g.10gb"), std::string::npos) << text;
  reply.tasks = {TaskInfo{.index = 0, .state = "Pending"}};
  EXPECT_EQ(FormatJobDetail(reply, 0).find("GPU SHARE"), std::string::npos) << "no device columns for whole GPUs";
}

}  // namespace
}  // namespace gpool
