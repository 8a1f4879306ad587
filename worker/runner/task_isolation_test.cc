// Task isolation decisions (issue 31): who a task runs as and what the
// worker prepares for it. The launch itself is tested in isolation_test.cc.
#include "worker/runner/task_isolation.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>

#include <gtest/gtest.h>

#include "protocol/messages_worker.h"
#include "protocol/model/run_as.h"
#include "worker/test_util.h"

namespace gpool::worker {
namespace {

TEST(TaskIsolationTest, TaskUserIsANameOrNumbers) {
  bool root = true;
  auto nobody = ParseTaskUser("nobody", &root);
  ASSERT_TRUE(nobody.ok()) << nobody.status().ToString();
  EXPECT_EQ(nobody->uid, 65534u);
  EXPECT_TRUE(nobody->set);
  EXPECT_FALSE(root);
  auto numbers = ParseTaskUser("1234:100", &root);
  ASSERT_TRUE(numbers.ok());
  EXPECT_EQ(numbers->uid, 1234u);
  EXPECT_EQ(numbers->gid, 100u);
  auto same = ParseTaskUser("1234", &root);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->gid, 1234u) << "a uid alone: the group of the same number";
  auto r = ParseTaskUser("root", &root);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->uid, 0u);
  EXPECT_TRUE(root) << "only naming root allows root";
  EXPECT_FALSE(ParseTaskUser("12:x", &root).ok());
  EXPECT_FALSE(ParseTaskUser("", &root).ok());
  EXPECT_EQ(ParseTaskUser("no-such-user-gpool", &root).status().code(), StatusCode::kNotFound);
}

TEST(TaskIsolationTest, TheBindsIdentityWinsAndRootNeedsTheFlag) {
  TaskIsolationOptions options;
  options.default_identity = TaskIdentity{.set = true, .uid = 65534, .gid = 65534, .user = "nobody"};
  auto id = IdentityFor(RunAs{}, options);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->uid, 65534u) << "no mapping: the worker's default";
  id = IdentityFor(RunAs{.uid = 1001, .gid = 1001, .user = "alice"}, options);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->uid, 1001u);
  EXPECT_EQ(id->user, "alice");
  auto root = IdentityFor(RunAs{.uid = 0, .gid = 0, .user = "admin"}, options);
  EXPECT_EQ(root.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(root.status().message().find("--task-user root"), std::string::npos) << root.status().message();
  auto root_gid = IdentityFor(RunAs{.uid = 5, .gid = 0, .user = "x"}, options);
  EXPECT_FALSE(root_gid.ok()) << "gid 0 is root's group";
  options.allow_root = true;
  EXPECT_TRUE(IdentityFor(RunAs{.uid = 0, .gid = 0, .user = "admin"}, options).ok());
}

// Issue 48: an owner mapped to nobody (the coordinator's mapping of a user
// without a uid) is refused, never run as nobody, shared by every such owner.
TEST(TaskIsolationTest, AnOwnerWithoutAUidOrMappedToNobodyIsRefused) {
  TaskIsolationOptions options;
  options.default_identity = TaskIdentity{.set = true, .uid = 65534, .gid = 65534, .user = "nobody"};
  auto nobody = IdentityFor(RunAs{.uid = 65534, .gid = 65534, .user = "old"}, options);
  EXPECT_EQ(nobody.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(nobody.status().message().find("gpool admin user update old"), std::string::npos)
      << nobody.status().message();
  EXPECT_TRUE(IdentityFor(RunAs{}, options).ok()) << "no owner record (--insecure): the worker's --task-user";
}

TEST(TaskIsolationTest, OffChangesNothing) {
  testing::TempDir dir;
  LaunchRequest request;
  BindTask bind;
  // A named object, not a temporary: GCC 12 at -O3 warns that the
  // temporary's default identity "may be used uninitialized" (it is not).
  const TaskIsolationOptions off;
  ASSERT_TRUE(ApplyTaskIsolation(off, dir.path(), TaskId{JobId(1), 0, 0}, bind, NodeSpec{}, {},
                                 request)
                  .ok());
  EXPECT_FALSE(request.identity.set);
  EXPECT_FALSE(request.own_pid_namespace);
  EXPECT_TRUE(request.work_dir.empty());
}

// Its own directory and log, 0700/0600 and owned by the task's uid; the
// state directory root's; the tasks directory searchable, not listable;
// the GPU nodes it was not granted denied.
TEST(TaskIsolationTest, PreparesTheTasksFilesAndDeviceRules) {
  if (geteuid() != 0) GTEST_SKIP() << "chown and mknod need root";
  testing::TempDir dir;
  const std::string tasks = dir.path() + "/tasks";
  ASSERT_EQ(mkdir(tasks.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((tasks + "/7.0.0.state").c_str(), 0755), 0);
  ASSERT_EQ(mknod((dir.path() + "/g0").c_str(), S_IFCHR | 0666, makedev(1, 7)), 0);
  ASSERT_EQ(mknod((dir.path() + "/g1").c_str(), S_IFCHR | 0666, makedev(1, 8)), 0);
  TaskIsolationOptions options;
  options.enabled = true;
  options.default_identity = TaskIdentity{.set = true, .uid = 40001, .gid = 40002, .user = "t"};
  options.gpu_device_nodes = dir.path() + "/g%u";
  NodeSpec node;
  node.gpus = {GpuInfo{.index = 0}, GpuInfo{.index = 1}};
  BindTask bind;
  bind.gpu_indices = {0};
  LaunchRequest request;
  request.state_dir = tasks + "/7.0.0.state";
  const TaskId id{JobId(7), 0, 0};
  ASSERT_TRUE(ApplyTaskIsolation(options, tasks, id, bind, node, {tasks + "/7.0.0.log"}, request).ok());
  EXPECT_TRUE(request.identity.set);
  EXPECT_EQ(request.identity.uid, 40001u);
  EXPECT_TRUE(request.own_pid_namespace);
  EXPECT_EQ(request.work_dir, TaskWorkDir(tasks, id));
  EXPECT_EQ(request.limits.deny_devices, (std::vector<DeviceRule>{{.major = 1, .minor = 8}}));
  // A GPU node the node spec does not list is denied too.
  ASSERT_EQ(mknod((dir.path() + "/g5").c_str(), S_IFCHR | 0666, makedev(1, 9)), 0);
  LaunchRequest again;
  ASSERT_TRUE(ApplyTaskIsolation(options, tasks, id, bind, node, {}, again).ok());
  EXPECT_EQ(again.limits.deny_devices, (std::vector<DeviceRule>{{.major = 1, .minor = 8}, {.major = 1, .minor = 9}}));
  struct stat st {};
  ASSERT_EQ(stat(request.work_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, 40001u);
  EXPECT_EQ(st.st_gid, 40002u);
  // Its own temp dir, named in TMPDIR (tasks' pids repeat across PID namespaces).
  ASSERT_EQ(stat((request.work_dir + "/tmp").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, 40001u);
  EXPECT_EQ(std::count(request.env.begin(), request.env.end(), "TMPDIR=" + request.work_dir + "/tmp"), 1);
  ASSERT_EQ(stat((tasks + "/7.0.0.log").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, 40001u);
  ASSERT_EQ(stat(request.state_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, 0u);
  ASSERT_EQ(stat(tasks.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u);
}

// Issue 50: another family's nodes join the same deny list, from
// --vendor-device-root: an Ascend task is denied the other NPUs, and a task
// without NPUs the driver's shared nodes too; NVIDIA's rules still apply.
TEST(TaskIsolationTest, VendorDeviceNodesJoinTheDenyList) {
  if (geteuid() != 0) GTEST_SKIP() << "chown and mknod need root";
  testing::TempDir dir;
  const std::string tasks = dir.path() + "/tasks";
  ASSERT_EQ(mkdir(tasks.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((dir.path() + "/dev").c_str(), 0755), 0);
  ASSERT_EQ(mknod((dir.path() + "/dev/davinci0").c_str(), S_IFCHR | 0666, makedev(236, 0)), 0);
  ASSERT_EQ(mknod((dir.path() + "/dev/davinci1").c_str(), S_IFCHR | 0666, makedev(236, 1)), 0);
  ASSERT_EQ(mknod((dir.path() + "/dev/davinci_manager").c_str(), S_IFCHR | 0666, makedev(237, 0)), 0);
  ASSERT_EQ(mknod((dir.path() + "/g0").c_str(), S_IFCHR | 0666, makedev(1, 7)), 0);
  TaskIsolationOptions options;
  options.enabled = true;
  options.default_identity = TaskIdentity{.set = true, .uid = 40001, .gid = 40002, .user = "t"};
  options.gpu_device_nodes = dir.path() + "/g%u";
  options.vendor_device_root = dir.path() + "/dev";
  NodeSpec node;
  node.gpus = {GpuInfo{.index = 0, .vendor = "huawei", .model = "Ascend910B3"},
               GpuInfo{.index = 1, .vendor = "huawei", .model = "Ascend910B3"}};
  BindTask bind;
  bind.gpu_indices = {1};
  const TaskId id{JobId(8), 0, 0};
  LaunchRequest npu1;
  ASSERT_TRUE(ApplyTaskIsolation(options, tasks, id, bind, node, {}, npu1).ok());
  // /dev/nvidia-style g0 is "GPU 0", which the task was not given either.
  EXPECT_EQ(npu1.limits.deny_devices, (std::vector<DeviceRule>{{.major = 1, .minor = 7}, {.major = 236, .minor = 0}}));
  LaunchRequest cpu;
  ASSERT_TRUE(ApplyTaskIsolation(options, tasks, id, BindTask{}, node, {}, cpu).ok());
  EXPECT_EQ(cpu.limits.deny_devices, (std::vector<DeviceRule>{{.major = 1, .minor = 7},
                                                              {.major = 236, .minor = 0},
                                                              {.major = 236, .minor = 1},
                                                              {.major = 237, .minor = 0}}));
  options.vendor_device_root.clear();  // off: only the NVIDIA pattern's nodes
  LaunchRequest off;
  ASSERT_TRUE(ApplyTaskIsolation(options, tasks, id, bind, node, {}, off).ok());
  EXPECT_EQ(off.limits.deny_devices, (std::vector<DeviceRule>{{.major = 1, .minor = 7}}));
}

}  // namespace
}  // namespace gpool::worker
