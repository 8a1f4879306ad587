// Time-sliced GPUs and exclusive cores as `gpool nodes` (table and --json)
// and `gpool node show` render them (format_cores.h).
#include "client/format_cores.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "client/cli.h"
#include "client/cli_test_fixture.h"
#include "client/format.h"
#include "client/testing/fake_client.h"

namespace gpool {
namespace {

NodeSummary SlicedNodeSummary() {
  NodeSummary node;
  node.name = "t4-1";
  node.state = "Ready";
  node.pool = "public";
  node.gpus_total = 2;
  node.gpus_used = 1;
  node.time_sliced_gpus = 1;
  node.time_slices = 4;
  node.time_slices_used = 3;
  return node;
}

TEST(FormatCoresTest, GpusCellShowsReplicasOnlyWhereThereAreSome) {
  EXPECT_EQ(NodeGpusCell(SlicedNodeSummary()), "1/2 (3/4 slices)");
  NodeSummary plain;
  plain.gpus_total = 8;
  plain.gpus_used = 2;
  EXPECT_EQ(NodeGpusCell(plain), "2/8");
}

TEST(FormatCoresTest, ADevicesSharingCellSaysItIsTimeSliced) {
  DeviceSummary d;
  d.index = 0;
  d.time_slices = 4;
  DeviceGrant replica;
  replica.time_slice = true;
  d.tenants = {{"7.0", replica}, {"8.0", replica}};
  EXPECT_EQ(TimeSliceCell(d), "time-sliced 2/4 (no memory isolation)");
  NodeSummary node;
  node.devices = {d};
  EXPECT_NE(FormatDeviceTable(node, true).find("time-sliced 2/4 (no memory isolation)  7.0,8.0"), std::string::npos)
      << FormatDeviceTable(node, true);
  EXPECT_EQ(TimeSliceCell(DeviceSummary{}), "");
}

TEST(FormatCoresTest, NumaTableListsExclusiveCoresWhenCpulistsAreKnown) {
  NodeSummary node;
  node.numa = {NumaSummary{0, 4000, 8192, {0}, "0-3", {1, 2}}, NumaSummary{1, 4000, 8192, {1}, "4-7", {}}};
  EXPECT_EQ(FormatNumaTable(node, ""),
            "ID  CPUS  MEM(GiB)  GPUS  CPULIST  EXCLUSIVE\n"
            "0   4     8         0     0-3      1-2\n"
            "1   4     8         1     4-7      -\n");
  node.numa = {NumaSummary{0, 4000, 8192, {0}, "", {}}};
  EXPECT_EQ(FormatNumaTable(node, ""), "ID  CPUS  MEM(GiB)  GPUS\n0   4     8         0\n") << "no cpulist: as before";
}

class TimeSliceCliTest : public client::testing::CliTest {
 protected:
  TimeSliceCliTest() { cluster_->nodes.nodes = {SlicedNodeSummary()}; }
};

TEST_F(TimeSliceCliTest, NodesShowsTheReplicasInTheTableAndTheJson) {
  ASSERT_EQ(Run({"nodes"}), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("1/2 (3/4 slices)"), std::string::npos) << out_.str();
  ASSERT_EQ(Run({"nodes", "--json"}), kExitOk) << err_.str();
  auto json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["nodes"][0]["time_sliced_gpus"], 1);
  EXPECT_EQ(json["nodes"][0]["time_slices"], 4);
  EXPECT_EQ(json["nodes"][0]["time_slices_used"], 3);
}

}  // namespace
}  // namespace gpool
