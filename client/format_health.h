// Output of the gpool CLI for node health, restarts and the event stream
// (the rest is format.h). Pure functions of reply structs, like format.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/event.h"
#include "protocol/health.h"
#include "protocol/messages_client.h"


namespace gpool {

// The HEALTH cell of `gpool nodes`: "ok", or the worst severity and what it
// is about ("fatal: xid 79 gpu/0"), with "+N" for further conditions.
std::string HealthCell(const std::vector<HealthCondition>& conditions);
// `gpool node show`'s conditions: one row per condition (severity, kind,
// device, count, first and last seen, message), or "none".
std::string FormatConditions(const std::vector<HealthCondition>& conditions, int64_t now_ms);
// "1 of 3 used (on-node-loss); last: node n1 was lost", or "on-node-loss, up to 3".
std::string RestartText(const JobSummary& summary, const RestartSpec& restart);
// SEQ TIME KIND NODE JOB REASON MESSAGE; "No events." when empty.
std::string FormatEventsTable(const std::vector<ClusterEvent>& events, int64_t now_ms);

}  // namespace gpool
