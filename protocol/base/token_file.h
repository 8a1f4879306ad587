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

// Whether two secrets are equal, in a time that does not depend on where
// they differ (only on their lengths).
bool SecretsEqual(std::string_view a, std::string_view b);

}  // namespace gpool
