// `gpool admin replica rotate-key ID --replica-key new.pub [--grace 1h]`
// (issue 48): a member replica's new CurveZMQ key, its old one still
// admitted (and still tried by the other replicas) for the grace, so the
// replica can be restarted on the new key without a gap (docs/operations.md
// 2.1).
#include "client/cli_internal.h"
#include "protocol/base/endpoint.h"
#include "protocol/messages_admin.h"
#include "protocol/security/keys.h"
#include "topology/quantity.h"

namespace gpool::cli {

constexpr char kReplicaRotateUsage[] = "admin replica rotate-key ID --replica-key FILE [--grace DURATION]";

int RunReplicaRotateKey(Session& s, const Invocation& inv) {
  const auto& f = inv.flags;
  if (inv.positionals.size() != 3 || !f.count("replica-key")) {
    return s.Usage("usage: gpool " + std::string(kReplicaRotateUsage));
  }
  for (const char* flag : {"peer-addr", "client-addr", "worker-addr", "force"}) {
    if (f.count(flag)) return s.Usage(std::string("--") + flag + " does not apply to 'admin replica rotate-key'");
  }
  auto id = ParseReplicaId(inv.positionals[2]);
  if (!id.ok()) return s.Fail(id.status());
  auto key = security::ReadPublicKeyFile(f["replica-key"].as<std::string>());
  if (!key.ok()) return s.Fail(key.status().WithContext("--replica-key"));
  gpool::ChangeReplicas request;
  request.op = ReplicaOp::kRotateKey;
  request.replica_id = *id;
  request.public_key = *key;
  // Default 0, as for node keys: the old key is refused from the commit on
  // (a key that leaked gets no grace).
  if (f.count("grace")) {
    auto grace = topology::ParseDurationMs(f["grace"].as<std::string>());
    if (!grace.ok()) return s.Fail(Status::InvalidArgument("--grace: expected a duration like 10m or 24h"));
    request.grace_ms = *grace;
  }
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ChangeReplicas(request);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << "{\"replica\":" << *id << ",\"public_key\":\"" << *key << "\",\"grace_ms\":" << request.grace_ms
          << ",\"index\":" << reply->index << "}\n";
  } else if (request.grace_ms > 0) {
    s.out << "replica " << *id << " has key " << *key << " (committed at index " << reply->index
          << "); its previous key is still admitted for " << f["grace"].as<std::string>()
          << ": restart it with the new --key-file before then\n";
  } else {
    s.out << "replica " << *id << " has key " << *key << " (committed at index " << reply->index
          << "); its previous key is refused from now on: restart it with the new --key-file\n";
  }
  return kExitOk;
}

}  // namespace gpool::cli
