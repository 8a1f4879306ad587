// Named enums on the wire (base/enum_names.h): every value round-trips as its
// name, the bytes are those of the string the field held before it was an
// enum, and a name no value has is refused at decode with InvalidArgument
// naming the field and the value.
#include <gtest/gtest.h>

#include <string>

#include "protocol/health.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_usage.h"
#include "protocol/model/node_update.h"
#include "protocol/model/probe.h"
#include "protocol/model/queue_update.h"
#include "protocol/model/api_token.h"
#include "protocol/model/users.h"
#include "protocol/wire.h"

namespace gpool {
namespace {

// A one-field map {"v": value}: what a field of type T looks like in a message.
template <typename T>
struct One {
  T v{};
  template <typename V>
  void Fields(V& visitor) {
    visitor.Required("v", v);
  }
};

// Every value of E packs to the msgpack string of its name, and reads back.
template <NamedEnum E>
void ExpectEveryValueRoundTrips() {
  for (size_t i = 0; i < EnumNames<E>::kNames.size(); ++i) {
    const E value = static_cast<E>(i);
    const std::string name(EnumNames<E>::kNames[i]);
    // Today's bytes: the same map with the name as a plain string.
    EXPECT_EQ(wire::PackToString(One<E>{value}), wire::PackToString(One<std::string>{name})) << name;
    auto back = wire::UnpackFromString<One<E>>(wire::PackToString(One<std::string>{name}));
    ASSERT_TRUE(back.ok()) << name << ": " << back.status().ToString();
    EXPECT_EQ(back->v, value) << name;
    EXPECT_EQ(NameOf(value), name);
  }
}

TEST(EnumWireTest, EveryNamedEnumRoundTripsAsItsName) {
  ExpectEveryValueRoundTrips<NodeUpdateOp>();
  ExpectEveryValueRoundTrips<QueueOp>();
  ExpectEveryValueRoundTrips<UserOp>();
  ExpectEveryValueRoundTrips<Role>();
  ExpectEveryValueRoundTrips<ReplicaOp>();
  ExpectEveryValueRoundTrips<PricesOp>();
  ExpectEveryValueRoundTrips<ProbeKind>();
  ExpectEveryValueRoundTrips<TaskEventKind>();
  ExpectEveryValueRoundTrips<TaskState>();
  ExpectEveryValueRoundTrips<NodeState>();
  ExpectEveryValueRoundTrips<TokenScope>();
}

TEST(EnumWireTest, TheSpellingsAreTheOnesPeersAlreadySend) {
  // Older CLIs, workers, the Python SDK and docs/protocol.md use these.
  EXPECT_EQ(NameOf(NodeUpdateOp::kWorkerKey), "worker-key");
  EXPECT_EQ(NameOf(UserOp::kRemoveKey), "remove-key");
  EXPECT_EQ(NameOf(Role::kQueueAdmin), "queue-admin");
  EXPECT_EQ(NameOf(TaskState::kRunning), "Running");
  EXPECT_EQ(NameOf(NodeState::kNotReady), "NotReady");
  EXPECT_EQ(NameOf(TaskEventKind::kLost), "lost");
  EXPECT_EQ(NameOf(ProbeKind::kGpu), "gpu");
  EXPECT_EQ(NameOf(PricesOp::kShow), "show");
}

TEST(EnumWireTest, WholeMessagesKeepTheirBytes) {
  // A message built with enums packs exactly as one built from the strings.
  UpdateUser user{.op = UserOp::kGrant, .spec = UserSpec{.name = "bob", .roles = {{Role::kMember, "ml"}}}};
  // with_rotation: the fields issue 48's key rotation added (key_expiry,
  // retire_keys, grace_ms), written by today's build; a message without
  // them (an older client's) still decodes.
  auto packed = [](bool with_rotation) {
    msgpack::sbuffer buffer;
    wire::Packer p(buffer);
    p.BeginMap(with_rotation ? 4 : 2);
    p.Field("op", "grant");
    p.Key("spec");
    p.BeginMap(with_rotation ? 6 : 5);
    p.Field("name", "bob");
    p.Field("keys", std::vector<std::string>{});
    p.Field("uid", int64_t{-1});
    p.Field("gid", int64_t{-1});
    p.Key("roles");
    p.BeginArray(1);
    p.BeginMap(2);
    p.Field("role", "member");
    p.Field("queue", "ml");
    if (with_rotation) {
      p.Field("key_expiry", std::map<std::string, int64_t>{});
      p.Field("retire_keys", std::vector<std::string>{});
      p.Field("grace_ms", uint64_t{0});
    }
    return std::string(buffer.data(), buffer.size());
  };
  EXPECT_EQ(wire::PackToString(user), packed(true));
  auto back = wire::UnpackFromString<UpdateUser>(packed(false));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->op, UserOp::kGrant);
  ASSERT_EQ(back->spec.roles.size(), 1u);
  EXPECT_EQ(back->spec.roles[0].role, Role::kMember);
}

TEST(EnumWireTest, AnUnknownNameIsATypedErrorNamingFieldAndValue) {
  auto node = wire::UnpackFromString<UpdateNode>(
      wire::PackToString(std::map<std::string, std::string>{{"node", "n1"}, {"op", "explode"}}));
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(node.status().message(),
            "value.op: 'explode' is not cordon, uncordon, label, pool, taint or worker-key");

  // Nested: the path leads to the grant.
  msgpack::sbuffer buffer;
  wire::Packer p(buffer);
  p.BeginMap(2);
  p.Field("op", "grant");
  p.Key("spec");
  p.BeginMap(2);
  p.Field("name", "bob");
  p.Key("roles");
  p.BeginArray(1);
  p.BeginMap(1);
  p.Field("role", "overlord");
  auto user = wire::UnpackFromString<UpdateUser>(std::string(buffer.data(), buffer.size()));
  ASSERT_FALSE(user.ok());
  EXPECT_EQ(user.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(user.status().message(),
            "value.spec.roles[0].role: 'overlord' is not admin, queue-admin, member or viewer");

  // A long value is cut in the message.
  auto event = wire::UnpackFromString<One<TaskEventKind>>(wire::PackToString(One<std::string>{std::string(100, 'x')}));
  ASSERT_FALSE(event.ok());
  EXPECT_EQ(event.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(event.status().message().find("'" + std::string(32, 'x') + "' is not started"), std::string::npos);
  EXPECT_EQ(event.status().message().find(std::string(33, 'x')), std::string::npos);
}

TEST(EnumWireTest, ANumberWhereANameBelongsIsMalformed) {
  auto queue = wire::UnpackFromString<One<QueueOp>>(wire::PackToString(One<uint32_t>{1}));
  ASSERT_FALSE(queue.ok());
  EXPECT_EQ(queue.status().code(), StatusCode::kMalformed);
  EXPECT_NE(queue.status().message().find("value.v"), std::string::npos);
}

TEST(EnumWireTest, OptionalNamedEnumsKeepTheirDefaultWhenAbsent) {
  // UpdatePrices.op is optional: an older client that sends no op asks to show.
  auto prices = wire::UnpackFromString<UpdatePrices>(wire::PackToString(std::map<std::string, std::string>{}));
  ASSERT_TRUE(prices.ok()) << prices.status().ToString();
  EXPECT_EQ(prices->op, PricesOp::kShow);
}

TEST(EnumWireTest, EnumsWithoutNamesStillTravelAsNumbers) {
  // Stored codes (health kinds in worker files, message types) keep their numbers.
  EXPECT_EQ(wire::PackToString(One<HealthSeverity>{HealthSeverity::kFatal}), wire::PackToString(One<uint32_t>{2}));
}

}  // namespace
}  // namespace gpool
