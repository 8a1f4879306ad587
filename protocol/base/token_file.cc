#include "protocol/base/token_file.h"

#include <algorithm>
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

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Every byte of the longer string is read whatever the lengths, so no
  // early exit at a difference; the length difference itself is not secret.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  // volatile keeps the compiler from turning the loop back into an early exit.
  volatile unsigned char result = diff;
  return result == 0;
}

}  // namespace gpool
