// A throwaway self-signed certificate for tests of the HTTPS port, made
// with the openssl CLI (what an operator would run, docs/operations.md 15):
// an EC key and a certificate for 127.0.0.1 and localhost, valid a day.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "protocol/base/status.h"

namespace gpool::http::testing {

struct SelfSignedCert {
  std::string cert_file;  // also the CA a client trusts: it signed itself
  std::string key_file;
};

// Writes cert.pem and key.pem into `dir` under `name` ("server" makes
// server.cert.pem, server.key.pem).
inline Result<SelfSignedCert> MakeSelfSignedCert(const std::string& dir, const std::string& name = "server") {
  SelfSignedCert cert{dir + "/" + name + ".cert.pem", dir + "/" + name + ".key.pem"};
  const std::string command =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=" + name +
      " -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout '" + cert.key_file + "' -out '" + cert.cert_file +
      "' >/dev/null 2>&1";
  if (std::system(command.c_str()) != 0 || !std::filesystem::exists(cert.cert_file)) {
    return Status::Internal("openssl could not make a self-signed certificate in " + dir);
  }
  return cert;
}

}  // namespace gpool::http::testing
