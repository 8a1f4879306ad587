// The web dashboard in a real browser (issue 34): a secured local cluster
// with a running job, a share and a job pending for lack of GPUs; headless
// Chromium loads every page with the test user's key and the figures in its
// DOM must equal what the C++ client reports over ZeroMQ. Each page is also
// saved as a PNG (copied to $GPOOL_DASHBOARD_SCREENSHOT_DIR when set, which
// is how docs/images/dashboard-overview.png is made).
//
// Skips when /usr/bin/chromium is not installed (label "browser").
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "client/client.h"
#include "protocol/messages_admin.h"
#include "protocol/messages_client.h"
#include "protocol/messages_nodes.h"
#include "protocol/messages_tokens.h"
#include "protocol/model/node_update.h"
#include "protocol/model/queue_update.h"
#include "protocol/security/keys.h"
#include "tests/local_cluster.h"
#include "tests/ready_cluster.h"

namespace gpool::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kChromium = "/usr/bin/chromium";

struct PageLoad {
  bool ok = false;
  std::string dom;
  std::string log;  // Chromium's stderr, for failures
  std::string profile;  // its --user-data-dir, which keeps its cookie store
};

// Loads `url` in headless Chromium for 8 s of virtual time (several of the
// page's 2 s polls), dumps the DOM and saves a screenshot. Chromium runs in
// its own process group, which is killed afterwards whatever happened, so
// no renderer or crash handler outlives the call.
PageLoad LoadPage(const std::string& url, const std::string& screenshot, const std::string& work_dir) {
  static int loads = 0;
  const std::string tag = work_dir + "/load-" + std::to_string(++loads);
  std::filesystem::create_directories(tag + "-profile");
  std::vector<std::string> args = {kChromium, "--headless=new", "--no-sandbox", "--disable-gpu",
                                   "--no-first-run", "--disable-extensions", "--disable-dev-shm-usage",
                                   // The cluster's HTTPS certificate is self-signed.
                                   "--ignore-certificate-errors",
                                   "--user-data-dir=" + tag + "-profile", "--virtual-time-budget=8000",
                                   "--window-size=1400,1000", "--dump-dom"};
  if (!screenshot.empty()) args.push_back("--screenshot=" + screenshot);
  args.push_back(url);
  const std::string out = tag + ".html";
  const std::string err = tag + ".log";
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(126);
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(kChromium, argv.data());
    _exit(127);
  }
  PageLoad load;
  if (pid < 0) return load;
  setpgid(pid, pid);  // also here: no race with the child's own call
  int status = 0;
  bool exited = WaitFor([&] { return waitpid(pid, &status, WNOHANG) == pid; }, 45s);
  kill(-pid, SIGKILL);
  if (!exited) waitpid(pid, &status, 0);
  load.ok = exited && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  load.dom = ReadFile(out);
  load.log = ReadFile(err);
  load.profile = tag + "-profile";
  return load;
}

std::string Unescape(std::string text) {
  static const std::pair<const char*, const char*> kEntities[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&nbsp;", " "}, {"&amp;", "&"}};
  for (const auto& [entity, plain] : kEntities) {
    for (size_t at = text.find(entity); at != std::string::npos; at = text.find(entity, at + 1)) {
      text.replace(at, std::strlen(entity), plain);
    }
  }
  return text;
}

// The text of the first element marked data-metric="<metric>" after the
// first `scope` (an attribute such as data-node="node-0"; "" for the page).
// Figures are leaf elements, so their text runs to the next tag.
std::optional<std::string> Figure(const std::string& dom, const std::string& scope, const std::string& metric) {
  size_t at = scope.empty() ? 0 : dom.find(scope);
  if (at == std::string::npos) return std::nullopt;
  at = dom.find("data-metric=\"" + metric + "\"", at);
  if (at == std::string::npos) return std::nullopt;
  const size_t open = dom.find('>', at);
  const size_t close = dom.find('<', open);
  if (open == std::string::npos || close == std::string::npos) return std::nullopt;
  return Unescape(dom.substr(open + 1, close - open - 1));
}

// Z85 keys hold characters that mean something in a URL ('#', '%', '+', '&').
std::string UrlEncode(const std::string& text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string Text(const std::optional<std::string>& figure) { return figure.value_or("<missing>"); }

size_t Count(const std::string& dom, const std::string& part) {
  size_t n = 0;
  for (size_t at = dom.find(part); at != std::string::npos; at = dom.find(part, at + 1)) ++n;
  return n;
}

// What a failed page said: its status line, sign-in error and footer.
std::string Diagnose(const std::string& dom) {
  std::string out;
  for (const char* mark : {"id=\"status\"", "id=\"login-error\"", "id=\"updated\""}) {
    const size_t at = dom.find(mark);
    if (at != std::string::npos) out += dom.substr(at, 300) + "\n";
  }
  return out.empty() ? dom.substr(0, 3000) : out;
}

// The page rendered its view (not the login box, not an error), and
// redrew it from fresh API replies more than once in 8 s without a reload:
// it follows the cluster live.
bool Live(const std::string& dom) {
  const auto refreshes = Figure(dom, "", "refreshes");
  return dom.find("data-status=\"ok\"") != std::string::npos && refreshes && std::stoi(*refreshes) >= 2;
}

bool Rendered(const std::string& dom, const std::string& page) {
  return dom.find("data-page=\"" + page + "\"") != std::string::npos && Live(dom);
}

class DashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kChromium)) GTEST_SKIP() << kChromium << " is not installed";
    LocalClusterOptions options;
    options.workers = 2;
    options.gpus_per_worker = 4;
    options.http_tls = true;
    cluster_ = std::make_unique<LocalCluster>(options);
    ASSERT_NO_FATAL_FAILURE(StartReadyCluster(*cluster_, client_));
    // From the endpoints file (the http line may follow the ZeroMQ ones).
    const std::string data_dir = cluster_->ReplicaDataDir(0);
    ASSERT_TRUE(WaitFor([&] { return ReadEndpoints(data_dir).count("http") > 0; }, 10s)) << "no http endpoint";
    base_ = "https://" + ReadEndpoints(data_dir).at("http");
    // The page signs in with a read token (issue 48), traded for a session cookie.
    auto token = client_->CreateToken(CreateToken{TokenScope::kRead, 0});
    ASSERT_TRUE(token.ok()) << token.status().ToString();
    token_ = token->token;
    auto key = security::ReadSecretKeyFile(cluster_->SecretKeyFile("admin"));
    ASSERT_TRUE(key.ok()) << key.status().ToString();
    secret_ = key->secret_key;
    shots_ = cluster_->dir() + "/screenshots";
    std::filesystem::create_directories(shots_);
  }

  void TearDown() override {
    if (cluster_) std::ofstream(cluster_->dir() + "/release").put('\n');
  }

  // A task that holds its GPUs until the test ends (at most three minutes).
  std::string Hold() const {
    return "i=0; while [ ! -e " + cluster_->dir() + "/release ] && [ $i -lt 1800 ]; do sleep 0.1; i=$((i+1)); done";
  }

  uint64_t Submit(JobSpec spec) {
    auto reply = client_->Submit(spec, "");
    EXPECT_TRUE(reply.ok()) << spec.name << ": " << reply.status().ToString();
    return reply.ok() ? reply->job_id : 0;
  }

  JobSummary Summary(uint64_t job) {
    auto reply = client_->GetJob(JobId(job));
    return reply.ok() ? reply->summary : JobSummary{};
  }

  // Loads a page signed in with the test user's read token (in the URL
  // fragment, traded for a session cookie) and saves its screenshot.
  PageLoad Load(const std::string& page, const std::string& shot) {
    const std::string url = base_ + page + "#token=" + UrlEncode(token_);
    PageLoad load = LoadPage(url, shots_ + "/" + shot + ".png", cluster_->dir());
    if (!Live(load.dom)) {
      // Seen once in about twenty runs on a loaded machine, not reproduced
      // since: the page had not drawn twice. Its own words go to the log,
      // and it gets one more load before the test judges it.
      std::cerr << page << " was not live on the first load:\n" << Diagnose(load.dom);
      load = LoadPage(url, shots_ + "/" + shot + ".png", cluster_->dir());
    }
    EXPECT_TRUE(load.ok) << page << ":\n" << load.log.substr(0, 4000);
    return load;
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
  std::string base_;
  std::string token_;
  std::string secret_;  // the test user's secret key: never a credential over HTTP
  std::string shots_;
};

TEST_F(DashboardTest, EveryPageShowsWhatTheApiReports) {
  // A queue with quotas, a two-GPU job in it, a share of one GPU, and a gang
  // of two whole nodes that cannot start while anything runs.
  UpdateQueue queue;
  queue.op = QueueOp::kCreate;
  queue.spec.name = "team-a";
  queue.spec.deserved = {{"gpu", 4}};
  queue.spec.capability = {{"gpu", 6}};
  ASSERT_TRUE(client_->UpdateQueue(queue).ok());
  // Two events for the events page: an operator's cordon and its lifting.
  for (NodeUpdateOp op : {NodeUpdateOp::kCordon, NodeUpdateOp::kUncordon}) {
    UpdateNode update;
    update.node = "node-1";
    update.op = op;
    ASSERT_TRUE(client_->UpdateNode(update).ok()) << NameOf(op);
  }
  JobSpec trainer_spec = ShellJob("trainer", 2, Hold());
  trainer_spec.queue = "team-a";
  const uint64_t trainer = Submit(trainer_spec);
  JobSpec share_spec = ShellJob("notebook", 1, Hold());
  share_spec.tasks[0].resources.gpu_memory_mib = 20 * 1024;
  share_spec.tasks[0].resources.gpu_compute_pct = 30;
  const uint64_t share = Submit(share_spec);
  ASSERT_TRUE(WaitFor([&] { return Summary(trainer).state == "Running" && Summary(share).state == "Running"; }, 30s))
      << cluster_->Cli({"jobs"}).out;
  const uint64_t waits = Submit(ShellJob("big-gang", 4, "true", 2));
  ASSERT_TRUE(WaitFor([&] { return !Summary(waits).reason.empty(); }, 20s)) << cluster_->Cli({"jobs"}).out;
  ASSERT_EQ(Summary(waits).state, "Pending");

  // What the cluster says over ZeroMQ, after which nothing changes until
  // the test ends (the running tasks hold, the gang cannot start).
  auto status = client_->ClusterStatus();
  auto nodes = client_->ListNodes(true);
  auto queues = client_->ListQueues();
  auto jobs = client_->ListJobs(true, 0);
  auto explained = client_->ExplainJob(JobId(waits));
  ASSERT_TRUE(status.ok() && nodes.ok() && queues.ok() && jobs.ok() && explained.ok());
  EXPECT_EQ(jobs->jobs.size(), 3u);

  {  // Overview: GPUs by state, nodes, jobs.
    PageLoad load = Load("/", "overview");
    ASSERT_TRUE(Rendered(load.dom, "overview")) << Diagnose(load.dom);
    int total = 0, whole = 0, shared = 0;
    for (const auto& node : nodes->nodes) {
      for (const auto& device : node.devices) {
        ++total;
        whole += device.task.empty() ? 0 : 1;
        shared += device.task.empty() && !device.tenants.empty() ? 1 : 0;
      }
    }
    EXPECT_EQ(total, 8);
    EXPECT_EQ(Text(Figure(load.dom, "", "gpus-total")), std::to_string(status->gpus_total));
    EXPECT_EQ(Text(Figure(load.dom, "", "gpus-whole")), std::to_string(whole));
    EXPECT_EQ(Text(Figure(load.dom, "", "gpus-shared")), std::to_string(shared));
    EXPECT_EQ(Text(Figure(load.dom, "", "gpus-free")), std::to_string(total - whole - shared));
    EXPECT_EQ(Text(Figure(load.dom, "", "gpus-unhealthy")), "0");
    EXPECT_EQ(whole, 2);
    EXPECT_EQ(shared, 1);
    const long ratio = std::lround(100.0 * (whole + shared) / total);  // as the page rounds
    EXPECT_EQ(Text(Figure(load.dom, "", "allocation-ratio")), std::to_string(ratio) + "%");
    EXPECT_EQ(Text(Figure(load.dom, "", "nodes-Ready")), std::to_string(status->nodes_ready));
    EXPECT_EQ(Text(Figure(load.dom, "", "jobs-running")), std::to_string(status->jobs_running));
    EXPECT_EQ(Text(Figure(load.dom, "", "jobs-pending")), std::to_string(status->jobs_pending));
    EXPECT_EQ(Text(Figure(load.dom, "data-pool=\"public\"", "pool-gpus")), "8");
  }
  {  // Nodes: each node's counts and one grid cell per GPU, by allocation.
    PageLoad load = Load("/ui/nodes", "nodes");
    ASSERT_TRUE(Rendered(load.dom, "nodes")) << Diagnose(load.dom);
    for (const auto& node : nodes->nodes) {
      const std::string scope = "data-node=\"" + node.name + "\"";
      EXPECT_EQ(Text(Figure(load.dom, scope, "node-gpus-total")), std::to_string(node.gpus_total)) << node.name;
      EXPECT_EQ(Text(Figure(load.dom, scope, "node-gpus-used")), std::to_string(node.gpus_used)) << node.name;
      EXPECT_EQ(Text(Figure(load.dom, scope, "node-state")), "Ready") << node.name;
      EXPECT_EQ(Count(load.dom, "data-gpu=\"" + node.name + "/"), node.devices.size()) << node.name;
      for (const auto& device : node.devices) {
        const std::string cell = "data-gpu=\"" + node.name + "/" + std::to_string(device.index) + "\"";
        const std::string state = !device.task.empty() ? "whole" : device.tenants.empty() ? "free" : "shared";
        EXPECT_NE(load.dom.find(cell + " data-state=\"" + state + "\""), std::string::npos) << cell << " " << state;
      }
    }
  }
  {  // Queues: every queue's allocated GPUs (the first resource of its row).
    PageLoad load = Load("/ui/queues", "queues");
    ASSERT_TRUE(Rendered(load.dom, "queues")) << Diagnose(load.dom);
    bool saw_team = false;
    for (const auto& q : queues->queues) {
      const auto gpus = q.allocated.find("gpu");
      const std::string expected = std::to_string(gpus == q.allocated.end() ? 0 : gpus->second);
      EXPECT_EQ(Text(Figure(load.dom, "data-queue=\"" + q.spec.name + "\"", "queue-allocated")), expected)
          << q.spec.name;
      EXPECT_EQ(Text(Figure(load.dom, "data-queue=\"" + q.spec.name + "\"", "queue-running")),
                std::to_string(q.jobs_running))
          << q.spec.name;
      saw_team |= q.spec.name == "team-a" && expected == "2";
    }
    EXPECT_TRUE(saw_team) << "team-a should hold the trainer's 2 GPUs";
  }
  {  // Jobs: each job's state and reason; the pending one's is the API's.
    PageLoad load = Load("/ui/jobs", "jobs");
    ASSERT_TRUE(Rendered(load.dom, "jobs")) << Diagnose(load.dom);
    for (const auto& job : jobs->jobs) {
      const std::string scope = "data-job=\"" + std::to_string(job.job_id) + "\"";
      EXPECT_EQ(Text(Figure(load.dom, scope, "job-state")), job.state) << job.job_id;
      EXPECT_EQ(Text(Figure(load.dom, scope, "job-reason")), job.reason) << job.job_id;
    }
    EXPECT_EQ(Text(Figure(load.dom, "data-job=\"" + std::to_string(waits) + "\"", "job-reason")),
              Summary(waits).reason);
  }
  {  // One job's explanation: its reasons, as ExplainJob gives them.
    PageLoad load = Load("/ui/jobs/" + std::to_string(waits), "explain");
    ASSERT_TRUE(Rendered(load.dom, "jobs")) << Diagnose(load.dom);
    ASSERT_FALSE(explained->reasons.empty());
    EXPECT_EQ(Count(load.dom, "data-metric=\"explain-reason\""), explained->reasons.size());
    EXPECT_EQ(Text(Figure(load.dom, "data-explain=", "explain-reason")), explained->reasons.front());
    EXPECT_EQ(Text(Figure(load.dom, "data-explain=", "explain-state")), "Pending");
  }
  {  // Events: as many as the stream holds (read before and after the load).
    auto count_events = [&]() -> size_t {
      size_t n = 0;
      ListEvents request;
      request.limit = 1000;
      for (int page = 0; page < 20; ++page) {
        auto reply = client_->ListEvents(request);
        if (!reply.ok() || reply->events.empty()) break;
        n += reply->events.size();
        request.after_seq = reply->last_seq;
      }
      return n;
    };
    const size_t before = count_events();
    PageLoad load = Load("/ui/events", "events");
    const size_t after = count_events();
    ASSERT_TRUE(Rendered(load.dom, "events")) << Diagnose(load.dom);
    EXPECT_GT(before, 0u);
    const std::string shown = Text(Figure(load.dom, "", "events-count"));
    EXPECT_TRUE(shown == std::to_string(before) || shown == std::to_string(after))
        << shown << " shown; the stream held " << before << " then " << after;
    EXPECT_EQ(Count(load.dom, "data-event="), std::stoul(shown));
  }
  for (const char* shot : {"overview", "nodes", "queues", "jobs", "explain", "events"}) {
    const std::string png = shots_ + "/" + shot + ".png";
    EXPECT_TRUE(std::filesystem::exists(png) && std::filesystem::file_size(png) > 1000) << png;
    if (const char* keep = std::getenv("GPOOL_DASHBOARD_SCREENSHOT_DIR"); keep && std::filesystem::exists(png)) {
      std::filesystem::copy_file(png, std::string(keep) + "/dashboard-" + shot + ".png",
                                 std::filesystem::copy_options::overwrite_existing);
    }
  }
}

TEST_F(DashboardTest, WithoutAValidTokenItAsksToSignIn) {
  // Nothing, a token nobody made, and a secret key (refused over HTTP).
  for (const std::string& fragment : {std::string(), std::string("#token=gpt_") + std::string(64, '0'),
                                      "#token=" + UrlEncode(secret_)}) {
    PageLoad load = LoadPage(base_ + "/ui/nodes" + fragment, "", cluster_->dir());
    ASSERT_TRUE(load.ok) << load.log.substr(0, 4000);
    EXPECT_NE(load.dom.find("<form id=\"login\">"), std::string::npos) << Diagnose(load.dom);
    EXPECT_NE(load.dom.find("data-status=\"unauthenticated\""), std::string::npos);
    EXPECT_EQ(load.dom.find("data-metric=\"node-gpus-total\""), std::string::npos);
  }
}

// Signing in with a token in a real browser (issue 48): the page trades the
// token for the session cookie, and Chromium keeps that cookie as HttpOnly
// (no script reads it), Secure (https only) and SameSite=Strict (no other
// site's page sends it), as its own cookie store records it.
TEST_F(DashboardTest, SigningInWithATokenKeepsAnHttpOnlySecureStrictCookie) {
  PageLoad load = Load("/ui/nodes", "signed-in");
  ASSERT_TRUE(Rendered(load.dom, "nodes")) << Diagnose(load.dom);
  EXPECT_EQ(load.dom.find(token_), std::string::npos) << "the token must not stay in the page";
  // Chromium's cookie store is SQLite, under Default/ (Default/Network/ in
  // newer versions), written when the browser exits.
  std::string store;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(load.profile, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename() == "Cookies" && it->is_regular_file(ec)) store = it->path().string();
  }
  ASSERT_FALSE(store.empty()) << "no Chromium cookie store under " << load.profile;
  // Read with Python's sqlite3 (python3 builds gpool already). Chromium's
  // samesite column: 2 is Strict (net::CookieSameSite::STRICT_MODE).
  const CommandResult cookies = RunCommand(
      {"/usr/bin/python3", "-c",
       "import sqlite3, sys\n"
       "for row in sqlite3.connect(sys.argv[1]).execute('SELECT name, host_key, path, is_httponly, is_secure, "
       "samesite FROM cookies ORDER BY name'):\n"
       "    print('|'.join(str(v) for v in row))\n",
       store});
  ASSERT_EQ(cookies.exit_code, 0) << cookies.err;
  EXPECT_EQ(cookies.out, "gpool_session|127.0.0.1|/|1|1|2\n") << "name|host|path|httponly|secure|samesite";
}

}  // namespace
}  // namespace gpool::testing
