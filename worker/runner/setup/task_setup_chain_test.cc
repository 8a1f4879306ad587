// TaskSetupChain: steps run in order; a failure undoes the steps before it,
// last first, and is written to the task's log with the failing step's note.
#include "worker/runner/setup/task_setup_chain.h"

#include <gtest/gtest.h>

#include "protocol/messages_worker.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

class RecordingStep final : public TaskSetupStep {
 public:
  RecordingStep(std::string name, std::vector<std::string>* calls, Status result = Status::Ok(),
                std::string note = "task not started")
      : name_(std::move(name)), calls_(calls), result_(std::move(result)), note_(std::move(note)) {}
  std::string_view Name() const override { return name_; }
  Status Prepare(TaskSetupContext& ctx) override {
    calls_->push_back("prepare " + name_);
    ctx.request.argv.push_back(name_);
    return result_;
  }
  void Undo(TaskSetupContext&) override { calls_->push_back("undo " + name_); }
  std::string_view LogNote() const override { return note_; }

 private:
  std::string name_;
  std::vector<std::string>* calls_;
  Status result_;
  std::string note_;
};

class TaskSetupChainTest : public ::testing::Test {
 protected:
  TaskSetupContext Context() {
    TaskSetupContext ctx(TaskId{JobId(4), 0, 0}, bind_, record_);
    ctx.request.log_path = dir_.path() + "/4.0.0.log";
    return ctx;
  }
  BindTask bind_;
  TaskSetupRecord record_;
  std::vector<std::string> calls_;
  testing::TempDir dir_;
  testing::CapturedLog log_;
};

TEST_F(TaskSetupChainTest, StepsRunInOrder) {
  TaskSetupChain chain(log_.logger());
  chain.Add(std::make_unique<RecordingStep>("a", &calls_)).Add(std::make_unique<RecordingStep>("b", &calls_));
  TaskSetupContext ctx = Context();
  ASSERT_TRUE(chain.Prepare(ctx).ok());
  EXPECT_EQ(calls_, (std::vector<std::string>{"prepare a", "prepare b"}));
  EXPECT_EQ(ctx.request.argv, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(chain.size(), 2u);
}

TEST_F(TaskSetupChainTest, AFailureUndoesTheStepsBeforeItLastFirstAndSaysWhyInTheLog) {
  TaskSetupChain chain(log_.logger());
  chain.Add(std::make_unique<RecordingStep>("a", &calls_))
      .Add(std::make_unique<RecordingStep>("b", &calls_))
      .Add(std::make_unique<RecordingStep>("c", &calls_, Status::FailedPrecondition("no instance"),
                                           "session not started"))
      .Add(std::make_unique<RecordingStep>("d", &calls_));
  TaskSetupContext ctx = Context();
  Status failed = chain.Prepare(ctx);
  EXPECT_EQ(failed.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(failed.message(), "no instance");
  // The failing step cleans up after itself; d never ran.
  EXPECT_EQ(calls_, (std::vector<std::string>{"prepare a", "prepare b", "prepare c", "undo b", "undo a"}));
  EXPECT_EQ(testing::ReadFile(ctx.request.log_path), "gpool-worker: session not started: no instance\n");
}

TEST_F(TaskSetupChainTest, AStepWithoutANoteLeavesTheLogAlone) {
  TaskSetupChain chain(log_.logger());
  chain.Add(std::make_unique<RecordingStep>("a", &calls_, Status::IoError("disk"), ""));
  TaskSetupContext ctx = Context();
  EXPECT_FALSE(chain.Prepare(ctx).ok());
  EXPECT_EQ(calls_, (std::vector<std::string>{"prepare a"}));
  EXPECT_FALSE(std::filesystem::exists(ctx.request.log_path));
}

TEST_F(TaskSetupChainTest, UndoAndReleaseRunEveryStepLastFirst) {
  TaskSetupChain chain(log_.logger());
  chain.Add(std::make_unique<RecordingStep>("a", &calls_)).Add(std::make_unique<RecordingStep>("b", &calls_));
  TaskSetupContext ctx = Context();
  chain.Undo(ctx);
  chain.Release(ctx);  // Release defaults to Undo
  EXPECT_EQ(calls_, (std::vector<std::string>{"undo b", "undo a", "undo b", "undo a"}));
}

}  // namespace
}  // namespace gpool::worker
