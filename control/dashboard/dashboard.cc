#include "control/dashboard/dashboard.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "control/dashboard/assets.h"

namespace gpool::control::dashboard {

namespace {

constexpr std::string_view kUiPrefix = "/ui/";
constexpr std::array<std::string_view, 5> kPages = {"overview", "nodes", "queues", "jobs", "events"};

// The page loads only its own files and talks only to its own origin: a name
// or message from the cluster that slipped into markup could run nothing,
// and the dashboard cannot be framed by another site (clickjacking).
constexpr std::string_view kSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

std::string_view ContentType(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

const Asset* Find(std::string_view name) {
  for (const Asset& asset : Assets()) {
    if (asset.name == name) return &asset;
  }
  return nullptr;
}

http::HttpResponse Respond(const Asset& asset) {
  http::HttpResponse response;
  response.content_type = std::string(ContentType(asset.name));
  response.body = std::string(asset.body);
  // Revalidated on every load, so a coordinator upgrade never leaves a
  // browser running old JavaScript against a newer API.
  response.headers.emplace_back("Cache-Control", "no-cache");
  response.headers.emplace_back("Content-Security-Policy", std::string(kSecurityPolicy));
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.headers.emplace_back("Referrer-Policy", "no-referrer");
  return response;
}

bool AllDigits(std::string_view text) {
  return !text.empty() && text.size() <= 20 && std::all_of(text.begin(), text.end(), [](char c) {
    return c >= '0' && c <= '9';
  });
}

// "/ui/<page>" or "/ui/jobs/<id>": a route app.js renders.
bool IsPage(std::string_view rest) {
  if (rest.empty()) return true;
  if (std::find(kPages.begin(), kPages.end(), rest) != kPages.end()) return true;
  constexpr std::string_view kJob = "jobs/";
  return rest.starts_with(kJob) && AllDigits(rest.substr(kJob.size()));
}

}  // namespace

std::optional<http::HttpResponse> Serve(const std::string& path) {
  const Asset* index = Find("index.html");
  if (index == nullptr) return std::nullopt;
  if (path == "/" || path == "/ui") return Respond(*index);
  if (!path.starts_with(kUiPrefix)) return std::nullopt;
  const std::string_view rest = std::string_view(path).substr(kUiPrefix.size());
  if (IsPage(rest)) return Respond(*index);
  if (rest == "index.html") return std::nullopt;  // one name per page: the routes above
  if (const Asset* asset = Find(rest)) return Respond(*asset);
  return std::nullopt;
}

}  // namespace gpool::control::dashboard
