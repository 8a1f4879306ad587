#include "worker/rgpu/client/key_file.h"

#include <sys/stat.h>

#include <fstream>

namespace gpool::rgpu {

namespace {

// The quoted value of a `name = "value"` line, or empty.
std::string ValueOf(const std::string& line, const std::string& name) {
  const std::size_t start = line.find_first_not_of(" \t");
  if (start == std::string::npos || line.compare(start, name.size(), name) != 0) return {};
  const std::size_t open = line.find('"', start + name.size());
  const std::size_t close = open == std::string::npos ? open : line.find('"', open + 1);
  if (close == std::string::npos) return {};
  return line.substr(open + 1, close - open - 1);
}

}  // namespace

bool ReadClientKeyFile(const std::string& path, ClientKeys* keys, std::string* error) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    *error = "cannot open " + path;
    return false;
  }
  // As keys.h: a secret others can read is no identity.
  if ((st.st_mode & 077) != 0 || !S_ISREG(st.st_mode)) {
    *error = path + " is not a regular file of mode 0600 (chmod 600 it)";
    return false;
  }
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (std::string v = ValueOf(line, "public-key"); !v.empty()) keys->public_key = v;
    if (std::string v = ValueOf(line, "secret-key"); !v.empty()) keys->secret_key = v;
  }
  if (keys->public_key.size() != 40 || keys->secret_key.size() != 40) {
    *error = path + " lacks a 40-character public-key or secret-key";
    return false;
  }
  return true;
}

}  // namespace gpool::rgpu
