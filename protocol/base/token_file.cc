#include "protocol/base/token_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "protocol/base/text.h"

namespace gpool {

Result<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("--token-file: cannot open " + path + ": " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string token(TrimSpace(buffer.str()));
  if (token.empty()) return Status::InvalidArgument("--token-file: " + path + " is empty");
  return token;
}

}  // namespace gpool
