#include "worker/flags.h"

#include <gtest/gtest.h>

#include "worker/test_util.h"

namespace gpool::worker {
namespace {

Result<ParsedFlags> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "gpool-worker");
  return ParseWorkerFlags(static_cast<int>(args.size()), args.data());
}

TEST(FlagsTest, Defaults) {
  auto parsed = Parse({});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->action, ParsedFlags::Action::kRun);
  EXPECT_EQ(parsed->flags.coordinators, std::vector<std::string>{"tcp://127.0.0.1:7401"});
  EXPECT_EQ(parsed->flags.data_dir, "/var/lib/gpool/worker");
  EXPECT_EQ(parsed->flags.log_level, "info");
  EXPECT_TRUE(parsed->flags.node_name.empty());
  EXPECT_TRUE(parsed->flags.spec_path.empty());
  EXPECT_TRUE(parsed->flags.cuda_intercept_lib.empty()) << "GPU shares unenforced unless asked";
}

TEST(FlagsTest, CudaInterceptLib) {
  auto parsed = Parse({"--cuda-intercept-lib", "/usr/local/vgpu/libvgpu.so"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->flags.cuda_intercept_lib, "/usr/local/vgpu/libvgpu.so");
  auto bad = Parse({"--cuda-intercept-lib", "/a.so:/b.so"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--cuda-intercept-lib"), std::string::npos) << bad.status().message();
}

TEST(FlagsTest, AllFlags) {
  auto parsed = Parse({"--coordinator", "tcp://a:7401, tcp://b:7401", "--node-name", "n1", "--spec", "s.yaml",
                       "--data-dir", "/tmp/w", "--token", "secret", "--log-level", "debug"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->flags.coordinators, (std::vector<std::string>{"tcp://a:7401", "tcp://b:7401"}));
  EXPECT_EQ(parsed->flags.node_name, "n1");
  EXPECT_EQ(parsed->flags.spec_path, "s.yaml");
  EXPECT_EQ(parsed->flags.data_dir, "/tmp/w");
  EXPECT_EQ(parsed->flags.token, "secret");
  EXPECT_EQ(parsed->flags.log_level, "debug");
}

TEST(FlagsTest, HelpAndVersion) {
  auto help = Parse({"--help"});
  ASSERT_TRUE(help.ok());
  EXPECT_EQ(help->action, ParsedFlags::Action::kHelp);
  EXPECT_NE(help->text.find("--coordinator"), std::string::npos);
  auto version = Parse({"--version"});
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(version->action, ParsedFlags::Action::kVersion);
  EXPECT_EQ(version->text.rfind("gpool-worker ", 0), 0u);
}

TEST(FlagsTest, BadInputIsInvalidArgument) {
  for (const auto& args : std::vector<std::vector<const char*>>{
           {"--no-such-flag"},
           {"--log-level", "loud"},
           {"--coordinator", "http://x:1"},
           {"--coordinator", ","},
           {"--token", "a", "--token-file", "b"},
           {"stray"},
           {"--data-dir", ""},
           {"--spec"},
       }) {
    auto parsed = Parse(args);
    EXPECT_FALSE(parsed.ok()) << args[0];
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << parsed.status().ToString();
    }
  }
}

TEST(FlagsTest, Simulate) {
  auto plain = Parse({});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->flags.simulate, 0u) << "one real node unless asked";
  auto fleet = Parse({"--simulate", "1000", "--spec", "node.yaml"});
  ASSERT_TRUE(fleet.ok()) << fleet.status().ToString();
  EXPECT_EQ(fleet->flags.simulate, 1000u);
  auto most = Parse({"--simulate", "10000", "--spec", "node.yaml"});
  ASSERT_TRUE(most.ok()) << most.status().ToString();
  EXPECT_EQ(most->flags.simulate, kMaxSimulatedNodes);
}

TEST(FlagsTest, BadSimulateSaysWhy) {
  struct Case {
    std::vector<const char*> args;
    std::string says;
  };
  for (const auto& c : std::vector<Case>{
           {{"--simulate", "0", "--spec", "s.yaml"}, "out of range"},
           {{"--simulate", "10001", "--spec", "s.yaml"}, "out of range"},
           {{"--simulate", "99999999999", "--spec", "s.yaml"}, "is not a number of nodes"},
           {{"--simulate", "-3", "--spec", "s.yaml"}, "is not a number of nodes"},
           {{"--simulate", "ten", "--spec", "s.yaml"}, "is not a number of nodes"},
           {{"--simulate", "", "--spec", "s.yaml"}, "is not a number of nodes"},
           {{"--simulate", "20"}, "needs --spec"},
       }) {
    auto parsed = Parse(c.args);
    ASSERT_FALSE(parsed.ok()) << c.args[1];
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << parsed.status().ToString();
    EXPECT_NE(parsed.status().message().find(c.says), std::string::npos) << parsed.status().message();
    EXPECT_NE(parsed.status().message().find("--simulate"), std::string::npos) << parsed.status().message();
  }
}

TEST(FlagsTest, TokenFileIsTrimmed) {
  testing::TempDir dir;
  EXPECT_EQ(*ReadTokenFile(dir.Write("token", "  s3cret\n")), "s3cret");
  EXPECT_FALSE(ReadTokenFile(dir.Write("empty", "\n")).ok());
  EXPECT_EQ(ReadTokenFile(dir.path() + "/missing").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpool::worker
