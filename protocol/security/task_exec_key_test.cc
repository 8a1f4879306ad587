#include "protocol/security/task_exec_key.h"

#include <gtest/gtest.h>

#include <set>

#include "protocol/security/keys.h"

namespace gpool::security {
namespace {

const std::string kTaskExecJobSecret = "rq:rm>vjOy/Ly<f^Y+PY%5Q-cR}&0G=u1T*Cn*lc";

TEST(TaskExecKeyTest, TheSameTaskAttemptAlwaysGetsTheSameKey) {
  const TaskId task{JobId(17), 3, 1};
  auto first = TaskExecSecret(kTaskExecJobSecret, task);
  auto again = TaskExecSecret(kTaskExecJobSecret, task);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*first, *again);
  EXPECT_TRUE(IsZ85Key(*first)) << *first;
  // A CURVE secret key: its public half is what the coordinator admits.
  auto pair = KeyPairOfSecret(*first);
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  EXPECT_TRUE(IsZ85Key(pair->public_key));
  EXPECT_NE(pair->public_key, *first);
}

TEST(TaskExecKeyTest, EveryTaskAttemptAndJobSecretGetsItsOwnKey) {
  std::set<std::string> keys;
  for (uint64_t job : {1u, 2u}) {
    for (uint32_t index : {0u, 1u, 2u}) {
      for (uint32_t attempt : {0u, 1u}) {
        auto secret = TaskExecSecret(kTaskExecJobSecret, TaskId{JobId(job), index, attempt});
        ASSERT_TRUE(secret.ok());
        keys.insert(*secret);
      }
    }
  }
  EXPECT_EQ(keys.size(), 12u);
  // The job's own secret is never a task's key, and another job secret gives other keys.
  EXPECT_EQ(keys.count(kTaskExecJobSecret), 0u);
  auto other = TaskExecSecret("another job's secret", TaskId{JobId(1), 0, 0});
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(keys.count(*other), 0u);
}

TEST(TaskExecKeyTest, AJobWithoutASecretGivesItsTasksNone) {
  auto none = TaskExecSecret("", TaskId{JobId(1), 0, 0});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("job 1"), std::string::npos) << none.status().ToString();
}

TEST(TaskExecKeyTest, NamesReadBackAndNothingElseParses) {
  for (const TaskId& task : {TaskId{JobId(17), 0, 0}, TaskId{JobId(17), 4, 2}}) {
    EXPECT_EQ(ParseTaskExecName(TaskExecName(task)), task) << TaskExecName(task);
  }
  EXPECT_EQ(TaskExecName(TaskId{JobId(17), 4, 2}), "17.4#2");
  for (const char* bad : {"", "17", "17.", ".0", "17.0#", "17.0#0", "17.x", "-1.0", "17.0.1", "17.0#1#2",
                          "17.99999999999", "a|b"}) {
    EXPECT_FALSE(ParseTaskExecName(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace gpool::security
