// ExportSnapshot through the gateway (gateway_snapshot.cc, snapshot_exports.h):
// the chunks add up to the state's image at one index, the start is audited
// once, and every misuse is a typed error that holds nothing.
#include <string>

#include <gtest/gtest.h>

#include "control/gateway_fixture.h"
#include "protocol/base/sha256.h"
#include "protocol/message_type.h"
#include "protocol/messages_client.h"
#include "protocol/messages_snapshot.h"

namespace gpool::control {
namespace {

class GatewaySnapshotTest : public GatewayTest {
 protected:
  GatewaySnapshotTest() {
    AddRoleTree();
    for (int i = 0; i < 20; ++i) Send(SubmitJob{OneGpuJob("job-" + std::to_string(i)), ""});
  }
  static Principal Admin() { return Principal{Principal::Kind::kUser, "root-admin", kKeyAdmin}; }

  // Starts an export and reads it to its end in chunks of `chunk` bytes.
  std::string ExportAll(uint32_t chunk, ExportSnapshotReply* first_reply = nullptr) {
    SendAs(Admin(), ExportSnapshot{.max_bytes = chunk});
    ExportSnapshotReply reply = LastAs<ExportSnapshotReply>();
    if (first_reply != nullptr) *first_reply = reply;
    std::string image = reply.data;
    while (image.size() < reply.total_bytes && !reply.data.empty()) {
      SendAs(Admin(), ExportSnapshot{reply.export_id, image.size(), chunk});
      reply = LastAs<ExportSnapshotReply>();
      EXPECT_EQ(reply.offset, image.size());
      image += reply.data;
    }
    return image;
  }
};

TEST_F(GatewaySnapshotTest, ChunksAddUpToTheStateAtOneIndexAndRestore) {
  proposer_.set_epoch(9);
  ExportSnapshotReply first;
  const std::string image = ExportAll(1000, &first);
  // Taken after the start's audit entry was applied, and nothing since.
  EXPECT_EQ(image, state_.Snapshot());
  EXPECT_EQ(first.index, state_.applied_index());
  EXPECT_EQ(first.term, 9u);
  EXPECT_EQ(first.replica_id, "c-1");
  EXPECT_EQ(first.total_bytes, image.size());
  EXPECT_EQ(first.sha256, Sha256::Of(image));
  EXPECT_GT(image.size(), 3000u) << "too small to need several chunks";
  state::ClusterState restored;
  ASSERT_TRUE(restored.Restore(image).ok());
  EXPECT_EQ(restored.jobs().size(), 20u);
  EXPECT_EQ(restored.applied_index(), first.index);
}

TEST_F(GatewaySnapshotTest, TheStartIsAuditedAndItsChunksAreNot) {
  const size_t before = state_.audit().size();
  ExportAll(500);
  ASSERT_EQ(state_.audit().size(), before + 1);
  EXPECT_EQ(state_.audit().back().request, "ExportSnapshot");
  EXPECT_EQ(state_.audit().back().user, "root-admin");
  EXPECT_TRUE(state_.audit().back().allowed);
}

TEST_F(GatewaySnapshotTest, MisuseIsATypedErrorAndHoldsNothing) {
  SendAs(Admin(), ExportSnapshot{.export_id = 77});
  EXPECT_EQ(LastError(), "NotFound");
  SendAs(Admin(), ExportSnapshot{.offset = 5});
  EXPECT_EQ(LastError(), "InvalidArgument");
  EXPECT_EQ(gateway_->snapshot_exports_held(), 0u);

  SendAs(Admin(), ExportSnapshot{.max_bytes = 100});
  const auto reply = LastAs<ExportSnapshotReply>();
  EXPECT_EQ(reply.data.size(), 100u);
  SendAs(Admin(), ExportSnapshot{reply.export_id, reply.total_bytes + 1, 100});
  EXPECT_EQ(LastError(), "InvalidArgument");
  // A chunk asked larger than the cap comes at the cap.
  SendAs(Admin(), ExportSnapshot{reply.export_id, 0, 0xffffffffu});
  EXPECT_EQ(LastAs<ExportSnapshotReply>().data.size(),
            std::min<uint64_t>(reply.total_bytes, kMaxSnapshotChunkBytes));

  // Two held at most: the one read to its end makes room; then a third
  // waits for one to be read or to expire.
  SendAs(Admin(), ExportSnapshot{.max_bytes = 100});
  SendAs(Admin(), ExportSnapshot{.max_bytes = 100});
  EXPECT_EQ(Last().type(), MessageType::kExportSnapshotReply) << ErrorOf(Last());
  SendAs(Admin(), ExportSnapshot{.max_bytes = 100});
  EXPECT_EQ(LastError(), "ResourceExhausted");
  EXPECT_EQ(gateway_->snapshot_exports_held(), 2u);

  gateway_->Tick(now_ms_ + SnapshotExports::kIdleMs + 1);
  EXPECT_EQ(gateway_->snapshot_exports_held(), 0u);
  SendAs(Admin(), ExportSnapshot{reply.export_id, 100, 100});
  EXPECT_EQ(LastError(), "NotFound");
}

TEST_F(GatewaySnapshotTest, AReadExportGoesFirstAndLosingTheLeadDropsAll) {
  ExportAll(0);
  EXPECT_EQ(gateway_->snapshot_exports_held(), 1u);  // kept briefly for a resent last request
  SendAs(Admin(), ExportSnapshot{.max_bytes = 100});
  SendAs(Admin(), ExportSnapshot{.max_bytes = 100});  // room made by dropping the one read to its end
  EXPECT_EQ(Last().type(), MessageType::kExportSnapshotReply) << ErrorOf(Last());
  EXPECT_EQ(gateway_->snapshot_exports_held(), 2u);
  proposer_.set_leading(false);
  gateway_->Tick(now_ms_);
  EXPECT_EQ(gateway_->snapshot_exports_held(), 0u);
}

}  // namespace
}  // namespace gpool::control
