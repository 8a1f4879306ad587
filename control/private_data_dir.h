// The coordinator's data dir is private to it (issue 48, finding 3): it
// holds every job's spec, environment included, and the Raft log of them.
//
// A missing dir is made 0700; an existing one that group or others may
// read, write or enter is refused (FailedPrecondition, with the command
// that fixes it) rather than quietly narrowed: files made under it before
// may be 0644 too, and whoever set it so may have meant it (a shared
// volume), so the operator decides. Files below are 0600 because main sets
// umask 077 before anything is written (LevelDB makes its files 0644 minus
// the umask). Only the top directory is checked: nobody reaches what is
// below it without passing through it.
#pragma once

#include <string>

#include "protocol/base/status.h"

namespace gpool::control {

Status PreparePrivateDataDir(const std::string& dir);

}  // namespace gpool::control
