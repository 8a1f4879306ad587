// Network-aware placement over the switch tree.
//
// Nodes name their switches with labels topology.gpool.io/tier1 (the leaf
// they hang off), tier2 (the spine above it), and so on; operators set them
// in the worker's node spec or with `gpool node label`, and change them at
// run time the same way. A job with network_mode single-switch must fit
// under one switch of its network_tier (or a lower tier); best-effort tries
// one leaf, then one spine, ... and at last anywhere. Task groups with their
// own network_tier (tensor-parallel groups) must each fit under one switch
// of that tier inside the job's domain.
//
// Domains are tried fullest first among those with room for the whole job,
// so jobs pack into partly used leaves and whole leaves stay free for large
// jobs. A job that no domain can hold gets a reason naming the tier.
#pragma once

#include "control/scheduler/session.h"

namespace gpool::scheduler {

// Places the job's gang under its network rule. True when placed (binds
// committed); false with job.reasons saying why.
bool PlaceWithNetwork(Session& session, WorkJob& job, bool ignore_reservations);

}  // namespace gpool::scheduler
