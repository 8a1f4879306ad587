// The shared token a coordinator, worker or client reads from --token-file:
// one reader, so every process accepts the same files and says the same
// thing about a bad one.
#pragma once

#include <string>
#include <string_view>

#include "protocol/base/status.h"

namespace gpool {

// The file's content without surrounding whitespace. NotFound when it cannot
// be opened, InvalidArgument when it holds nothing but whitespace; both name
// the flag and the path.
Result<std::string> ReadTokenFile(const std::string& path);

// Whether a == b, taking a time that depends on their lengths only, not on
// where they differ: a token compared with == leaks its prefix to whoever
// can time the refusals.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace gpool
