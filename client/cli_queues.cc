// `gpool queue create|update|delete|tree`: queue quotas from flags, checked as
// the coordinator would before UpdateQueue is sent; `gpool queue
// grant-class|revoke-class QUEUE CLASS` (issue 50) opens or closes high or
// system to a queue's subtree.
#include "client/cli_internal.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include "client/format.h"
#include "protocol/messages_admin.h"
#include "protocol/model/queue_update.h"
#include "protocol/types.h"
#include "protocol/validate.h"

namespace gpool::cli {
namespace {

constexpr char kQueueCreateUsage[] =
    "queue create NAME [--parent P] [--capability QUOTA] [--deserved QUOTA] [--guarantee QUOTA] [--pools POOLS] "
    "[--preempting-classes CLASSES] [--low-reclaimable true|false]";
constexpr char kQueueUpdateUsage[] =
    "queue update NAME [--capability QUOTA] [--deserved QUOTA] [--guarantee QUOTA] [--pools POOLS] "
    "[--preempting-classes CLASSES] [--low-reclaimable true|false]";
constexpr char kQueueDeleteUsage[] = "queue delete NAME";
constexpr char kQueueTreeUsage[] = "queue tree";
constexpr char kQueueGrantUsage[] = "queue grant-class QUEUE high|system";
constexpr char kQueueRevokeUsage[] = "queue revoke-class QUEUE high|system";
constexpr const char* kQuotaFlags[] = {"capability", "deserved", "guarantee", "pools", "preempting-classes",
                                       "low-reclaimable"};

// The quota flags given, parsed into `spec`; the others are left as they are.
Status ApplyQuotaFlags(const Invocation& inv, QueueSpec& spec) {
  const auto& f = inv.flags;
  if (f.count("capability")) {
    GPOOL_ASSIGN_OR_RETURN(spec.capability, ParseQuota("--capability", f["capability"].as<std::string>()));
  }
  if (f.count("deserved")) {
    GPOOL_ASSIGN_OR_RETURN(spec.deserved, ParseQuota("--deserved", f["deserved"].as<std::string>()));
  }
  if (f.count("guarantee")) {
    GPOOL_ASSIGN_OR_RETURN(spec.guarantee, ParseQuota("--guarantee", f["guarantee"].as<std::string>()));
  }
  if (f.count("pools")) {
    spec.pools.clear();
    for (const std::string& pool : f["pools"].as<std::vector<std::string>>()) {
      if (pool == "any") continue;
      if (!NodePoolFromString(pool)) return NotOneOf<NodePool>("--pools", pool);
      if (std::find(spec.pools.begin(), spec.pools.end(), pool) == spec.pools.end()) spec.pools.push_back(pool);
    }
  }
  // The preemption policy (issue 50); the classes are checked with the rest
  // of the spec by ValidateUpdateQueue.
  if (f.count("preempting-classes")) {
    spec.preempting_classes.clear();
    for (const std::string& cls : f["preempting-classes"].as<std::vector<std::string>>()) {
      if (cls != "none") spec.preempting_classes.push_back(cls);
    }
  }
  if (f.count("low-reclaimable")) {
    const std::string value = f["low-reclaimable"].as<std::string>();
    if (value != "true" && value != "false") {
      return Status::InvalidArgument("--low-reclaimable: '" + value + "' is not one of true, false");
    }
    spec.low_reclaimable = value == "true";
  }
  return Status::Ok();
}

bool AnyQuotaFlag(const Invocation& inv) {
  return std::any_of(std::begin(kQuotaFlags), std::end(kQuotaFlags),
                     [&](const char* flag) { return inv.flags.count(flag) > 0; });
}

// "public,pooled".
std::string PoolsText(const std::vector<std::string>& pools) {
  std::string out;
  for (const auto& pool : pools) out += (out.empty() ? "" : ",") + pool;
  return out;
}

// "capability gpu=16,cpu=64; deserved gpu=8; guarantee none[; pools public,pooled]", then the
// preemption policy where it is not the default.
std::string QuotasText(const QueueSpec& spec) {
  const QueueSpec defaults;
  std::string policy;
  if (spec.preempting_classes != defaults.preempting_classes) {
    policy += "; preempting classes " +
              (spec.preempting_classes.empty() ? std::string("none") : PoolsText(spec.preempting_classes));
  }
  if (!spec.low_reclaimable) policy += "; low work not reclaimable";
  return "capability " + FormatQuota(spec.capability) + "; deserved " + FormatQuota(spec.deserved) +
         "; guarantee " + FormatQuota(spec.guarantee) + (spec.pools.empty() ? "" : "; pools " + PoolsText(spec.pools)) +
         policy;
}

// Rejects flags that do not apply to `op` (a usage error, before anything is sent).
std::optional<std::string> MisplacedQueueFlag(const Invocation& inv, const std::string& op) {
  if (op != "create" && inv.flags.count("parent")) return "--parent only applies to 'queue create'";
  if (op == "delete" || op == "tree" || op == "grant-class" || op == "revoke-class") {
    for (const char* flag : kQuotaFlags) {
      if (inv.flags.count(flag)) return std::string("--") + flag + " only applies to 'queue create' and 'queue update'";
    }
  }
  return std::nullopt;
}

int RunQueueTree(Session& s) {
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->ListQueues();
  if (!reply.ok()) return s.Fail(reply.status());
  s.out << (s.json ? ToJson(*reply) + "\n" : FormatQueueTree(*reply));
  return kExitOk;
}

// grant-class / revoke-class QUEUE CLASS.
int RunQueueClassGrant(Session& s, const Invocation& inv, const std::string& usage_hint) {
  const auto& p = inv.positionals;
  const std::string& op = p[0];
  if (p.size() != 3) {
    return s.Usage("queue " + op + ": expected QUEUE and CLASS, got " + std::to_string(p.size() - 1) +
                   " arguments" + usage_hint);
  }
  gpool::UpdateQueue request;
  request.op = *EnumFromName<QueueOp>(op);
  request.spec.name = p[1];
  request.priority_class = p[2];
  if (Status valid = ValidateUpdateQueue(request); !valid.ok()) return s.Fail(valid);
  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  auto reply = (*client)->UpdateQueue(request);
  if (!reply.ok()) return s.Fail(reply.status());
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
    return kExitOk;
  }
  std::string granted;
  for (const auto& c : reply->queue.granted_classes) granted += (granted.empty() ? "" : ",") + c;
  s.out << "queue " << request.spec.name << ": class " << p[2] << (op == "grant-class" ? " granted" : " revoked")
        << " (granted to it now: " << (granted.empty() ? "none" : granted) << ")\n";
  return kExitOk;
}

// The queue as it is now, for an update to overlay its flags on.
Result<QueueSpec> CurrentQueueSpec(Client& client, const std::string& name) {
  GPOOL_ASSIGN_OR_RETURN(ListQueuesReply queues, client.ListQueues());
  for (const auto& queue : queues.queues) {
    if (queue.spec.name == name) return queue.spec;
  }
  return Status::NotFound("queue '" + name + "' does not exist");
}

int RunQueue(Session& s, const Invocation& inv) {
  const auto& p = inv.positionals;
  if (p.empty()) {
    return s.Usage("queue: expected a subcommand: create, update, delete, tree, grant-class or revoke-class");
  }
  const std::string& op = p[0];
  const char* usage = nullptr;
  if (op == "create") {
    usage = kQueueCreateUsage;
  } else if (op == "update") {
    usage = kQueueUpdateUsage;
  } else if (op == "delete") {
    usage = kQueueDeleteUsage;
  } else if (op == "tree") {
    usage = kQueueTreeUsage;
  } else if (op == "grant-class") {
    usage = kQueueGrantUsage;
  } else if (op == "revoke-class") {
    usage = kQueueRevokeUsage;
  } else {
    return s.Usage("queue: unknown subcommand '" + op +
                   "'; expected create, update, delete, tree, grant-class or revoke-class");
  }
  const std::string usage_hint = " (usage: gpool " + std::string(usage) + ")";
  if (auto misplaced = MisplacedQueueFlag(inv, op)) return s.Usage(*misplaced);
  if (op == "tree") {
    if (p.size() != 1) return s.Usage("queue tree: takes no arguments" + usage_hint);
    return RunQueueTree(s);
  }
  if (op == "grant-class" || op == "revoke-class") return RunQueueClassGrant(s, inv, usage_hint);
  if (p.size() != 2) {
    return s.Usage("queue " + op + ": expected one queue NAME, got " + std::to_string(p.size() - 1) + " arguments" +
                   usage_hint);
  }
  if (op == "update" && !AnyQuotaFlag(inv)) {
    return s.Usage("queue update: nothing to change; give --capability, --deserved, --guarantee, --pools, "
                   "--preempting-classes or --low-reclaimable" +
                   usage_hint);
  }

  gpool::UpdateQueue request;
  request.op = *EnumFromName<QueueOp>(op);  // create, update or delete (tree returned above)
  request.spec.name = p[1];
  if (inv.flags.count("parent")) request.spec.parent = inv.flags["parent"].as<std::string>();
  if (Status parsed = ApplyQuotaFlags(inv, request.spec); !parsed.ok()) return s.Fail(parsed);
  // What the coordinator checks on its own (names, resources, quota order),
  // before anything is sent. For an update this covers the flags given; the
  // queue's other quotas are checked once they are known, below.
  if (Status valid = ValidateUpdateQueue(request); !valid.ok()) return s.Fail(valid);

  auto client = s.client();
  if (!client.ok()) return s.Fail(client.status());
  if (op == "update") {
    // UpdateQueue replaces all three quotas: start from the queue as it is,
    // so the quotas not named on the command line stay.
    auto current = CurrentQueueSpec(**client, request.spec.name);
    if (!current.ok()) return s.Fail(current.status());
    request.spec = std::move(current).value();
    // Parsed once already, above; it cannot fail now.
    if (Status parsed = ApplyQuotaFlags(inv, request.spec); !parsed.ok()) return s.Fail(parsed);
    if (Status valid = ValidateUpdateQueue(request); !valid.ok()) {
      return s.Fail(valid.WithContext("queue " + request.spec.name + " with this update"));
    }
  }
  auto reply = (*client)->UpdateQueue(request);
  if (!reply.ok()) return s.Fail(reply.status());
  const QueueSpec& spec = reply->queue.spec;
  const std::string name = spec.name.empty() ? request.spec.name : spec.name;
  if (s.json) {
    s.out << ToJson(*reply) << "\n";
  } else if (op == "create") {
    s.out << "queue " << name << " created under " << (spec.parent.empty() ? request.spec.parent : spec.parent)
          << ": " << QuotasText(spec) << "\n";
  } else if (op == "update") {
    s.out << "queue " << name << " updated: " << QuotasText(spec) << "\n";
  } else {
    s.out << "queue " << name << " deleted\n";
  }
  return kExitOk;
}

void QueueOptions(cxxopts::Options& o) {
  o.add_options("queue")
      ("parent", "create: the parent queue (default root)", cxxopts::value<std::string>(), "P")
      ("capability", "create, update: the most the queue and its children may hold, e.g. "
       "gpu=16,gpu/A100=8,cpu=64,memory=256Gi (cpu in cores; memory in Mi/Gi/Ti, a bare number is MiB; "
       "none: no limit)", cxxopts::value<std::string>(), "QUOTA")
      ("deserved", "create, update: its fair share; it may borrow beyond it while others are idle",
       cxxopts::value<std::string>(), "QUOTA")
      ("guarantee", "create, update: what reclaim always wins back for it", cxxopts::value<std::string>(), "QUOTA")
      ("pools", "create, update: the node pools its jobs may run in, e.g. public,pooled (any: no restriction)",
       cxxopts::value<std::vector<std::string>>(), "POOLS")
      ("preempting-classes", "create, update: the classes of its jobs that may preempt its low work: high,system "
       "(default), high, system or none", cxxopts::value<std::vector<std::string>>(), "CLASSES")
      ("low-reclaimable", "create, update: whether other queues may reclaim its low work (default true; false also "
       "keeps its low work within its deserved share)", cxxopts::value<std::string>(), "true|false");
}

constexpr CommandForm kQueueForms[] = {
    {"create NAME [--parent P] [--capability QUOTA] [--deserved QUOTA] [--guarantee QUOTA]",
     "create NAME [--parent P] [QUOTAS]", "create a queue (quota flags: 'gpool help queue')"},
    {"update NAME [--capability QUOTA] [--deserved QUOTA] [--guarantee QUOTA]", "update NAME [QUOTAS]",
     "replace the quotas given; the others stay"},
    {"delete NAME", "delete NAME", "delete a queue that has no child queues and no unfinished jobs"},
    {"tree", "tree", "show the queues: allocated/deserved/guarantee/capability, job counts"},
    {"grant-class QUEUE high|system", "grant-class QUEUE CLASS",
     "let the queue's subtree run jobs of the class (admins: high, system; queue-admins: high below their queue)"},
    {"revoke-class QUEUE high|system", "revoke-class QUEUE CLASS", "take a class grant back (running jobs keep running)"},
};

}  // namespace

const CommandDef kQueueCommand = {
    .name = "queue",
    .synopsis = "create|update|delete|tree|grant-class|revoke-class ...",
    .summary = "create, update, delete or list queues; grant classes",
    .min_args = 0,
    .max_args = std::numeric_limits<size_t>::max(),
    .add_options = QueueOptions,
    .run = RunQueue,
    .forms = kQueueForms,
};

}  // namespace gpool::cli
