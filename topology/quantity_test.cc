#include "topology/quantity.h"

#include <gtest/gtest.h>

namespace gpool::topology {
namespace {

TEST(QuantityTest, CpuMilli) {
  struct Case {
    const char* text;
    uint64_t milli;
  };
  for (const Case& c : {Case{"8", 8000}, Case{"7.5", 7500}, Case{"0.25", 250}, Case{"0.125", 125}, Case{".5", 500},
                        Case{"1.500", 1500}, Case{"0.001", 1}, Case{"250m", 250}, Case{"0", 0}, Case{" 2 ", 2000}}) {
    auto v = ParseCpuMilli(c.text);
    ASSERT_TRUE(v.ok()) << c.text << ": " << v.status().ToString();
    EXPECT_EQ(*v, c.milli) << c.text;
  }
  for (const char* bad : {"", "-1", "abc", "two", "1e3", "1..2", "1.5m", "2 cores", "0.0005", "1.2345",
                          "99999999999999999999"}) {
    EXPECT_EQ(ParseCpuMilli(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ParseCpuMilli("lots").status().message().rfind("'lots' is not a CPU count", 0), 0u);
  EXPECT_EQ(ParseCpuMilli("0.0001").status().message(), "'0.0001' is finer than 1/1000 of a core");
}

TEST(QuantityTest, DurationMs) {
  EXPECT_EQ(ParseDurationMs("90").value(), 90'000u);
  EXPECT_EQ(ParseDurationMs("90s").value(), 90'000u);
  EXPECT_EQ(ParseDurationMs("5m").value(), 300'000u);
  EXPECT_EQ(ParseDurationMs("2h").value(), 7'200'000u);
  EXPECT_EQ(ParseDurationMs("250ms").value(), 250u);
  for (const char* bad : {"", "s", "ms", "-5s", "1.5m", "5d", "12345678901s", "5 s"}) {
    EXPECT_FALSE(ParseDurationMs(bad).ok()) << bad;
  }
}

TEST(QuantityTest, MemoryMib) {
  struct Case {
    const char* text;
    uint64_t up;    // Rounding::kUp
    uint64_t down;  // Rounding::kDown
  };
  for (const Case& c : {Case{"4096", 4096, 4096}, Case{"0", 0, 0}, Case{"64Mi", 64, 64}, Case{"80Gi", 81920, 81920},
                        Case{"1.5Ti", 1536 * 1024, 1536 * 1024}, Case{"1Pi", uint64_t{1} << 30, uint64_t{1} << 30},
                        Case{"2048Ki", 2, 2}, Case{"1Ki", 1, 0}, Case{"0.5Gi", 512, 512}, Case{"4GiB", 4096, 4096},
                        Case{"4 Gi", 4096, 4096}, Case{"4gi", 4096, 4096}, Case{"1G", 954, 953},
                        Case{"1GB", 954, 953}, Case{"1000M", 954, 953}, Case{"1M", 1, 0}, Case{"1.5", 2, 1},
                        Case{"  64  ", 64, 64}}) {
    auto up = ParseMemoryMib(c.text, Rounding::kUp);
    ASSERT_TRUE(up.ok()) << c.text << ": " << up.status().ToString();
    EXPECT_EQ(*up, c.up) << c.text;
    auto down = ParseMemoryMib(c.text, Rounding::kDown);
    ASSERT_TRUE(down.ok()) << c.text;
    EXPECT_EQ(*down, c.down) << c.text;
  }
  for (const char* bad : {"", "80Q", "Gi", "four", "4 XB", "-1Gi", "1e9", "1.2.3Gi", "4Gii", "80 Qi",
                          "99999999999999999999Pi", "99999999999999999999999999Ti"}) {
    EXPECT_EQ(ParseMemoryMib(bad, Rounding::kDown).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ParseMemoryMib("80Q", Rounding::kDown).status().message().rfind("'80Q' is not a memory size (", 0), 0u);
  const std::string long_text(100, '9');
  EXPECT_LT(ParseMemoryMib(long_text + "Q", Rounding::kUp).status().message().size(), 200u);
}

}  // namespace
}  // namespace gpool::topology
