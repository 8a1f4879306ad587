// Converting a UFM-style fabric export into a topology file
// (client/topology_file.h), for `gpool topology convert`.
//
// Input: one JSON object holding the two lists that NVIDIA UFM's REST API
// returns from GET /ufmRest/resources/systems and GET /ufmRest/resources/links:
//
//   {"systems": [{"guid": "0x98039b0300a1b2c3", "system_name": "leaf-1", "type": "switch"}, ...],
//    "links":   [{"source_guid": "98039b0300a1b2c3", "destination_guid": "...", ...}, ...]}
//
// Fields read (all others, and other top-level keys, are ignored: exports
// carry many):
//   systems[i].guid          required, string; matched case-insensitively,
//                            "0x" optional. system_guid, when present, is a
//                            second GUID a link may name the system by.
//   systems[i].type          required: "switch"; "host" or "server" (a
//                            node); anything else (gateway, router) is left
//                            out, with its links.
//   systems[i].system_name   a host's node name; when empty, the node
//                            description of one of its link ends is used.
//                            Either way only the first word counts, cut at
//                            ':' ("gpu-001 HCA-1:1" -> "gpu-001"), and it
//                            must be a valid node name. For a switch, the
//                            label value (SanitizeSwitchName); when empty,
//                            "switch-<guid>".
//   links[i].source_guid, links[i].destination_guid   required, strings
//   links[i].source_port_node_description,
//   links[i].destination_port_node_description        optional (host names)
// A link naming a GUID no system has is an error; one between two hosts, or
// from a switch to itself, is ignored.
//
// Tiers: a switch linked to a host is tier 1; a switch linked to a tier-k
// switch and to no lower one is tier k+1 (breadth first from the hosts).
// Switches that reach no host are left out. A switch's parent is the
// neighbouring switch one tier up with the most links to it, then the
// smallest name; a host's leaf is the tier-1 switch with the most links to
// it, then the smallest name (rail-optimised fabrics link a host to a leaf
// per rail; the labels can name one). Each such choice is reported in
// `notes`, which the CLI writes as comments.
//
// Errors are InvalidArgument, prefixed with `source`, and name the field:
// "ufm.json: links[3].destination_guid: no system has GUID 0x...".
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "client/topology_file.h"
#include "protocol/base/status.h"

namespace gpool {

struct UfmConversion {
  Topology topology;               // accepted by ParseTopologyFile
  std::vector<std::string> notes;  // one line each: choices made, things left out
};

Result<UfmConversion> ConvertUfmExport(std::string_view json_text, std::string_view source = {});

// A switch name as a label value: every run of characters outside
// [A-Za-z0-9._-] becomes one '-', and '-' is trimmed from both ends
// ("MF0;leaf-01:MQM8700/U1" -> "MF0-leaf-01-MQM8700-U1"). A name longer
// than 63 keeps its first 54 characters and gets "-" and 8 hex digits of a
// hash of the whole name, so long names that share a prefix stay apart.
// "" when nothing is left.
std::string SanitizeSwitchName(std::string_view raw);

// A node name from a UFM node description: its first word, cut at ':'
// ("gpu-001 HCA-1" -> "gpu-001", "gpu-001:1" -> "gpu-001").
std::string HostNameFromDescription(std::string_view description);

}  // namespace gpool
