#include "storage/key_encoding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

namespace gpool::storage {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

TEST(KeyEncodingTest, U64IsBigEndianFixedWidth) {
  std::string out;
  AppendU64(&out, 0x0102030405060708ull);
  EXPECT_EQ(out, Bytes({1, 2, 3, 4, 5, 6, 7, 8}));
  std::string_view in = out;
  auto value = ReadU64(&in);
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, 0x0102030405060708ull);
  EXPECT_TRUE(in.empty());
}

TEST(KeyEncodingTest, U64ExtremesRoundTrip) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{255}, uint64_t{256}, ~uint64_t{0}}) {
    std::string out;
    AppendU64(&out, v);
    std::string_view in = out;
    EXPECT_EQ(ReadU64(&in).value(), v);
  }
}

TEST(KeyEncodingTest, ShortU64IsMalformedAndConsumesNothing) {
  std::string seven(7, 'x');
  std::string_view in = seven;
  auto value = ReadU64(&in);
  EXPECT_EQ(value.status().code(), StatusCode::kMalformed);
  EXPECT_EQ(in.size(), 7u);
}

TEST(KeyEncodingTest, StringEscapesZeroAndTerminates) {
  std::string out;
  AppendOrderedString(&out, std::string("a\0b", 3));
  EXPECT_EQ(out, Bytes({'a', 0, 0xff, 'b', 0, 1}));
  out.clear();
  AppendOrderedString(&out, "");
  EXPECT_EQ(out, Bytes({0, 1}));
}

TEST(KeyEncodingTest, StringRoundTripsAndStopsAtItsTerminator) {
  std::string original("\0\0x\xff\x01\0", 6);
  std::string out;
  AppendOrderedString(&out, original);
  out += "rest";
  std::string_view in = out;
  auto value = ReadOrderedString(&in);
  ASSERT_TRUE(value.ok()) << value.status().ToString();
  EXPECT_EQ(*value, original);
  EXPECT_EQ(in, "rest");
}

TEST(KeyEncodingTest, MalformedStringsAreRejected) {
  for (const std::string& bad : {Bytes({'a', 'b'}),           // no terminator
                                 Bytes({'a', 0}),             // ends inside an escape
                                 Bytes({'a', 0, 2, 0, 1}),    // unknown escape
                                 Bytes({})}) {
    std::string_view in = bad;
    auto value = ReadOrderedString(&in);
    EXPECT_EQ(value.status().code(), StatusCode::kMalformed) << EscapeKey(bad);
    EXPECT_EQ(in.size(), bad.size());
  }
}

TEST(KeyEncodingTest, BuilderAndDecoderRoundTrip) {
  std::string key = KeyBuilder("jobs/").String("train").U64(42).String("").Build();
  KeyDecoder d(key);
  ASSERT_TRUE(d.ExpectPrefix("jobs/").ok());
  EXPECT_EQ(d.String().value(), "train");
  EXPECT_EQ(d.U64().value(), 42u);
  EXPECT_EQ(d.String().value(), "");
  EXPECT_TRUE(d.Done().ok());
}

TEST(KeyEncodingTest, DecoderRejectsWrongPrefixShortFieldsAndTrailingBytes) {
  std::string key = KeyBuilder("raft/log/").U64(7).Build();
  {
    KeyDecoder d(key);
    Status s = d.ExpectPrefix("raft/hard");
    EXPECT_EQ(s.code(), StatusCode::kMalformed);
    EXPECT_NE(s.message().find("raft/log/"), std::string::npos) << s.ToString();
  }
  {
    KeyDecoder d(std::string_view(key).substr(0, key.size() - 1));
    ASSERT_TRUE(d.ExpectPrefix("raft/log/").ok());
    EXPECT_EQ(d.U64().status().code(), StatusCode::kMalformed);
  }
  {
    std::string longer = key + "x";
    KeyDecoder d(longer);
    ASSERT_TRUE(d.ExpectPrefix("raft/log/").ok());
    ASSERT_TRUE(d.U64().ok());
    EXPECT_EQ(d.remaining(), "x");
    EXPECT_EQ(d.Done().code(), StatusCode::kMalformed);
  }
  {
    std::string bad = KeyBuilder("t/").Raw(Bytes({'a', 0, 7})).Build();
    KeyDecoder d(bad);
    ASSERT_TRUE(d.ExpectPrefix("t/").ok());
    Status s = d.String().status();
    EXPECT_EQ(s.code(), StatusCode::kMalformed);
    EXPECT_NE(s.message().find("t/a\\x00\\x07"), std::string::npos) << s.ToString();
  }
}

TEST(KeyEncodingTest, PrefixSuccessor) {
  EXPECT_EQ(PrefixSuccessor("raft/log/"), "raft/log0");
  EXPECT_EQ(PrefixSuccessor(Bytes({'a', 0xff, 0xff})), "b");
  EXPECT_EQ(PrefixSuccessor(Bytes({0xff})), "");
  EXPECT_EQ(PrefixSuccessor(""), "");
  std::string successor = PrefixSuccessor("p");
  EXPECT_LT(std::string("p") + Bytes({0xff, 0xff}), successor);
}

TEST(KeyEncodingTest, EscapeKeyIsPrintable) {
  EXPECT_EQ(EscapeKey(Bytes({'a', 0, 0xff, '"'})), "a\\x00\\xff\\x22");
}

// The property the encoding exists for: memcmp order of encoded keys equals
// the tuple order of the values, including strings that are prefixes of each
// other and strings full of 0x00, 0x01 and 0xFF.
TEST(KeyEncodingTest, EncodedOrderMatchesTupleOrder) {
  using Tuple = std::tuple<std::string, uint64_t, std::string>;
  std::mt19937_64 rng(20240611);
  const std::string alphabet = Bytes({0, 1, 2, 'a', 'b', 0xfe, 0xff});
  auto random_string = [&] {
    std::string s(rng() % 5, '\0');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    return s;
  };
  auto random_u64 = [&]() -> uint64_t {
    switch (rng() % 4) {
      case 0: return rng() % 4;
      case 1: return ~uint64_t{0} - rng() % 4;
      case 2: return uint64_t{1} << (rng() % 64);
      default: return rng();
    }
  };
  auto encode = [](const Tuple& t) {
    return KeyBuilder("t/").String(std::get<0>(t)).U64(std::get<1>(t)).String(std::get<2>(t)).Build();
  };

  std::vector<Tuple> tuples;
  for (int i = 0; i < 3000; ++i) tuples.emplace_back(random_string(), random_u64(), random_string());
  for (int i = 0; i < 20000; ++i) {
    const Tuple& a = tuples[rng() % tuples.size()];
    const Tuple& b = tuples[rng() % tuples.size()];
    std::string ea = encode(a), eb = encode(b);
    ASSERT_EQ(a < b, ea < eb) << EscapeKey(ea) << " vs " << EscapeKey(eb);
    ASSERT_EQ(a == b, ea == eb);
  }

  // Sorting by encoding must also sort the tuples, and every key decodes back.
  std::vector<std::string> keys;
  for (const Tuple& t : tuples) keys.push_back(encode(t));
  std::sort(keys.begin(), keys.end());
  std::vector<Tuple> decoded;
  for (const std::string& k : keys) {
    KeyDecoder d(k);
    ASSERT_TRUE(d.ExpectPrefix("t/").ok());
    Tuple t;
    std::get<0>(t) = d.String().value();
    std::get<1>(t) = d.U64().value();
    std::get<2>(t) = d.String().value();
    ASSERT_TRUE(d.Done().ok());
    decoded.push_back(t);
  }
  std::sort(tuples.begin(), tuples.end());
  EXPECT_EQ(decoded, tuples);
}

// Random bytes either decode to values whose encoding is exactly the bytes
// consumed, or are rejected; they never crash or read past the end.
TEST(KeyEncodingTest, RandomBytesNeverCrashTheDecoder) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 5000; ++i) {
    std::string junk(rng() % 24, '\0');
    for (char& c : junk) c = static_cast<char>(rng() % 4 == 0 ? 0 : rng());
    KeyDecoder d(junk);
    auto s = d.String();
    auto u = d.U64();
    (void)d.Done();
    if (!s.ok() || !u.ok()) continue;
    // Whatever decodes must be the canonical encoding of what it decoded to.
    std::string reencoded = KeyBuilder().String(*s).U64(*u).Build();
    EXPECT_EQ(reencoded, junk.substr(0, junk.size() - d.remaining().size()));
  }
}

}  // namespace
}  // namespace gpool::storage
