#include "client/yaml_fields.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "client/test_support.h"

namespace gpool::yaml_fields {
namespace {

using client::testing::UniqueTempPath;

using client::testing::InvalidArgumentMessage;

TEST(YamlFieldsTest, NearestOfTakesTheFirstClosestCandidateUnderTheBound) {
  const std::vector<std::string> candidates = {"tier", "tear", "nodes"};
  EXPECT_EQ(EditDistance("teir", "tier"), 2u);
  EXPECT_EQ(NearestOf("teir", candidates, 3), "tear");  // 1 edit beats 2
  EXPECT_EQ(NearestOf("tie", candidates, 3), "tier");   // ties go to the first
  EXPECT_EQ(NearestOf("tie", candidates, 1), "");
  EXPECT_EQ(NearestOf("x", {}, 3), "");
}

std::string NoHint(std::string_view, const std::vector<std::string>&) { return ""; }
std::string FirstKey(std::string_view, const std::vector<std::string>& allowed) { return allowed.front(); }

TEST(YamlFieldsTest, CheckKeysNamesTheDocumentAtTheTopAndThePathBelow) {
  const std::vector<std::string> allowed = {"a", "b"};
  EXPECT_TRUE(CheckKeys(YAML::Load("{a: 1, b: 2}"), "", allowed, "doc", NoHint).ok());
  EXPECT_EQ(CheckKeys(YAML::Load("[1]"), "", allowed, "doc", NoHint).message(), "doc: expected a map, got a list");
  EXPECT_EQ(CheckKeys(YAML::Load("7"), "x[0]", allowed, "doc", NoHint).message(), "x[0]: expected a map, got '7'");
  EXPECT_EQ(CheckKeys(YAML::Load("{[1]: 2}"), "", allowed, "doc", NoHint).message(), "doc: keys must be plain strings");
  EXPECT_EQ(CheckKeys(YAML::Load("{a: 1, a: 2}"), "m", allowed, "doc", NoHint).message(), "m.a: duplicate key");
  EXPECT_EQ(CheckKeys(YAML::Load("{c: 1}"), "m", allowed, "doc", NoHint).message(),
            "m.c: unknown key; allowed keys: a, b");
  EXPECT_EQ(CheckKeys(YAML::Load("{c: 1}"), "", allowed, "doc", FirstKey).message(),
            "c: unknown key (did you mean 'a'?); allowed keys: a, b");
}

Result<int> CountKeys(const YAML::Node& root) {
  if (!root.IsMap()) return FieldError("root", "expected a map, got " + Quote(root));
  return static_cast<int>(root.size());
}

TEST(YamlFieldsTest, ReadYamlDocumentPrefixesTheSourceOnEveryError) {
  auto two = ReadYamlDocument("{a: 1, b: 2}", "f.yaml", CountKeys);
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(*two, 2);
  EXPECT_EQ(InvalidArgumentMessage(ReadYamlDocument("[a]", "f.yaml", CountKeys)),
            "f.yaml: root: expected a map, got a list");
  EXPECT_EQ(InvalidArgumentMessage(ReadYamlDocument("", "", CountKeys)), "root: expected a map, got nothing");
  EXPECT_EQ(InvalidArgumentMessage(ReadYamlDocument("a: [\n", "f.yaml", CountKeys)),
            "f.yaml:2:1: not valid YAML or JSON: end of sequence flow not found");
  EXPECT_EQ(InvalidArgumentMessage(ReadYamlDocument("a: [\n", "", CountKeys)),
            "line 2:1: not valid YAML or JSON: end of sequence flow not found");
}

TEST(YamlFieldsTest, ReadUserFileNamesTheFileAndWhatItWasFor) {
  EXPECT_EQ(InvalidArgumentMessage(ReadUserFile("/nonexistent/x.yaml", "thing file")),
            "/nonexistent/x.yaml: cannot open the thing file");
  const std::string path = UniqueTempPath("gpool_yaml_fields_test");
  client::testing::WriteFile(path, "a: 1\n");
  auto text = ReadUserFile(path, "thing file");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "a: 1\n");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace gpool::yaml_fields
