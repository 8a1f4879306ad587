// The coordinator's read-only web dashboard (docs/operations.md,
// "Dashboard"): static HTML, CSS and JavaScript served from the binary on
// the HTTP port; the page itself reads the JSON API (/api/v1/...) with the
// caller's bearer credential, so it sees exactly what that user may see and
// needs no access of its own.
//
// Pages are paths, so each can be linked and loaded on its own:
//   /, /ui, /ui/overview   cluster overview
//   /ui/nodes              nodes with a per-GPU grid
//   /ui/queues             the queue tree with allocated/deserved/capability
//   /ui/jobs[/<id>]        jobs, and one job's explanation
//   /ui/events             the event stream
// All of them are index.html; app.js renders the one the path names.
//
// Stateless and thread-safe: it only reads the embedded files, so it is
// called straight from the HTTP threads (CoordinatorHttpHooks::dashboard).
#pragma once

#include <optional>
#include <string>

#include "protocol/http/http_server.h"

namespace gpool::control::dashboard {

// The response for `path`, or nullopt when the path is not the dashboard's
// (the caller answers 404).
std::optional<http::HttpResponse> Serve(const std::string& path);

}  // namespace gpool::control::dashboard
