// What libgpool-rgpu.so.1 brings into a foreign process: its dynamic
// dependencies (libc, libstdc++ and libzmq, plus what the toolchain and the
// sanitizers add; no gpool library, no logger) and its exports (the driver
// API names only). Read with binutils, as an operator would check it.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <sstream>
#include <string>

namespace {

std::string Output(const std::string& command) {
  std::string out;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buf[4096];
    while (std::fgets(buf, sizeof(buf), pipe) != nullptr) out += buf;
    pclose(pipe);
  }
  return out;
}

TEST(RgpuClientLibrary, NeedsOnlyLibcLibstdcxxAndLibzmq) {
  const std::string dynamic = Output(std::string("readelf -d ") + GPOOL_RGPU_CLIENT_LIB);
  ASSERT_NE(dynamic.find("NEEDED"), std::string::npos) << "readelf missing? " << dynamic;
  const std::set<std::string> allowed = {"libzmq.so.5",  "libstdc++.so.6",  "libgcc_s.so.1", "libc.so.6",
                                         "libm.so.6",    "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
                                         "libasan.so.8", "libubsan.so.1"};
  std::istringstream lines(dynamic);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("(NEEDED)") == std::string::npos) continue;
    const std::string name = line.substr(line.find('[') + 1, line.find(']') - line.find('[') - 1);
    EXPECT_TRUE(allowed.contains(name)) << "libgpool-rgpu.so.1 needs " << name;
  }
}

TEST(RgpuClientLibrary, ExportsOnlyDriverApiNames) {
  const std::string symbols = Output(std::string("nm -D --defined-only ") + GPOOL_RGPU_CLIENT_LIB);
  std::istringstream lines(symbols);
  int exported = 0;
  for (std::string line; std::getline(lines, line);) {
    const std::string name = line.substr(line.rfind(' ') + 1);
    EXPECT_EQ(name.rfind("cu", 0), 0u) << "exported: " << name;
    ++exported;
  }
  EXPECT_GT(exported, 50);
}

}  // namespace
