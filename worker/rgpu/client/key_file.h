// Reads the client's CurveZMQ key pair from a gpool key file (the format of
// protocol/security/keys.h: `public-key = "<Z85>"` and `secret-key =
// "<Z85>"` lines, '#' comments) without any gpool library: this code runs
// inside foreign processes, which get nothing but libc, libstdc++ and
// libzmq from the client library.
#pragma once

#include <string>

namespace gpool::rgpu {

struct ClientKeys {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;
};

// False with `error` set when the file cannot be read, is readable by group
// or others, or lacks either key.
bool ReadClientKeyFile(const std::string& path, ClientKeys* keys, std::string* error);

}  // namespace gpool::rgpu
