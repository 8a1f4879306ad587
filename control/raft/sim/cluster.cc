#include "control/raft/sim/cluster.h"
#include "protocol/model/users.h"

#include <algorithm>
#include <sstream>

namespace gpool::raft::sim {
namespace {

std::string Id(uint64_t v) { return std::to_string(v); }

// The simulated state machine's snapshot: "applied chain".
std::string EncodeState(uint64_t applied, uint64_t chain) { return Id(applied) + " " + Id(chain); }
bool DecodeState(const std::string& data, uint64_t* applied, uint64_t* chain) {
  std::istringstream in(data);
  return static_cast<bool>(in >> *applied >> *chain);
}

}  // namespace

// One line of the trace. kind: D deliver, R ready, T tick all, t tick one,
// P propose, Q read, C crash, S restart, X partition, H heal, K compact,
// M membership change, L leader transfer, x dropped (node down).
struct SimCluster::Event {
  uint64_t step = 0;
  uint64_t tick = 0;
  char kind = '?';
  uint64_t node = 0;
  uint64_t a = 0;
  uint64_t b = 0;
  bool has_message = false;
  Message message;  // entries and snapshot data are not kept
};

SimCluster::SimCluster(SimOptions options) : opts_(options), rng_(options.seed), net_(&rng_) {
  // Vary the replication knobs per seed so batching, pipelining and the
  // in-flight window are all exercised at their edges.
  const uint64_t entries[] = {1, 2, 4, 64};
  const uint64_t inflight[] = {1, 2, 8, 256};
  const uint64_t max_entries = entries[rng_.Uniform(4)];
  const uint64_t max_inflight = inflight[rng_.Uniform(4)];
  // Mostly the production setting (both on); the other combinations keep
  // the safety of each mechanism from resting on the other. Without
  // check-quorum a cut-off leader keeps leading, which is what tests that
  // ReadIndex really confirms leadership.
  const bool pre_vote = rng_.Chance(750);
  const bool check_quorum = rng_.Chance(750);
  std::vector<uint64_t> voters;
  for (int i = 1; i <= opts_.nodes; ++i) voters.push_back(static_cast<uint64_t>(i));
  for (int i = 1; i <= opts_.nodes + 1; ++i) {
    auto n = std::make_unique<Node>();
    n->id = static_cast<uint64_t>(i);
    n->config.id = n->id;
    if (i <= opts_.nodes) n->config.peers = voters;  // the spare joins later, with no peers
    n->config.election_tick = 8;
    n->config.heartbeat_tick = 2;
    n->config.max_msg_entries = max_entries;
    n->config.max_msg_bytes = 512;
    n->config.max_inflight = max_inflight;
    // The byte bound (a few 512-byte appends) on a third of the seeds, taken
    // from the seed so the draws above keep their sequence.
    n->config.max_inflight_bytes = opts_.seed % 3 == 0 ? 1500 : 0;
    // Backlogs above 16 entries handed over one per Ready on half the seeds
    // (the checker's reads and applies must hold across the slices).
    n->config.max_committed_per_ready = opts_.seed % 2 == 0 ? 1 : 0;
    n->config.pre_vote = pre_vote;
    n->config.check_quorum = check_quorum;
    n->config.seed = opts_.seed;
    nodes_.push_back(std::move(n));
  }
  net_.set_faults({.drop_per_mille = 50, .duplicate_per_mille = 20, .max_delay_ticks = 2});
  rogue_ = rng_.Chance(opts_.rogue_per_mille);
  trace_.reserve(opts_.keep_full_trace ? 4096 : 64);
}

SimCluster::~SimCluster() = default;

Status SimCluster::Run() {
  for (auto& n : nodes_) GPOOL_RETURN_IF_ERROR(Restart(*n));
  for (step_ = 0; step_ < static_cast<uint64_t>(opts_.steps); ++step_) {
    GPOOL_RETURN_IF_ERROR(ChaosStep());
    GPOOL_RETURN_IF_ERROR(CheckAll());
    if (Leader() != nullptr) ++stats_.leader_steps;
  }
  return LivenessPhase();
}

Status SimCluster::CheckAll() {
  for (auto& n : nodes_) {
    if (!n->up()) continue;
    GPOOL_RETURN_IF_ERROR(checker_.CheckNode(n->id, *n->raw));
  }
  stats_.max_commit = checker_.max_committed();
  stats_.dropped = net_.dropped();
  stats_.leaders = checker_.leaders_seen();
  return Status::Ok();
}

namespace {

// One chaos step picks one of these, by weight.
enum class Op { kDeliver, kReady, kTickAll, kTickOne, kPropose, kRead, kCrash, kRestart, kPartition, kHeal,
                kCompact, kMembership, kTransfer, kForge };
struct Weighted {
  Op op;
  uint64_t weight;
};
// A tick is about one step in six and an election timeout 8 to 16 ticks, so
// faults come about once per election timeout or two: leaders get elected,
// do some work and are disturbed again, several times a run, which is what
// reaches orderings like the paper's Figure 8. (Tuned by injecting known
// bugs into the core and counting the seeds that catch them.)
constexpr Weighted kOps[] = {
    {Op::kDeliver, 380},  {Op::kReady, 230},    {Op::kTickAll, 200},  {Op::kTickOne, 15},   {Op::kPropose, 100},
    {Op::kRead, 20},      {Op::kCrash, 6},      {Op::kRestart, 25},   {Op::kPartition, 7},  {Op::kHeal, 9},
    {Op::kCompact, 20},   {Op::kMembership, 8}, {Op::kTransfer, 8},  {Op::kForge, 30},
};

// Crashes and restarts scale with the cluster size, so a 5-node cluster
// also loses two nodes at once now and then.
uint64_t WeightOf(const Weighted& w, int nodes, bool rogue) {
  if (w.op == Op::kForge && !rogue) return 0;
  if (w.op == Op::kCrash || w.op == Op::kRestart) return w.weight * static_cast<uint64_t>(nodes) / 3;
  return w.weight;
}

Op PickOp(Rng& rng, int nodes, bool rogue) {
  uint64_t total = 0;
  for (const auto& w : kOps) total += WeightOf(w, nodes, rogue);
  uint64_t roll = rng.Uniform(total);
  for (const auto& w : kOps) {
    if (roll < WeightOf(w, nodes, rogue)) return w.op;
    roll -= WeightOf(w, nodes, rogue);
  }
  return Op::kDeliver;
}

}  // namespace

Status SimCluster::ChaosStep() {
  switch (PickOp(rng_, opts_.nodes, rogue_)) {
    case Op::kDeliver:
      // A short burst, so traffic keeps up with what the ticks produce.
      for (uint64_t i = 0, burst = 1 + rng_.Uniform(6); i < burst; ++i) GPOOL_RETURN_IF_ERROR(DeliverOne());
      return Status::Ok();
    case Op::kReady: {
      // A node with work to do persists, sends and applies it.
      const size_t start = rng_.Uniform(nodes_.size());
      for (size_t i = 0; i < nodes_.size(); ++i) {
        Node& n = *nodes_[(start + i) % nodes_.size()];
        if (n.up() && n.raw->HasReady()) return HandleReady(n);
      }
      return Status::Ok();
    }
    case Op::kTickAll:
      return TickAll();
    case Op::kTickOne:
      if (Node* n = RandomLiveNode()) TickNode(*n);  // clock drift: one node runs ahead
      return Status::Ok();
    case Op::kPropose: {
      // Clients mostly find the leader, sometimes ask a follower.
      Node* n = rng_.Chance(800) ? Leader() : RandomLiveNode();
      if (n == nullptr) return Status::Ok();
      uint64_t index = 0;
      return Propose(*n, "s" + Id(opts_.seed) + "-" + Id(++next_request_), &index);
    }
    case Op::kRead:
      if (Node* n = RandomLiveNode()) IssueRead(*n);
      return Status::Ok();
    case Op::kCrash: {
      // Leaders crash more often than others: that is where the hard cases are.
      Node* n = rng_.Chance(500) ? Leader() : RandomLiveNode();
      if (n != nullptr) Crash(*n);
      return Status::Ok();
    }
    case Op::kRestart:
      for (size_t i = 0, start = rng_.Uniform(nodes_.size()); i < nodes_.size(); ++i) {
        Node& n = *nodes_[(start + i) % nodes_.size()];
        if (!n.up()) return Restart(n);
      }
      return Status::Ok();
    case Op::kPartition:
      Repartition();
      return Status::Ok();
    case Op::kHeal:
      net_.Heal();
      Trace('H', 0);
      return Status::Ok();
    case Op::kCompact:
      if (Node* n = RandomLiveNode()) Compact(*n);
      return Status::Ok();
    case Op::kMembership:
      ChangeMembership();
      return Status::Ok();
    case Op::kTransfer:
      TransferLeadership();
      return Status::Ok();
    case Op::kForge:
      return Forge();
  }
  return Status::Ok();
}

// --- Events ----------------------------------------------------------------

Status SimCluster::DeliverOne() {
  auto m = net_.TakeDeliverable(now_);
  if (!m.has_value()) return Status::Ok();
  Node& to = *nodes_[m->to - 1];
  if (!to.up()) {
    Trace('x', m->to, 0, 0, &*m);
    return Status::Ok();
  }
  Trace('D', m->to, 0, 0, &*m);
  ++stats_.delivered;
  if (rogue_) Remember(*m);
  return StepHonest(to, *m);
}

Status SimCluster::StepHonest(Node& to, const Message& m) {
  Status s = to.raw->Step(m);
  if (s.ok()) return s;
  // A forged message may lift a node's term by up to kMaxTermJump (a
  // pre-vote rejection with a higher term is honest Raft); that node's
  // honest messages can then be beyond another's bound, which refuses them
  // as it would any. Without a rogue, an honest node never sends one.
  if (rogue_ && s.code() == StatusCode::kInvalidArgument) {
    ++stats_.refused;
    return Status::Ok();
  }
  return Status::Internal("node " + Id(to.id) + " failed to step " + m.DebugString() + ": " + s.ToString());
}

Status SimCluster::HandleReady(Node& n) {
  Ready rd = n.raw->GetReady();
  Trace('R', n.id, rd.entries.size(), rd.committed_entries.size());
  // 1. Persist: from here on a crash keeps it.
  n.durable.Persist(rd);
  GPOOL_RETURN_IF_ERROR(checker_.OnPersist(n.id, rd.entries, n.durable));
  // 2. Send.
  stats_.sent += rd.messages.size();
  for (auto& m : rd.messages) {
    // Answers to the rogue's outsider id go nowhere.
    if (m.to == 0 || m.to > nodes_.size()) continue;
    net_.Send(std::move(m), now_);
  }
  // 3. Apply the snapshot, then the committed entries.
  if (rd.snapshot.has_value()) {
    uint64_t applied = 0, chain = 0;
    if (!DecodeState(rd.snapshot->data, &applied, &chain) || applied != rd.snapshot->index) {
      return Status::Internal("node " + Id(n.id) + " received a snapshot whose data does not match its index");
    }
    if (applied < n.applied) {
      return Status::Internal("monotonic: node " + Id(n.id) + " installed a snapshot at " + Id(applied) +
                              " after applying " + Id(n.applied));
    }
    GPOOL_RETURN_IF_ERROR(checker_.OnRestore(n.id, applied, chain));
    n.applied = applied;
    n.chain = chain;
    ++stats_.snapshots_installed;
  }
  for (const LogEntry& e : rd.committed_entries) {
    const uint64_t chain = ChainHash(n.chain, e);
    GPOOL_RETURN_IF_ERROR(checker_.OnApply(n.id, e, n.applied, chain));
    n.applied = e.index;
    n.chain = chain;
  }
  // 4. Serve reads.
  for (const ReadState& r : rd.read_states) GPOOL_RETURN_IF_ERROR(checker_.OnRead(n.id, r, n.applied));
  n.raw->Advance(rd);
  return Status::Ok();
}

Status SimCluster::TickAll() {
  ++now_;
  ++stats_.ticks;
  Trace('T', 0);
  for (auto& n : nodes_) {
    if (n->up()) n->raw->Tick();
  }
  return Status::Ok();
}

void SimCluster::TickNode(Node& n) {
  Trace('t', n.id);
  n.raw->Tick();
}

Status SimCluster::Propose(Node& n, const std::string& data, uint64_t* index) {
  auto r = n.raw->Propose(data);
  Trace('P', n.id, r.ok() ? *r : 0, static_cast<uint64_t>(r.status().code()));
  if (r.ok()) {
    ++stats_.proposals_accepted;
    *index = *r;
    return Status::Ok();
  }
  const StatusCode code = r.status().code();
  if (code != StatusCode::kNotLeader && code != StatusCode::kUnavailable) {
    return Status::Internal("node " + Id(n.id) + " refused a proposal unexpectedly: " + r.status().ToString());
  }
  return Status::Ok();
}

void SimCluster::IssueRead(Node& n) {
  const std::string ctx = "r" + Id(++next_request_);
  checker_.OnReadIssued(ctx);
  Status s = n.raw->ReadIndex(ctx);
  Trace('Q', n.id, next_request_, static_cast<uint64_t>(s.code()));
  if (s.ok()) ++stats_.reads;
}

void SimCluster::Crash(Node& n) {
  Trace('C', n.id);
  n.raw.reset();
  ++stats_.crashes;
}

Status SimCluster::Restart(Node& n) {
  auto raw = RawNode::Restart(n.config, n.durable.ToInitialState());
  if (!raw.ok()) return Status::Internal("node " + Id(n.id) + " failed to restart: " + raw.status().ToString());
  n.raw = std::move(raw).value();
  Trace('S', n.id, n.durable.snapshot().index, n.durable.hard_state().commit);
  // The state machine restarts from the durable snapshot; the committed
  // entries after it come out of the first Readys again.
  n.applied = 0;
  n.chain = 0;
  const Snapshot& snap = n.durable.snapshot();
  if (!snap.empty()) {
    if (!DecodeState(snap.data, &n.applied, &n.chain) || n.applied != snap.index) {
      return Status::Internal("node " + Id(n.id) + " has a durable snapshot that does not decode");
    }
    GPOOL_RETURN_IF_ERROR(checker_.OnRestore(n.id, n.applied, n.chain));
  }
  checker_.OnRestart(n.id, n.raw->hard_state().commit);
  return Status::Ok();
}

void SimCluster::Repartition() {
  std::map<uint64_t, int> groups;
  Node* leader = Leader();
  if (leader != nullptr && rng_.Chance(400)) {
    groups[leader->id] = 1;  // cut the leader off
  } else if (rng_.Chance(400)) {
    groups[RandomNode()->id] = 1;  // isolate one node
  } else {
    for (auto& n : nodes_) groups[n->id] = static_cast<int>(rng_.Uniform(2));
  }
  uint64_t mask = 0;
  for (const auto& [id, g] : groups) {
    if (g == 1) mask |= 1ULL << id;
  }
  Trace('X', 0, mask);
  net_.Partition(std::move(groups));
}

void SimCluster::Compact(Node& n) {
  if (n.applied <= n.durable.snapshot().index) return;
  auto snap = n.raw->Compact(n.applied, EncodeState(n.applied, n.chain));
  Trace('K', n.id, n.applied, snap.ok());
  if (snap.ok()) n.durable.SaveSnapshot(*snap);
}

void SimCluster::ChangeMembership() {
  // Without check-quorum there is no leader lease, and a removed server that
  // missed its removal can disrupt the cluster forever (thesis 4.2.3).
  if (!nodes_[0]->config.check_quorum) return;
  Node* leader = Leader();
  if (leader == nullptr) return;
  const NodeInfo info = leader->raw->info();
  const std::vector<uint64_t>& voters = info.voters;
  const std::vector<uint64_t>& learners = info.learners;
  std::vector<uint64_t> outside;
  for (auto& n : nodes_) {
    const bool member = std::binary_search(voters.begin(), voters.end(), n->id) ||
                        std::binary_search(learners.begin(), learners.end(), n->id);
    if (!member) outside.push_back(n->id);
  }
  // Keep at least nodes-1 voters so a majority can usually be found.
  const bool can_remove = voters.size() > static_cast<size_t>(std::max(1, opts_.nodes - 1));
  ConfChange cc;
  if (!learners.empty() && rng_.Chance(600)) {
    // Promote a learner, or (less often) drop it.
    const uint64_t learner = learners[rng_.Uniform(learners.size())];
    cc = {rng_.Chance(800) ? ConfChangeType::kAddVoter : ConfChangeType::kRemoveVoter, learner, ""};
  } else if (can_remove && (outside.empty() || rng_.Chance(500))) {
    cc = {ConfChangeType::kRemoveVoter, voters[rng_.Uniform(voters.size())], ""};
  } else if (!outside.empty()) {
    // Mostly the way a replica joins in production (a learner first), now
    // and then straight in as a voter.
    cc = {rng_.Chance(750) ? ConfChangeType::kAddLearner : ConfChangeType::kAddVoter,
          outside[rng_.Uniform(outside.size())], ""};
  } else {
    return;
  }
  auto r = leader->raw->ProposeConfChange(cc);
  Trace('M', leader->id, cc.node_id, static_cast<uint64_t>(cc.type));
  if (r.ok()) ++stats_.conf_changes;
}

void SimCluster::TransferLeadership() {
  Node* leader = Leader();
  if (leader == nullptr) return;
  const std::vector<uint64_t> voters = leader->raw->info().voters;
  const uint64_t to = voters[rng_.Uniform(voters.size())];
  Status s = leader->raw->TransferLeadership(to);
  Trace('L', leader->id, to);
  if (s.ok() && to != leader->id) ++stats_.transfers;
}

// --- Liveness ----------------------------------------------------------------

Status SimCluster::Settle() {
  for (int round = 0; round < 100000; ++round) {
    bool moved = false;
    while (auto m = net_.TakeDeliverable(now_)) {
      Node& to = *nodes_[m->to - 1];
      if (!to.up()) continue;
      Trace('D', m->to, 0, 0, &*m);
      ++stats_.delivered;
      GPOOL_RETURN_IF_ERROR(StepHonest(to, *m));
      GPOOL_RETURN_IF_ERROR(CheckAll());
      moved = true;
    }
    for (auto& n : nodes_) {
      while (n->up() && n->raw->HasReady()) {
        GPOOL_RETURN_IF_ERROR(HandleReady(*n));
        GPOOL_RETURN_IF_ERROR(CheckAll());
        moved = true;
      }
    }
    if (!moved) return Status::Ok();
  }
  return Status::Internal("liveness: the healed cluster never went quiet");
}

Status SimCluster::LivenessPhase() {
  Trace('H', 0, 1);
  net_.Heal();
  net_.set_faults({.in_order = true});
  for (auto& n : nodes_) {
    if (!n->up()) GPOOL_RETURN_IF_ERROR(Restart(*n));
  }
  GPOOL_RETURN_IF_ERROR(Settle());
  uint64_t stable_leader = 0, stable_term = 0;
  int stable_ticks = 0;
  std::vector<std::pair<uint64_t, uint64_t>> proposals;  // (index, hash of the entry data)
  for (int t = 0; t < opts_.liveness_ticks; ++t) {
    GPOOL_RETURN_IF_ERROR(TickAll());
    GPOOL_RETURN_IF_ERROR(CheckAll());
    GPOOL_RETURN_IF_ERROR(Settle());
    // A stable leader: a voter in its own configuration with no change
    // pending and an entry of its term committed, followed by every live
    // voter, for a few ticks running.
    Node* leader = Leader();
    bool usable = false;
    if (leader != nullptr) {
      const RaftLog& log = leader->raw->log();
      const HardState hs = leader->raw->hard_state();
      usable = log.Term(hs.commit) == hs.term && log.conf().Latest().Contains(leader->id) &&
               log.conf().LatestIndex() <= hs.commit;
      for (uint64_t v : log.conf().Latest().voters) {
        const Node& voter = *nodes_[v - 1];
        usable = usable && voter.up() && voter.raw->hard_state().term == hs.term &&
                 voter.raw->soft_state().lead == leader->id;
      }
      if (usable && leader->id == stable_leader && hs.term == stable_term) {
        ++stable_ticks;
      } else {
        stable_leader = usable ? leader->id : 0;
        stable_term = hs.term;
        stable_ticks = 0;
      }
    }
    if (usable && stable_ticks >= 3 && proposals.size() < static_cast<size_t>(opts_.healed_proposals)) {
      const std::string data = "healed-" + Id(proposals.size());
      uint64_t index = 0;
      GPOOL_RETURN_IF_ERROR(Propose(*leader, data, &index));
      if (index != 0) proposals.push_back({index, HashBytes(EncodeNormal(data))});
      GPOOL_RETURN_IF_ERROR(Settle());
    }
    if (proposals.size() < static_cast<size_t>(opts_.healed_proposals)) continue;
    bool done = true;
    uint64_t last = 0;
    for (const auto& [index, hash] : proposals) {
      done = done && checker_.IsCommitted(index, hash);
      last = std::max(last, index);
    }
    if (leader != nullptr) {
      for (uint64_t v : leader->raw->log().conf().Latest().voters) {
        done = done && nodes_[v - 1]->applied >= last;
      }
    }
    if (done) return Status::Ok();
  }
  size_t committed = 0;
  for (const auto& [index, hash] : proposals) committed += checker_.IsCommitted(index, hash);
  return Status::Internal("liveness: after " + Id(static_cast<uint64_t>(opts_.liveness_ticks)) +
                          " healed ticks, " + (stable_leader == 0 ? "no stable leader" : "leader " + Id(stable_leader)) +
                          "; " + Id(proposals.size()) + " proposals accepted, " + Id(committed) + " committed");
}

// --- Helpers -------------------------------------------------------------------

SimCluster::Node* SimCluster::RandomNode() { return nodes_[rng_.Uniform(nodes_.size())].get(); }

SimCluster::Node* SimCluster::RandomLiveNode() {
  const size_t start = rng_.Uniform(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node* n = nodes_[(start + i) % nodes_.size()].get();
    if (n->up()) return n;
  }
  return nullptr;
}

SimCluster::Node* SimCluster::Leader() {
  Node* best = nullptr;
  uint64_t best_term = 0;
  for (auto& n : nodes_) {
    if (!n->up() || n->raw->soft_state().role != Role::kLeader) continue;
    const uint64_t term = n->raw->hard_state().term;
    if (best == nullptr || term > best_term) {
      best = n.get();
      best_term = term;
    }
  }
  return best;
}

void SimCluster::Trace(char kind, uint64_t node, uint64_t a, uint64_t b, const Message* m) {
  Event e{step_, now_, kind, node, a, b, m != nullptr, {}};
  if (m != nullptr) {
    e.message = *m;
    e.message.entries.clear();
    e.message.snapshot.data.clear();
    e.a = m->entries.size();
  }
  if (opts_.keep_full_trace || trace_.size() < 64) {
    trace_.push_back(std::move(e));
  } else {
    trace_[trace_next_] = std::move(e);
    trace_next_ = (trace_next_ + 1) % trace_.size();
  }
}

std::string SimCluster::FormatEvent(const Event& e) const {
  std::ostringstream os;
  os << "step " << e.step << " tick " << e.tick << ": ";
  switch (e.kind) {
    case 'D': os << "deliver " << e.message.DebugString(); break;
    case 'x': os << "drop (node down) " << e.message.DebugString(); break;
    case 'R': os << "node " << e.node << " ready: persist " << e.a << ", apply " << e.b; break;
    case 'T': os << "tick all"; break;
    case 't': os << "tick node " << e.node; break;
    case 'P': os << "propose at " << e.node << " -> " << (e.a ? "index " + Id(e.a) : "refused"); break;
    case 'Q': os << "read r" << e.a << " at " << e.node << (e.b == 0 ? "" : " refused"); break;
    case 'C': os << "crash node " << e.node; break;
    case 'S': os << "restart node " << e.node << " (snapshot " << e.a << ", commit " << e.b << ")"; break;
    case 'X': os << "partition, group 1 mask=" << e.a; break;
    case 'H': os << (e.a ? "heal for liveness phase" : "heal"); break;
    case 'K': os << "compact node " << e.node << " at " << e.a << (e.b ? "" : " (refused)"); break;
    case 'M':
      os << "leader " << e.node << " proposes " << ConfChangeTypeName(static_cast<ConfChangeType>(e.b)) << " "
         << e.a;
      break;
    case 'L': os << "leader " << e.node << " transfers to " << e.a; break;
    case 'F': os << "rogue steps into node " << e.node << " " << e.message.DebugString() << (e.a ? " (refused)" : ""); break;
    case 'r': os << "rogue replays " << e.message.DebugString(); break;
    default: os << "?"; break;
  }
  return os.str();
}

std::string SimCluster::Report(const Status& failure, size_t trace_events) const {
  std::ostringstream os;
  os << (failure.ok() ? "PASSED" : "FAILED") << " seed=" << opts_.seed << " nodes=" << opts_.nodes << " steps=" << opts_.steps << " at step " << step_
     << " tick " << now_ << ": " << failure.message() << "\n";
  os << "  replay: gpool-raft-sim --start " << opts_.seed << " --seeds 1 --nodes " << opts_.nodes << " --steps "
     << opts_.steps << " --trace\n";
  // The ring buffer's oldest event sits at trace_next_ once it has wrapped.
  std::vector<const Event*> ordered;
  for (size_t i = 0; i < trace_.size(); ++i) {
    const size_t at = (opts_.keep_full_trace || trace_.size() < 64) ? i : (trace_next_ + i) % trace_.size();
    ordered.push_back(&trace_[at]);
  }
  const size_t from = ordered.size() > trace_events ? ordered.size() - trace_events : 0;
  os << "  last " << (ordered.size() - from) << " events:\n";
  for (size_t i = from; i < ordered.size(); ++i) os << "    " << FormatEvent(*ordered[i]) << "\n";
  os << "  nodes:\n";
  for (const auto& n : nodes_) {
    if (n->up()) {
      os << "    " << n->raw->info().ToString() << " sm_applied=" << n->applied << "\n";
    } else {
      os << "    node " << n->id << " DOWN durable term=" << n->durable.hard_state().term
         << " commit=" << n->durable.hard_state().commit << " last=" << n->durable.last_index() << "\n";
    }
  }
  return os.str();
}

}  // namespace gpool::raft::sim
