#include "control/dashboard/dashboard.h"

#include <gtest/gtest.h>

#include "control/dashboard/assets.h"
#include "protocol/messages_nodes.h"

namespace gpool::control::dashboard {
namespace {

std::string Header(const http::HttpResponse& response, const std::string& name) {
  for (const auto& [key, value] : response.headers) {
    if (key == name) return value;
  }
  return "";
}

TEST(Dashboard, EveryPageIsTheIndex) {
  for (const char* path : {"/", "/ui", "/ui/", "/ui/overview", "/ui/nodes", "/ui/queues", "/ui/jobs", "/ui/jobs/17",
                           "/ui/events"}) {
    auto page = Serve(path);
    ASSERT_TRUE(page.has_value()) << path;
    EXPECT_EQ(page->status, 200) << path;
    EXPECT_EQ(page->content_type, "text/html; charset=utf-8") << path;
    EXPECT_NE(page->body.find("<script src=\"/ui/app.js\""), std::string::npos) << path;
  }
}

TEST(Dashboard, ServesItsFilesWithTheirTypesAndAStrictPolicy) {
  auto script = Serve("/ui/app.js");
  ASSERT_TRUE(script.has_value());
  EXPECT_EQ(script->content_type, "text/javascript; charset=utf-8");
  EXPECT_NE(script->body.find("/api/v1/"), std::string::npos);
  auto style = Serve("/ui/style.css");
  ASSERT_TRUE(style.has_value());
  EXPECT_EQ(style->content_type, "text/css; charset=utf-8");
  EXPECT_NE(Header(*script, "Content-Security-Policy").find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(Header(*script, "X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(Header(*script, "Cache-Control"), "no-cache");
}

TEST(Dashboard, OtherPathsAreNotItsOwn) {
  for (const char* path : {"/metrics", "/api/v1/ListNodes", "/ui/nothing", "/ui/jobs/x", "/ui/jobs/1/2",
                           "/ui/index.html", "/ui/../etc/passwd", "/uix", "/favicon.ico"}) {
    EXPECT_FALSE(Serve(path).has_value()) << path;
  }
}

TEST(Dashboard, EmbedsEveryWebFileWhole) {
  ASSERT_EQ(Assets().size(), 3u);
  for (const Asset& asset : Assets()) {
    EXPECT_GT(asset.body.size(), 100u) << asset.name;
  }
  // The last line of each file made it in (the literal was not cut short).
  auto script = Serve("/ui/app.js");
  EXPECT_NE(script->body.find("start();"), std::string::npos);
  EXPECT_NE(Serve("/")->body.find("</html>"), std::string::npos);
}

}  // namespace
}  // namespace gpool::control::dashboard
