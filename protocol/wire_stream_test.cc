// ValueStream (issue 49): a large value read one inner value at a time must
// read what UnpackFromString reads, and refuse truncated, damaged or
// oversized input with a typed error.
#include "protocol/wire_stream.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace gpool::wire {
namespace {

struct StreamItem {
  uint64_t id = 0;
  std::string name;
  std::vector<std::string> tags;
  template <typename V>
  void Fields(V& v) {
    v.Required("id", id);
    v.Optional("name", name);
    v.Optional("tags", tags);
  }
};

struct StreamImage {
  uint64_t applied = 0;
  std::vector<StreamItem> items;
  std::map<std::string, uint64_t> cursors;
  template <typename V>
  void Fields(V& v) {
    v.Required("applied", applied);
    v.Required("items", items);
    v.Optional("cursors", cursors);
  }
};

StreamImage SampleImage(size_t items) {
  StreamImage image;
  image.applied = 77;
  for (size_t i = 0; i < items; ++i) {
    image.items.push_back(StreamItem{i + 1, "item-" + std::to_string(i), {"a", std::string(i % 40, 'x')}});
  }
  image.cursors = {{"sink", 9}};
  return image;
}

// Reads a StreamImage as a restore does: the outer map and the items array
// by hand, each item and every other value whole.
Result<StreamImage> ReadStreamed(std::string_view bytes) {
  ValueStream in(bytes, DecodeLimits{});
  StreamImage out;
  GPOOL_ASSIGN_OR_RETURN(uint32_t fields, in.BeginMap("value"));
  for (uint32_t f = 0; f < fields; ++f) {
    GPOOL_ASSIGN_OR_RETURN(std::string_view key, in.Key("value"));
    if (key == "applied") {
      GPOOL_ASSIGN_OR_RETURN(msgpack::object_handle value, in.Next("value.applied"));
      if (value.get().type != msgpack::type::POSITIVE_INTEGER) return Status::Malformed("applied: not a number");
      out.applied = value.get().via.u64;
    } else if (key == "items") {
      GPOOL_ASSIGN_OR_RETURN(uint32_t count, in.BeginArray("value.items"));
      for (uint32_t i = 0; i < count; ++i) {
        StreamItem item;
        GPOOL_RETURN_IF_ERROR(in.Read("value.items[" + std::to_string(i) + "]", &item));
        out.items.push_back(std::move(item));
      }
    } else {
      GPOOL_RETURN_IF_ERROR(in.Skip("value." + std::string(key)));
    }
  }
  if (!in.done()) return Status::Malformed("trailing bytes");
  return out;
}

TEST(ValueStreamTest, ReadsWhatTheWholeValueDecoderReads) {
  const StreamImage image = SampleImage(300);  // array16 and str8 headers
  const std::string bytes = PackToString(image);
  auto streamed = ReadStreamed(bytes);
  ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
  auto whole = UnpackFromString<StreamImage>(bytes);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(streamed->applied, 77u);
  ASSERT_EQ(streamed->items.size(), whole->items.size());
  for (size_t i = 0; i < whole->items.size(); ++i) {
    EXPECT_EQ(streamed->items[i].id, whole->items[i].id);
    EXPECT_EQ(streamed->items[i].name, whole->items[i].name);
    EXPECT_EQ(streamed->items[i].tags, whole->items[i].tags);
  }
}

TEST(ValueStreamTest, ReadsEveryHeaderWidth) {
  // map32, array32 and str32 headers are legal for small sizes too.
  std::string bytes = "\xdf";
  bytes += std::string("\x00\x00\x00\x01", 4);
  bytes += "\xdb" + std::string("\x00\x00\x00\x01", 4) + "k";
  bytes += "\xdd" + std::string("\x00\x00\x00\x02", 4) + "\x01\x02";
  ValueStream in(bytes, DecodeLimits{});
  ASSERT_EQ(in.BeginMap("v").value(), 1u);
  ASSERT_EQ(in.Key("v").value(), "k");
  ASSERT_EQ(in.BeginArray("v.k").value(), 2u);
  EXPECT_EQ(in.Next("v.k").value().get().via.u64, 1u);
  EXPECT_EQ(in.Next("v.k").value().get().via.u64, 2u);
  EXPECT_TRUE(in.done());
}

TEST(ValueStreamTest, EveryTruncationIsATypedError) {
  const std::string bytes = PackToString(SampleImage(20));
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    auto streamed = ReadStreamed(std::string_view(bytes).substr(0, cut));
    ASSERT_FALSE(streamed.ok()) << "cut at " << cut;
    EXPECT_EQ(streamed.status().code(), StatusCode::kMalformed) << "cut at " << cut << ": "
                                                               << streamed.status().ToString();
  }
}

TEST(ValueStreamTest, WrongShapesAreMalformedAndNameThePath) {
  ValueStream not_map("\x91\x01", DecodeLimits{});
  EXPECT_EQ(not_map.BeginMap("value").status().code(), StatusCode::kMalformed);
  EXPECT_NE(not_map.BeginMap("value").status().message().find("value: expected a map"), std::string::npos);
  ValueStream not_array("\x81\xa1k\x01", DecodeLimits{});
  EXPECT_EQ(not_array.BeginArray("value").status().code(), StatusCode::kMalformed);
  ValueStream number_key("\x81\x01\x01", DecodeLimits{});
  ASSERT_TRUE(number_key.BeginMap("value").ok());
  EXPECT_EQ(number_key.Key("value").status().code(), StatusCode::kMalformed);
  // 0xc1 is the one byte msgpack never uses.
  ValueStream unused("\x91\xc1", DecodeLimits{});
  ASSERT_TRUE(unused.BeginArray("value").ok());
  EXPECT_EQ(unused.Next("value").status().code(), StatusCode::kMalformed);
  EXPECT_EQ(unused.Skip("value").code(), StatusCode::kMalformed);
  // An item of the wrong shape: the reader's error, under the item's path.
  StreamImage image = SampleImage(3);
  std::string bytes = PackToString(image);
  const std::string good_key = "\xa2id";
  const size_t at = bytes.rfind(good_key);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1] = 'x';  // the last item has no "id" now
  auto streamed = ReadStreamed(bytes);
  ASSERT_FALSE(streamed.ok());
  EXPECT_EQ(streamed.status().code(), StatusCode::kMalformed);
  EXPECT_NE(streamed.status().message().find("value.items[2].id: required field is missing"), std::string::npos)
      << streamed.status().ToString();
}

TEST(ValueStreamTest, DeclaredSizesPastTheLimitsAreRefusedBeforeAnythingIsBuilt) {
  DecodeLimits limits;
  limits.max_container_elements = 10;
  // An array32 declaring 2^32-1 elements in 5 bytes.
  ValueStream huge_array("\xdd\xff\xff\xff\xff", limits);
  EXPECT_EQ(huge_array.BeginArray("value").status().code(), StatusCode::kResourceExhausted);
  ValueStream huge_map("\xdf\xff\xff\xff\xff", limits);
  EXPECT_EQ(huge_map.BeginMap("value").status().code(), StatusCode::kResourceExhausted);
  // Inside an element, UnpackOne's limits apply.
  std::string nested = "\x91\xdd";
  nested += std::string("\x00\x00\x00\x0b", 4) + std::string(11, '\x01');
  ValueStream inner(nested, limits);
  ASSERT_TRUE(inner.BeginArray("value").ok());
  EXPECT_EQ(inner.Next("value").status().code(), StatusCode::kResourceExhausted);
  // A value declaring more than the bytes hold is truncated, not allocated.
  ValueStream lying(std::string_view("\x91\xdd\x00\x10\x00\x00\x01", 7), DecodeLimits{});
  ASSERT_TRUE(lying.BeginArray("value").ok());
  EXPECT_EQ(lying.Next("value").status().code(), StatusCode::kMalformed);
}

TEST(ValueStreamTest, OffsetAdvancesOnlyPastWhatWasRead) {
  const std::string bytes = PackToString(SampleImage(2));
  ValueStream in(bytes, DecodeLimits{});
  EXPECT_EQ(in.offset(), 0u);
  ASSERT_TRUE(in.BeginMap("value").ok());
  EXPECT_EQ(in.offset(), 1u);
  ASSERT_TRUE(in.Key("value").ok());
  const size_t before = in.offset();
  EXPECT_FALSE(in.NextIsNil());
  ASSERT_TRUE(in.Skip("value.applied").ok());
  EXPECT_GT(in.offset(), before);
  EXPECT_FALSE(in.done());
}

}  // namespace
}  // namespace gpool::wire
