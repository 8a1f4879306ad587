// The dashboard's static files (control/dashboard/web/), compiled into the
// binary by embed_assets.cmake. Immutable; safe from any thread.
#pragma once

#include <span>
#include <string_view>

namespace gpool::control::dashboard {

struct Asset {
  std::string_view name;  // as under web/: "index.html", "app.js"
  std::string_view body;
};

std::span<const Asset> Assets();

}  // namespace gpool::control::dashboard
