#include "control/watch/watch_hub.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include <spdlog/spdlog.h>

#include "control/frames.h"
#include "control/views.h"
#include "control/watch/watch_frames.h"
#include "protocol/event.h"
#include "protocol/messages_watch.h"

namespace gpool::control {

namespace {

constexpr size_t kMaxKeyBytes = 256;
constexpr int64_t kExpiryCheckMs = 1000;

// Whom a watch counts against: the user, or the job whose task's exec key
// opened it ("job-<id>": all its tasks together, as when they shared one
// key), or the kind of caller without a name.
std::string CallerOf(const Actor& actor) {
  if (actor.kind == Actor::Kind::kJob) return "job-" + std::to_string(actor.job);
  return actor.name.empty() ? "anonymous" : actor.name;
}

// Callers that Authorize treats alike for reading jobs (control/authz.cc
// reads the actor's kind, user record and job): a committed user by name,
// since MayRead looks its record up afresh, any other by its record.
std::string WatchAudienceOf(const Actor& actor, bool state_user) {
  std::string audience = std::to_string(static_cast<int>(actor.kind)) + ":" + std::to_string(actor.job) + ":";
  if (state_user) return audience + "user:" + actor.name;
  return audience + "record:" + std::to_string(reinterpret_cast<uintptr_t>(actor.user));
}

}  // namespace

WatchHub::WatchHub(WatchHubOptions options, const state::ClusterState& state, const ChangeFeed& feed,
                   Outbox& outbox, Proposer& proposer)
    : options_(options), state_(state), feed_(feed), outbox_(outbox), proposer_(proposer) {}

Status WatchHub::Parse(const Watch& request, Entry& entry) const {
  if (request.key.size() > kMaxKeyBytes) {
    return Status::InvalidArgument("watch key: at most " + std::to_string(kMaxKeyBytes) + " bytes");
  }
  const std::string& key = request.key;
  if (request.topic == "job") {
    entry.topic = Topic::kJob;
    const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), entry.job);
    if (key.empty() || error != std::errc() || end != key.data() + key.size() || entry.job == 0) {
      return Status::InvalidArgument("watch key: a job id (a positive decimal number) for topic job, got '" +
                                     key.substr(0, 40) + "'");
    }
  } else if (request.topic == "jobs") {
    entry.topic = Topic::kJobs;
    if (!key.empty()) {
      const size_t colon = key.find(':');
      entry.filter_kind = colon == std::string::npos ? key : key.substr(0, colon);
      entry.filter_value = colon == std::string::npos ? "" : key.substr(colon + 1);
      if ((entry.filter_kind != "user" && entry.filter_kind != "queue") || entry.filter_value.empty()) {
        return Status::InvalidArgument("watch key: \"\", \"user:NAME\" or \"queue:NAME\" for topic jobs, got '" +
                                       key.substr(0, 40) + "'");
      }
    }
  } else if (request.topic == "nodes") {
    entry.topic = Topic::kNodes;
    entry.filter_value = key;
  } else if (request.topic == "events") {
    entry.topic = Topic::kEvents;
    if (!key.empty()) return Status::InvalidArgument("watch key: must be empty for topic events");
  } else {
    return Status::InvalidArgument("watch topic: one of job, jobs, nodes, events; got '" +
                                   request.topic.substr(0, 40) + "'");
  }
  return Status::Ok();
}

bool WatchHub::MayRead(Entry& entry, const std::string& user, const std::string& queue, uint64_t job) const {
  // The user record may have changed since the watch was opened: its
  // grants are read as committed now (the --admin-key's user is the
  // gateway's, not a record, and stays).
  if (entry.state_user) entry.actor.user = state_.FindUser(entry.actor.name);
  return Authorize(entry.actor, Permission::kReadJob, Target{user, queue, job}, state_).allowed;
}

bool WatchHub::Matches(Entry& entry, const FeedChange& change) const {
  switch (entry.topic) {
    case Topic::kJob:
      return change.job == entry.job;
    case Topic::kJobs:
      if (change.job == 0) return false;
      if (entry.filter_kind == "user" && change.user != entry.filter_value) return false;
      if (entry.filter_kind == "queue" && change.queue != entry.filter_value) return false;
      return MayRead(entry, change.user, change.queue, change.job);
    case Topic::kNodes:
      return !change.node.empty() && (entry.filter_value.empty() || change.node == entry.filter_value);
    case Topic::kEvents:
      return false;
  }
  return false;
}

WatchItems WatchHub::Snapshot(Entry& entry) const {
  WatchItems items;
  switch (entry.topic) {
    case Topic::kJob:
      if (const state::JobRecord* job = state_.FindJob(JobId(entry.job))) items.jobs.push_back(WatchJobSummary(*job));
      break;
    case Topic::kJobs:
      // The unfinished jobs, newest first, up to the cap.
      for (auto it = state_.jobs().rbegin(); it != state_.jobs().rend(); ++it) {
        if (items.jobs.size() >= options_.max_reset_jobs) break;
        const state::JobRecord& job = it->second;
        if (IsTerminal(job.state)) continue;
        if (entry.filter_kind == "user" && job.spec.user != entry.filter_value) continue;
        if (entry.filter_kind == "queue" && job.spec.queue != entry.filter_value) continue;
        if (!MayRead(entry, job.spec.user, job.spec.queue, it->first)) continue;
        items.jobs.push_back(WatchJobSummary(job));
      }
      break;
    case Topic::kNodes:
      for (const auto& [name, node] : state_.nodes()) {
        if (entry.filter_value.empty() || name == entry.filter_value) {
          items.nodes.push_back(WatchNodeSummary(state_, node));
        }
      }
      break;
    case Topic::kEvents: {
      const uint64_t last = state_.last_event_seq();
      items.events = state_.EventsAfter(last > options_.max_events ? last - options_.max_events : 0,
                                        options_.max_events);
      break;
    }
  }
  return items;
}

Result<WatchReply> WatchHub::Open(const std::string& peer, const Watch& request, const Actor& actor,
                                  int64_t now_ms) {
  Entry entry;
  entry.peer = peer;
  entry.actor = actor;
  entry.state_user = actor.kind == Actor::Kind::kUser && actor.user != nullptr &&
                     actor.user == state_.FindUser(actor.name);
  if (Status parsed = Parse(request, entry); !parsed.ok()) return parsed;
  if (entry.topic == Topic::kJob) {
    const state::JobRecord* job = state_.FindJob(JobId(entry.job));
    if (job == nullptr) return JobNotFound(state_, entry.job);
    if (!MayRead(entry, job->spec.user, job->spec.queue, entry.job)) {
      return Status::PermissionDenied("watching job " + std::to_string(entry.job) + " needs " +
                                      std::string(PermissionName(Permission::kReadJob)));
    }
  } else if (entry.topic != Topic::kJobs) {
    Decision decision = Authorize(actor, Permission::kReadCluster, {}, state_);
    if (!decision.allowed) return Status::PermissionDenied("watching " + request.topic + " needs " + decision.missing);
  }
  // Admins may use the whole hub; everyone else shares all but the
  // admins' reserve, and each caller at most max_per_user of it.
  const bool admin = Authorize(actor, Permission::kManageUsers, {}, state_).allowed;
  entry.owner = admin ? "" : CallerOf(actor);
  entry.audience = WatchAudienceOf(actor, entry.state_user);
  if (!admin) {
    const auto held = per_user_.find(entry.owner);
    if (held != per_user_.end() && held->second >= options_.max_per_user) {
      spdlog::info("watch refused user={} held={} limit={}", entry.owner, held->second, options_.max_per_user);
      return Status::ResourceExhausted(entry.owner + " holds " + std::to_string(held->second) +
                                       " watches, the most one user may (--max-watches-per-user " +
                                       std::to_string(options_.max_per_user) + "); close some (Unwatch)");
    }
    const size_t shared = options_.max_total > options_.admin_reserve ? options_.max_total - options_.admin_reserve : 0;
    if (non_admin_ >= shared) {
      return Status::ResourceExhausted("users other than admins hold " + std::to_string(non_admin_) +
                                       " watches, all the coordinator gives them (--max-watches " +
                                       std::to_string(options_.max_total) + " less the admins' reserve of " +
                                       std::to_string(options_.admin_reserve) + "); retry later");
    }
  }
  if (per_peer_[peer] >= options_.max_per_peer) {
    return Status::ResourceExhausted("this connection holds " + std::to_string(options_.max_per_peer) +
                                     " watches, the most one may; close some (Unwatch)");
  }
  if (watches_.size() >= options_.max_total) {
    return Status::ResourceExhausted("the coordinator holds " + std::to_string(options_.max_total) +
                                     " watches, the most it takes; retry later");
  }
  WatchReply reply;
  if (entry.topic == Topic::kEvents) {
    const uint64_t last = state_.last_event_seq();
    const uint64_t first_kept = state_.events().empty() ? last + 1 : state_.events().front().seq;
    reply.reset = !(request.after != 0 && request.after + 1 >= first_kept && request.after <= last &&
                    last - request.after <= options_.max_events);
    reply.items.events = reply.reset ? Snapshot(entry).events : state_.EventsAfter(request.after, options_.max_events);
    reply.position = last;
  } else {
    std::optional<std::vector<const FeedChange*>> since;
    if (request.after != 0) since = feed_.Since(request.after);
    reply.reset = !since.has_value() || since->size() > options_.max_replay;
    if (reply.reset) {
      reply.items = Snapshot(entry);
    } else {
      for (const FeedChange* change : *since) {
        if (!Matches(entry, *change)) continue;
        if (change->job != 0) reply.items.jobs.push_back(change->job_summary());
        if (!change->node.empty()) reply.items.nodes.push_back(change->node_summary());
      }
    }
    reply.position = feed_.position();
  }
  entry.position = reply.position;
  entry.id = next_id_++;
  entry.expires_ms = now_ms + options_.lease_ms;
  reply.watch_id = entry.id;
  ++per_peer_[peer];
  if (!entry.owner.empty()) {
    ++per_user_[entry.owner];
    ++non_admin_;
  }
  spdlog::debug("watch opened id={} topic={} key=\"{}\" after={} reset={} position={}", entry.id, request.topic,
                request.key, request.after, reply.reset, reply.position);
  const auto [placed, fresh] = watches_.emplace(entry.id, std::move(entry));
  Index(placed->second);
  return reply;
}

WatchRenewReply WatchHub::Renew(const std::string& peer, const WatchRenew& request, int64_t now_ms) {
  WatchRenewReply reply;
  for (uint64_t id : request.watch_ids) {
    auto it = watches_.find(id);
    if (it == watches_.end() || it->second.peer != peer) {
      reply.unknown.push_back(id);
      continue;
    }
    it->second.expires_ms = now_ms + options_.lease_ms;
  }
  return reply;
}

void WatchHub::Close(const std::string& peer, uint64_t watch_id) {
  auto it = watches_.find(watch_id);
  if (it != watches_.end() && it->second.peer == peer) Erase(it);
}

void WatchHub::Index(const Entry& entry) {
  Entry* held = &watches_.at(entry.id);
  switch (entry.topic) {
    case Topic::kJob:
      by_job_[entry.job].emplace(entry.id, held);
      break;
    case Topic::kJobs:
      if (entry.filter_kind == "user") {
        jobs_by_user_[entry.filter_value][entry.audience].emplace(entry.id, held);
      } else if (entry.filter_kind == "queue") {
        jobs_by_queue_[entry.filter_value][entry.audience].emplace(entry.id, held);
      } else {
        all_jobs_[entry.audience].emplace(entry.id, held);
      }
      break;
    case Topic::kNodes:
      if (entry.filter_value.empty()) {
        all_nodes_.emplace(entry.id, held);
      } else {
        nodes_by_name_[entry.filter_value].emplace(entry.id, held);
      }
      break;
    case Topic::kEvents:
      event_watches_.insert(entry.id);
      break;
  }
}

namespace {

// Erases watch `id` from the list under `key`, and the list when it empties.
template <typename Index>
bool WatchIndexDrop(Index& index, const typename Index::key_type& key, uint64_t id) {
  auto it = index.find(key);
  if (it == index.end()) return false;
  it->second.erase(id);
  if (!it->second.empty()) return false;
  index.erase(it);
  return true;
}

// The same for `jobs` lists kept by filter value, then audience.
template <typename Index>
void WatchIndexDropAudience(Index& index, const std::string& key, const std::string& audience, uint64_t id) {
  auto it = index.find(key);
  if (it == index.end()) return;
  if (WatchIndexDrop(it->second, audience, id) && it->second.empty()) index.erase(it);
}

}  // namespace

void WatchHub::Unindex(const Entry& entry) {
  switch (entry.topic) {
    case Topic::kJob:
      WatchIndexDrop(by_job_, entry.job, entry.id);
      break;
    case Topic::kJobs:
      if (entry.filter_kind == "user") {
        WatchIndexDropAudience(jobs_by_user_, entry.filter_value, entry.audience, entry.id);
      } else if (entry.filter_kind == "queue") {
        WatchIndexDropAudience(jobs_by_queue_, entry.filter_value, entry.audience, entry.id);
      } else {
        WatchIndexDrop(all_jobs_, entry.audience, entry.id);
      }
      break;
    case Topic::kNodes:
      if (entry.filter_value.empty()) {
        all_nodes_.erase(entry.id);
      } else {
        WatchIndexDrop(nodes_by_name_, entry.filter_value, entry.id);
      }
      break;
    case Topic::kEvents:
      event_watches_.erase(entry.id);
      break;
  }
}

void WatchHub::Erase(std::map<uint64_t, Entry>::iterator it) {
  const Entry& entry = it->second;
  Unindex(entry);
  if (auto peer = per_peer_.find(entry.peer); peer != per_peer_.end() && --peer->second == 0) per_peer_.erase(peer);
  if (auto user = per_user_.find(entry.owner); user != per_user_.end()) {
    --non_admin_;
    if (--user->second == 0) per_user_.erase(user);
  }
  watches_.erase(it);
}

void WatchHub::Push(Entry& entry, uint64_t position, const WatchUpdateEncoder& encoder,
                    std::string_view items_block) {
  entry.position = position;
  outbox_.ToClient(entry.peer, encoder.Frame(entry.id, ++entry.seq, position, items_block));
  ++pushes_;
}

void WatchHub::FanOut::Add(const WatchList& list, uint32_t change) {
  const auto [it, fresh] = at.try_emplace(&list, lists.size());
  if (fresh) lists.emplace_back(&list, std::vector<uint32_t>{});
  lists[it->second].second.push_back(change);
}

void WatchHub::MatchChange(const FeedChange& change, uint32_t at, FanOut& out) {
  if (change.job != 0) {
    if (auto it = by_job_.find(change.job); it != by_job_.end()) out.Add(it->second, at);
    // A list's watches share an audience: its first watch's caller answers
    // for all of them.
    auto readers = [&](const AudienceLists& lists) {
      for (const auto& [audience, list] : lists) {
        if (MayRead(*list.begin()->second, change.user, change.queue, change.job)) out.Add(list, at);
      }
    };
    readers(all_jobs_);
    if (auto it = jobs_by_user_.find(change.user); it != jobs_by_user_.end()) readers(it->second);
    if (auto it = jobs_by_queue_.find(change.queue); it != jobs_by_queue_.end()) readers(it->second);
  }
  if (!change.node.empty()) {
    if (!all_nodes_.empty()) out.Add(all_nodes_, at);
    if (auto it = nodes_by_name_.find(change.node); it != nodes_by_name_.end()) out.Add(it->second, at);
  }
}

void WatchHub::Publish(size_t appended) {
  if (watches_.empty() || appended == 0) return;
  const auto& history = feed_.history();
  appended = std::min(appended, history.size());
  const auto first = history.end() - static_cast<std::ptrdiff_t>(appended);
  FanOut fan_out;
  for (uint32_t at = 0; at < appended; ++at) MatchChange(first[at], at, fan_out);
  if (fan_out.lists.empty()) return;
  const uint64_t position = history.back().position;
  const WatchUpdateEncoder encoder(proposer_.epoch());
  // Lists that get the same changes get the same items block, encoded once
  // from the feed's encoded items.
  std::map<std::vector<uint32_t>, std::string> blocks;
  for (const auto& [list, changes] : fan_out.lists) {
    auto [block, fresh] = blocks.try_emplace(changes);
    if (fresh) {
      std::vector<std::string_view> jobs, nodes;
      for (uint32_t at : changes) {
        const FeedChange& change = first[at];
        if (change.job != 0) jobs.push_back(change.encoded());
        if (!change.node.empty()) nodes.push_back(change.encoded());
      }
      block->second = EncodeWatchItemsBlock(jobs, nodes);
      ++blocks_encoded_;
    }
    for (const auto& [id, entry] : *list) Push(*entry, position, encoder, block->second);
  }
}

void WatchHub::Tick(int64_t now_ms) {
  if (watches_.empty()) return;
  const uint64_t last = state_.last_event_seq();
  // Most event watches stand at the same seq: read the stream and encode
  // the items once per seq.
  struct EventsRead {
    uint64_t position = 0;  // the last event's seq
    std::string block;      // empty: no events
  };
  std::map<uint64_t, EventsRead> read;
  std::optional<WatchUpdateEncoder> encoder;
  for (uint64_t id : event_watches_) {
    Entry& entry = watches_.at(id);
    if (entry.position >= last) continue;
    auto [at, fresh] = read.try_emplace(entry.position);
    if (fresh) {
      const std::vector<ClusterEvent> events = state_.EventsAfter(entry.position, options_.max_events);
      if (!events.empty()) {
        at->second.position = events.back().seq;
        at->second.block = EncodeWatchItemsBlock({}, {}, events);
        ++blocks_encoded_;
      }
    }
    if (at->second.block.empty()) continue;
    if (!encoder) encoder.emplace(proposer_.epoch());
    Push(entry, at->second.position, *encoder, at->second.block);
  }
  if (now_ms < next_expiry_ms_) return;
  next_expiry_ms_ = now_ms + kExpiryCheckMs;
  for (auto it = watches_.begin(); it != watches_.end();) {
    auto next = std::next(it);
    if (it->second.expires_ms <= now_ms) {
      spdlog::debug("watch expired id={} peer_watches={}", it->first, per_peer_[it->second.peer]);
      Erase(it);
    }
    it = next;
  }
}

void WatchHub::DropAll() {
  if (!watches_.empty()) spdlog::info("watches dropped count={}", watches_.size());
  watches_.clear();
  by_job_.clear();
  all_jobs_.clear();
  jobs_by_user_.clear();
  jobs_by_queue_.clear();
  all_nodes_.clear();
  nodes_by_name_.clear();
  event_watches_.clear();
  per_peer_.clear();
  per_user_.clear();
  non_admin_ = 0;
}

size_t WatchHub::held_by(const std::string& caller) const {
  const auto it = per_user_.find(caller);
  return it == per_user_.end() ? 0 : it->second;
}

}  // namespace gpool::control
