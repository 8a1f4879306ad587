#include "topology/yaml_budget.h"

#include <gtest/gtest.h>

#include <string>

namespace gpool::topology {
namespace {

Status Check(const std::string& text) {
  return CheckYamlBudget(text, YamlBudget::ForText(text.size()), "bomb.yaml");
}

// One anchor of a 64 KiB string and `aliases` uses of it: about 3 bytes of
// text per 64 KiB of expansion.
std::string WideBomb(size_t aliases) {
  std::string text = "name: bomb\nenv: {A: &a \"" + std::string(64 * 1024, 'x') + "\"}\ncommand: [";
  for (size_t i = 0; i < aliases; ++i) text += i == 0 ? "*a" : ",*a";
  return text + "]\n";
}

// The classic: ten levels of ten aliases each, 10^9 leaves from 500 bytes.
std::string NestedBomb() {
  std::string text = "l0: &l0 lol\n";
  for (int level = 1; level <= 9; ++level) {
    const std::string prev = "*l" + std::to_string(level - 1);
    text += "l" + std::to_string(level) + ": &l" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) text += (i == 0 ? "" : ",") + prev;
    text += "]\n";
  }
  return text;
}

TEST(YamlBudgetTest, ADocumentWithoutAliasesNeverExpandsPastItsText) {
  // Its nodes and scalar bytes are fewer than its bytes, so a budget of its
  // own size holds it (ForText allows 16 times that).
  std::string text = "command: [echo, \"" + std::string(1 << 20, 'y') + "\"]\nlist: [";
  for (int i = 0; i < 100'000; ++i) text += i == 0 ? "1" : ",1";
  text += "]\nmap: {a: {b: [x, {c: d}]}}\n";
  EXPECT_TRUE(CheckYamlBudget(text, YamlBudget{text.size(), text.size()}, "").ok());
  EXPECT_EQ(CheckYamlBudget(text, YamlBudget{100'000, text.size()}, "").code(),
            StatusCode::kResourceExhausted);
}

TEST(YamlBudgetTest, SharingABlockBetweenAFewGroupsIsAllowed) {
  std::string text = "env: &env {";
  for (int i = 0; i < 200; ++i) text += (i == 0 ? "" : ", ") + std::string("K") + std::to_string(i) + ": v";
  text += "}\ntasks:\n";
  for (int i = 0; i < 50; ++i) text += "  - {command: [\"true\"], env: *env}\n";
  EXPECT_TRUE(Check(text).ok()) << Check(text).ToString();
}

TEST(YamlBudgetTest, AWideAliasBombIsRefusedByBytes) {
  const std::string text = WideBomb(300'000);  // about 1 MB asking for 19 GB
  ASSERT_LT(text.size(), 1'000'000u);
  Status status = Check(text);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_NE(status.message().find("bomb.yaml: with its YAML aliases expanded the document holds more than"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("bytes of strings"), std::string::npos) << status.message();
}

TEST(YamlBudgetTest, ANestedAliasBombIsRefusedByNodes) {
  Status status = Check(NestedBomb());
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_NE(status.message().find("more than 1000000 nodes"), std::string::npos) << status.message();
}

TEST(YamlBudgetTest, AnAliasInsideItsOwnAnchorIsRefused) {
  Status status = Check("a: &a [x, *a]\n");
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_NE(status.message().find("lies inside the node its anchor names"), std::string::npos) << status.message();
}

// Costing reuses a shared node's cost: the same node reached twice is
// counted twice, and nodes at different places are not confused.
TEST(YamlBudgetTest, SharedNodesAreCountedOncePerUse) {
  // 1 map + 3 keys + a's list (1 + 2 scalars) + b and c: the same list again.
  const std::string text = "a: &l [xx, yyy]\nb: *l\nc: *l\n";
  EXPECT_TRUE(CheckYamlBudget(text, YamlBudget{13, 18}, "").ok());
  EXPECT_FALSE(CheckYamlBudget(text, YamlBudget{12, 18}, "").ok());
  EXPECT_FALSE(CheckYamlBudget(text, YamlBudget{13, 17}, "").ok());
}

TEST(YamlBudgetTest, TheBudgetScalesWithTheText) {
  EXPECT_EQ(YamlBudget::ForText(10).max_nodes, YamlBudget::kMinNodes);
  EXPECT_EQ(YamlBudget::ForText(10).max_scalar_bytes, YamlBudget::kMinScalarBytes);
  EXPECT_EQ(YamlBudget::ForText(4u << 20).max_scalar_bytes, 64u << 20);
  EXPECT_EQ(YamlBudget::ForText(SIZE_MAX / 2).max_nodes, SIZE_MAX);
  // Around the floor: 200 aliases of 64 KiB (12.5 MiB) pass, 300 (18.8 MiB) do not.
  EXPECT_TRUE(Check(WideBomb(200)).ok());
  EXPECT_EQ(Check(WideBomb(300)).code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace gpool::topology
