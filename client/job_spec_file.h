// Job spec files: the YAML (or JSON) a user writes, turned into a JobSpec.
//
// Format (YAML; JSON with the same keys is accepted since yaml-cpp reads both):
//
//   name: train                 # required
//   queue: default              # optional, default "default"
//   priority: 5                 # optional integer, higher first within a class
//   priority_class: high        # optional: high, medium (default) or low
//   pool: public                # optional: public (default), pooled or exclusive
//   user: alice                 # optional; the CLI fills in $USER when unset
//   node_selector: {rack: r1}   # optional: nodes must carry every label
//   prefer_labels: {zone: a}    # optional: nodes carrying these score higher
//   tolerations: [maint, dedicated=ml]   # optional: taints it accepts, "key" or "key=value"
//   tasks:                      # one or more task groups
//     - name: worker            # optional; "task" (one group) or "task-<i>" (several)
//       replicas: 2             # optional, default 1
//       min_replicas: 1         # optional gang minimum, default 0 = all replicas
//       command: [python3, train.py]   # argv list, or one string run as sh -c STRING
//       env: {EPOCHS: "3"}      # optional map of strings
//       resources:              # all optional, default 0
//         gpus: 4               # whole GPUs
//         cpus: 0.5             # cores; fractions to 1/1000 ("0.5", "1.25") or "500m"
//         memory: 16Gi          # see topology/quantity.h
//         gpu_model: A100       # optional: every GPU must be this model
//
// The keys are the wire's field names (docs/protocol.md 6.1-6.3), except
// cpus and memory, which take units.
//
// Shorthand for a job with one task group: put `command`, `replicas`,
// `min_replicas`, `env` and `resources` directly under the job instead of `tasks` (the group is
// named "task"). Mixing the shorthand with `tasks` is an error.
//
// Strictness: an unknown key anywhere is an error naming it (with a "did you
// mean" hint for near misses), as is a duplicate key or a value of the wrong
// kind. Every error names the field path, prefixed with the source name when
// one is given:
//   "job.yaml: tasks[0].resources.gpus: expected a non-negative integer, got 'two'"
// After parsing, ValidateJobSpec (protocol/validate.h) runs and its errors get
// the same prefix. All errors are Status::InvalidArgument.
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/base/status.h"
#include "protocol/types.h"

namespace gpool {

// The largest spec file the CLI reads. A spec travels in one request, and
// the coordinator refuses specs over its --max-spec-bytes (1 MiB encoded by
// default) and requests over its --max-frame-bytes (4 MiB by default); a
// file this large could only be refused, after seconds of parsing, so it is
// refused unread.
inline constexpr size_t kMaxSpecFileBytes = 4u << 20;

// ResourceExhausted "SOURCE: the job spec is N bytes; spec files are limited
// to 4194304 bytes ..." when `bytes` is over kMaxSpecFileBytes.
Status CheckSpecFileSize(uint64_t bytes, std::string_view source);

// Parses and validates a job spec. `source` (a file name, "<stdin>") prefixes
// error messages; empty: no prefix. A document whose YAML aliases expand it
// past topology::YamlBudget is ResourceExhausted, refused before it is read.
Result<JobSpec> ParseJobSpec(std::string_view text, std::string_view source = {});

// Reads `path` and parses it; errors are prefixed with `path`. A missing or
// unreadable file is InvalidArgument too (it is the user's argument); one
// over kMaxSpecFileBytes is ResourceExhausted, refused before it is read.
Result<JobSpec> LoadJobSpecFile(const std::string& path);

}  // namespace gpool
