// The exec messages on the wire (messages_exec.h): every field survives an
// envelope round trip, required fields are required, and the shared checks
// refuse what every side must refuse.
#include "protocol/messages_exec.h"

#include <gtest/gtest.h>

#include <csignal>

#include "protocol/envelope.h"
#include "protocol/message_type.h"

namespace gpool {
namespace {

template <typename T>
Result<T> RoundTrip(const T& body) {
  auto envelope = DecodeEnvelope(EncodeEnvelope(Header{.request_id = 3}, body));
  if (!envelope.ok()) return envelope.status();
  EXPECT_EQ(envelope->type(), T::kType);
  return envelope->template Body<T>();
}

TEST(MessagesExecTest, RequestsAndRepliesSurviveTheWire) {
  auto start = RoundTrip(ExecStart{.task = "mpi-w-1", .job_id = 4, .command = {"sh", "-c", "x"}, .lease_ms = 2000});
  ASSERT_TRUE(start.ok()) << start.status().ToString();
  EXPECT_EQ(start->task, "mpi-w-1");
  EXPECT_EQ(start->job_id, 4u);
  EXPECT_EQ(start->command, (std::vector<std::string>{"sh", "-c", "x"}));
  EXPECT_EQ(start->lease_ms, 2000u);

  auto reply = RoundTrip(ExecStartReply{.exec_id = 9, .task = "4.1", .node = "n1", .pid = 77});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->exec_id, 9u);
  EXPECT_EQ(reply->node, "n1");

  ExecPollReply output;
  output.stdout_data.assign(std::string("a\0b", 3));
  output.stderr_data.assign("e");
  output.stdout_offset = 10;
  output.exited = true;
  output.exit_code = 137;
  output.signal = SIGKILL;
  output.message = "lease expired";
  auto polled = RoundTrip(output);
  ASSERT_TRUE(polled.ok());
  EXPECT_EQ(polled->stdout_data, std::string("a\0b", 3)) << "raw bytes";
  EXPECT_EQ(polled->stderr_data, "e");
  EXPECT_EQ(polled->stdout_offset, 10u);
  EXPECT_TRUE(polled->exited);
  EXPECT_EQ(polled->signal, SIGKILL);
  EXPECT_EQ(polled->message, "lease expired");

  auto worker = RoundTrip(TaskExecPoll{TaskId{JobId(4), 1, 2}, 9, 5, 6, 100});
  ASSERT_TRUE(worker.ok());
  EXPECT_EQ(worker->task, (TaskId{JobId(4), 1, 2}));
  EXPECT_EQ(worker->stderr_offset, 6u);
  auto signal = RoundTrip(TaskExecSignal{TaskId{JobId(4), 1, 2}, 9, SIGINT});
  ASSERT_TRUE(signal.ok());
  EXPECT_EQ(signal->signal, SIGINT);
  EXPECT_EQ(MessageTypeName(MessageType::kTaskExecSignal), "TaskExecSignal");
  EXPECT_EQ(MessageTypeFromName("ExecPollReply"), MessageType::kExecPollReply);
}

TEST(MessagesExecTest, ABodyOfAnotherTypeIsRefused) {
  // A poll is not a start, however alike their fields.
  auto envelope = DecodeEnvelope(EncodeEnvelope(Header{.request_id = 1}, ExecPoll{.task = "t", .exec_id = 1}));
  ASSERT_TRUE(envelope.ok());
  EXPECT_FALSE(envelope->Body<ExecStart>().ok()) << "another type";
}

TEST(MessagesExecTest, CommandsAndSignalsAreChecked) {
  EXPECT_TRUE(ValidateExecCommand({"true"}, 10'000).ok());
  EXPECT_EQ(ValidateExecCommand({}, 10'000).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateExecCommand({""}, 10'000).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateExecCommand({std::string("a\0b", 3)}, 10'000).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateExecCommand({"true"}, 999).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateExecCommand({"true"}, kMaxExecLeaseMs + 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateExecCommand(std::vector<std::string>(kMaxExecArgs + 1, "x"), 10'000).code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(ValidateExecCommand({"echo", std::string(kMaxExecCommandBytes, 'x')}, 10'000).code(),
            StatusCode::kResourceExhausted);
  for (int ok : {SIGINT, SIGTERM, SIGKILL, SIGHUP}) EXPECT_TRUE(ValidateExecSignal(ok).ok()) << ok;
  for (int bad : {0, -1, SIGSTOP, SIGSEGV, 1000}) EXPECT_FALSE(ValidateExecSignal(bad).ok()) << bad;
}

}  // namespace
}  // namespace gpool
