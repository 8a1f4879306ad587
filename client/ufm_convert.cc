#include "client/ufm_convert.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "client/yaml_fields.h"
#include "protocol/base/text.h"
#include "protocol/validate.h"

namespace gpool {
namespace {

using Json = nlohmann::json;


enum class Kind { kSwitch, kHost, kOther };

struct System {
  std::string guid;  // normalized
  Kind kind = Kind::kOther;
  std::string raw_name;  // system_name as given
  std::string name;      // label value (switch) or node name (host)
  std::string path;      // "systems[3]", for errors
  // Neighbouring systems by index, with how many links join them.
  std::map<size_t, uint32_t> links;
  uint32_t tier = 0;  // switches: 0 until reached from a host
};

// "0x98039B03..." and "98039b03..." are the same GUID.
std::string NormalizeGuid(std::string_view guid) {
  std::string out = AsciiLower(guid);
  if (out.rfind("0x", 0) == 0) out.erase(0, 2);
  return out;
}

std::string Describe(const Json& value) {
  if (value.is_string()) return "'" + value.get<std::string>() + "'";
  if (value.is_array()) return "a list";
  if (value.is_object()) return "an object";
  if (value.is_null()) return "null";
  return value.dump();
}

// A string member; "" when it is missing or null and not required.
Result<std::string> StringField(const Json& object, const std::string& path, const char* key, bool required) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (required) return yaml_fields::FieldError(path + "." + key, "required");
    return std::string();
  }
  // GUIDs above 2^53 do not survive as JSON numbers, so only strings are taken.
  if (!it->is_string()) return yaml_fields::FieldError(path + "." + key, "expected a string, got " + Describe(*it));
  return it->get<std::string>();
}

uint32_t Fnv1a(std::string_view text) {
  uint32_t hash = 2166136261u;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 16777619u;
  }
  return hash;
}

std::string Hex8(uint32_t value) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(8, '0');
  for (int i = 7; i >= 0; --i, value >>= 4) out[static_cast<size_t>(i)] = kDigits[value & 0xf];
  return out;
}

std::string TrimDashes(std::string s) {
  while (!s.empty() && s.back() == '-') s.pop_back();
  const size_t start = s.find_first_not_of('-');
  return start == std::string::npos ? std::string() : s.substr(start);
}

Status CheckNodeName(const std::string& path, const std::string& name) {
  if (name.empty()) return yaml_fields::FieldError(path, "no node name (system_name is empty and no link names the host)");
  if (name.size() > kMaxNodeNameLength) return yaml_fields::FieldError(path, "'" + name + "' is longer than 253 characters");
  for (char c : name) {
    if (!IsNameChar(c)) {
      return yaml_fields::FieldError(path, "'" + name + "' is not a valid node name (letters, digits, '.', '_' and '-')");
    }
  }
  return Status::Ok();
}

// "leaf-3 (2 links), leaf-4 (1 link)".
std::string CountList(const std::vector<std::pair<std::string, uint32_t>>& counts) {
  std::string out;
  for (const auto& [name, n] : counts) {
    out += (out.empty() ? "" : ", ") + name + " (" + std::to_string(n) + (n == 1 ? " link)" : " links)");
  }
  return out;
}

// The neighbour among `candidates` (index -> links) with the most links, then
// the smallest name; a note when there was a choice.
size_t Choose(const std::vector<System>& systems, const std::map<size_t, uint32_t>& candidates,
              const std::string& who, const std::string& what, std::vector<std::string>& notes) {
  std::vector<std::pair<std::string, uint32_t>> counts;
  std::map<std::string, size_t> by_name;
  for (const auto& [index, n] : candidates) {
    counts.emplace_back(systems[index].name, n);
    by_name[systems[index].name] = index;
  }
  std::sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (counts.size() > 1) {
    notes.push_back(who + " is linked to several " + what + ": " + CountList(counts) + "; chose " +
                    counts[0].first + " (most links, then name)");
  }
  return by_name.at(counts[0].first);
}

Result<std::vector<System>> ReadSystems(const Json& list, std::map<std::string, size_t>& by_guid,
                                        std::vector<std::string>& notes) {
  std::vector<System> systems;
  std::map<std::string, size_t> others;  // type -> count, for a note
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = "systems[" + std::to_string(i) + "]";
    const Json& item = list[i];
    if (!item.is_object()) return yaml_fields::FieldError(path, "expected an object, got " + Describe(item));
    System sys;
    sys.path = path;
    GPOOL_ASSIGN_OR_RETURN(std::string guid, StringField(item, path, "guid", true));
    sys.guid = NormalizeGuid(guid);
    if (sys.guid.empty()) return yaml_fields::FieldError(path + ".guid", "must not be empty");
    GPOOL_ASSIGN_OR_RETURN(std::string type, StringField(item, path, "type", true));
    GPOOL_ASSIGN_OR_RETURN(sys.raw_name, StringField(item, path, "system_name", false));
    GPOOL_ASSIGN_OR_RETURN(std::string system_guid, StringField(item, path, "system_guid", false));
    type = AsciiLower(type);
    if (type == "switch") {
      sys.kind = Kind::kSwitch;
    } else if (type == "host" || type == "server") {
      sys.kind = Kind::kHost;
    } else {
      ++others[type.empty() ? "(empty)" : type];
    }
    auto [it, inserted] = by_guid.emplace(sys.guid, systems.size());
    if (!inserted && systems[it->second].guid == sys.guid) {
      return yaml_fields::FieldError(path + ".guid", "GUID " + guid + " is already " + systems[it->second].path + "'s");
    }
    if (!inserted) it->second = systems.size();  // a guid wins over another system's system_guid alias
    // system_guid is only an alias: it never takes a GUID from another system.
    if (!system_guid.empty()) by_guid.emplace(NormalizeGuid(system_guid), systems.size());
    systems.push_back(std::move(sys));
  }
  for (const auto& [type, n] : others) {
    notes.push_back("left out " + std::to_string(n) + " system" + (n == 1 ? "" : "s") + " of type " + type +
                    " (only switches and hosts go in the tree)");
  }
  return systems;
}

Status ReadLinks(const Json& list, const std::map<std::string, size_t>& by_guid, std::vector<System>& systems) {
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = "links[" + std::to_string(i) + "]";
    const Json& item = list[i];
    if (!item.is_object()) return yaml_fields::FieldError(path, "expected an object, got " + Describe(item));
    size_t ends[2];
    std::string descriptions[2];
    const char* guid_keys[2] = {"source_guid", "destination_guid"};
    const char* description_keys[2] = {"source_port_node_description", "destination_port_node_description"};
    for (int e = 0; e < 2; ++e) {
      GPOOL_ASSIGN_OR_RETURN(std::string guid, StringField(item, path, guid_keys[e], true));
      auto it = by_guid.find(NormalizeGuid(guid));
      if (it == by_guid.end()) return yaml_fields::FieldError(path + "." + guid_keys[e], "no system has GUID " + guid);
      ends[e] = it->second;
      GPOOL_ASSIGN_OR_RETURN(descriptions[e], StringField(item, path, description_keys[e], false));
    }
    System& a = systems[ends[0]];
    System& b = systems[ends[1]];
    // A host's name may only be in its links.
    for (int e = 0; e < 2; ++e) {
      System& end = systems[ends[e]];
      if (end.kind == Kind::kHost && end.raw_name.empty() && end.name.empty()) {
        end.name = HostNameFromDescription(descriptions[e]);
      }
    }
    if (a.kind == Kind::kOther || b.kind == Kind::kOther || ends[0] == ends[1]) continue;
    if (a.kind == Kind::kHost && b.kind == Kind::kHost) continue;
    ++a.links[ends[1]];
    ++b.links[ends[0]];
  }
  return Status::Ok();
}

// Switch names, made unique: when two switches sanitize to the same name,
// each of them gets its GUID appended, so neither depends on input order.
void NameSwitches(std::vector<System>& systems) {
  std::map<std::string, std::vector<size_t>> by_name;
  for (size_t i = 0; i < systems.size(); ++i) {
    System& sys = systems[i];
    if (sys.kind != Kind::kSwitch) continue;
    sys.name = SanitizeSwitchName(sys.raw_name);
    if (sys.name.empty()) sys.name = SanitizeSwitchName("switch-" + sys.guid);
    by_name[sys.name].push_back(i);
  }
  for (auto& [name, indices] : by_name) {
    if (indices.size() < 2) continue;
    for (size_t i : indices) {
      std::string suffix = "-";
      suffix += SanitizeSwitchName(systems[i].guid);
      std::string base = name.substr(0, kMaxLabelValueLength - std::min(suffix.size(), kMaxLabelValueLength));
      systems[i].name = SanitizeSwitchName(TrimDashes(base) + suffix);
    }
  }
}

// Breadth first from the hosts: tier 1 next to a host, tier k+1 next to tier k.
Status AssignTiers(std::vector<System>& systems) {
  std::deque<size_t> queue;
  for (size_t i = 0; i < systems.size(); ++i) {
    if (systems[i].kind != Kind::kSwitch) continue;
    const bool by_host = std::any_of(systems[i].links.begin(), systems[i].links.end(),
                                     [&](const auto& link) { return systems[link.first].kind == Kind::kHost; });
    if (by_host) {
      systems[i].tier = 1;
      queue.push_back(i);
    }
  }
  while (!queue.empty()) {
    const size_t at = queue.front();
    queue.pop_front();
    for (const auto& [next, n] : systems[at].links) {
      System& neighbour = systems[next];
      if (neighbour.kind != Kind::kSwitch || neighbour.tier != 0) continue;
      neighbour.tier = systems[at].tier + 1;
      if (neighbour.tier > kMaxTopologyTier) {
        return yaml_fields::FieldError(neighbour.path, "switch " + neighbour.name + " would be tier " +
                                              std::to_string(neighbour.tier) + "; gpool labels at most " +
                                              std::to_string(kMaxTopologyTier) + " tiers");
      }
      queue.push_back(next);
    }
  }
  return Status::Ok();
}

Result<UfmConversion> Convert(const Json& root) {
  if (!root.is_object()) {
    return yaml_fields::FieldError("export", "expected an object with 'systems' and 'links' lists, got " + Describe(root));
  }
  for (const char* key : {"systems", "links"}) {
    auto it = root.find(key);
    if (it == root.end()) return yaml_fields::FieldError(key, "required");
    if (!it->is_array()) return yaml_fields::FieldError(key, "expected a list, got " + Describe(*it));
  }
  UfmConversion result;
  std::map<std::string, size_t> by_guid;
  GPOOL_ASSIGN_OR_RETURN(std::vector<System> systems, ReadSystems(root["systems"], by_guid, result.notes));
  for (System& sys : systems) {
    if (sys.kind == Kind::kHost && !sys.raw_name.empty()) sys.name = HostNameFromDescription(sys.raw_name);
  }
  GPOOL_RETURN_IF_ERROR(ReadLinks(root["links"], by_guid, systems));
  NameSwitches(systems);
  GPOOL_RETURN_IF_ERROR(AssignTiers(systems));

  // Switches in the tree, by name (names are unique now), each with its parent.
  std::map<std::string, size_t> switches;
  std::vector<std::string> unreached;
  for (size_t i = 0; i < systems.size(); ++i) {
    if (systems[i].kind != Kind::kSwitch) continue;
    if (systems[i].tier == 0) {
      unreached.push_back(systems[i].name);
    } else {
      switches[systems[i].name] = i;
    }
  }
  std::map<std::string, TopologySwitch> out;
  for (const auto& [name, i] : switches) {
    TopologySwitch sw;
    sw.name = name;
    sw.tier = systems[i].tier;
    std::map<size_t, uint32_t> up;
    for (const auto& [next, n] : systems[i].links) {
      if (systems[next].kind == Kind::kSwitch && systems[next].tier == sw.tier + 1) up[next] = n;
    }
    if (!up.empty()) {
      sw.parent = systems[Choose(systems, up, name, "tier-" + std::to_string(sw.tier + 1) + " switches",
                                 result.notes)].name;
    }
    out[name] = std::move(sw);
  }

  // Hosts, by name, each under one leaf.
  std::map<std::string, size_t> hosts;
  std::vector<std::string> unlinked;
  for (size_t i = 0; i < systems.size(); ++i) {
    const System& host = systems[i];
    if (host.kind != Kind::kHost) continue;
    GPOOL_RETURN_IF_ERROR(CheckNodeName(host.path + ".system_name", host.name));
    auto [it, inserted] = hosts.emplace(host.name, i);
    if (!inserted) {
      return yaml_fields::FieldError(host.path + ".system_name",
                        "node name " + host.name + " is already " + systems[it->second].path + "'s");
    }
  }
  for (const auto& [name, i] : hosts) {
    std::map<size_t, uint32_t> leaves;
    for (const auto& [next, n] : systems[i].links) {
      if (systems[next].kind == Kind::kSwitch) leaves[next] = n;
    }
    if (leaves.empty()) {
      unlinked.push_back(name);
      continue;
    }
    const size_t leaf = Choose(systems, leaves, name, "leaves", result.notes);
    out[systems[leaf].name].nodes.push_back(name);
  }
  // In a full mesh every leaf picks the same spine; the others stay in the
  // file, childless, so the file still lists every switch.
  std::set<std::string> parents;
  for (const auto& [name, sw] : out) parents.insert(sw.parent);
  std::string childless;
  for (const auto& [name, sw] : out) {
    if (sw.tier > 1 && !parents.count(name)) childless += (childless.empty() ? "" : ", ") + name;
  }
  if (!childless.empty()) {
    result.notes.push_back("no switch chose these as parent, so no node is labelled with them: " + childless);
  }
  if (!unreached.empty()) {
    std::sort(unreached.begin(), unreached.end());
    std::string list;
    for (const auto& name : unreached) list += (list.empty() ? "" : ", ") + name;
    result.notes.push_back("left out switches that reach no host: " + list);
  }
  if (!unlinked.empty()) {
    std::string list;
    for (const auto& name : unlinked) list += (list.empty() ? "" : ", ") + name;
    result.notes.push_back("left out hosts linked to no switch: " + list);
  }
  if (out.empty()) return yaml_fields::FieldError("export", "no switch is linked to a host; there is no tree to write");
  for (auto& [name, sw] : out) result.topology.switches.push_back(std::move(sw));
  return result;
}

}  // namespace

std::string SanitizeSwitchName(std::string_view raw) {
  std::string out;
  bool in_bad_run = false;
  for (char c : raw) {
    if (IsNameChar(c)) {
      out += c;
      in_bad_run = false;
    } else if (!in_bad_run) {
      out += '-';
      in_bad_run = true;
    }
  }
  out = TrimDashes(std::move(out));
  if (out.size() > kMaxLabelValueLength) {
    out = TrimDashes(out.substr(0, kMaxLabelValueLength - 9)) + "-" + Hex8(Fnv1a(raw));
  }
  return out;
}

std::string HostNameFromDescription(std::string_view description) {
  const size_t start = description.find_first_not_of(" \t");
  if (start == std::string_view::npos) return "";
  description.remove_prefix(start);
  return std::string(description.substr(0, description.find_first_of(" \t:")));
}

Result<UfmConversion> ConvertUfmExport(std::string_view json_text, std::string_view source) {
  const std::string prefix(source);
  auto with_source = [&](const Status& s) { return prefix.empty() ? s : s.WithContext(prefix); };
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::exception& e) {
    // Not only parse_error: a number too large for a double ("1e999") is
    // out_of_range, and it used to escape and abort the CLI (found by fuzz/ufm).
    // what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ..."; the tag means nothing here.
    std::string message = e.what();
    if (size_t tag_end = message.find("] "); message.rfind("[json.exception", 0) == 0 && tag_end != std::string::npos) {
      message.erase(0, tag_end + 2);
    }
    return with_source(Status::InvalidArgument("not valid JSON: " + message));
  }
  auto result = Convert(root);
  if (!result.ok()) return with_source(result.status());
  // What is written must be a file `topology apply` accepts.
  if (auto reread = ParseTopologyFile(FormatTopologyFile(result->topology)); !reread.ok()) {
    return with_source(Status::Internal("the converted tree is not a valid topology file: " +
                                        reread.status().message()));
  }
  return result;
}

}  // namespace gpool
