#include "protocol/base/write_all.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace gpool {
namespace {

// More than a pipe holds (64 KiB by default), so write(2) returns short and
// WriteAll must go on from where it stopped.
TEST(WriteAllTest, WritesEveryByteInOrderThroughShortWrites) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::string sent(1 << 20, '\0');
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<char>(i * 131 % 251);
  std::string got;
  std::thread reader([&] {
    char buffer[4096];
    for (;;) {
      const ssize_t n = read(fds[0], buffer, sizeof(buffer));
      if (n <= 0) break;
      got.append(buffer, static_cast<size_t>(n));
    }
  });
  const bool ok = WriteAll(fds[1], sent);
  close(fds[1]);
  reader.join();
  close(fds[0]);
  EXPECT_TRUE(ok);
  EXPECT_EQ(got.size(), sent.size());
  EXPECT_TRUE(got == sent) << "bytes out of order or altered";
}

TEST(WriteAllTest, AnErrorIsReportedWithWritesErrno) {
  const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  errno = 0;
  EXPECT_FALSE(WriteAll(fd, "bytes"));
  EXPECT_EQ(errno, EBADF);
  close(fd);
}

TEST(WriteAllTest, NothingToWriteSucceedsWithoutWriting) {
  EXPECT_TRUE(WriteAll(-1, ""));  // a bad descriptor is never touched
}

}  // namespace
}  // namespace gpool
