# Fails the build when a source file includes a header its layer may not use.
# Run by the `check_layers` target on every build (cmake -P, a second or less):
#   cmake -DROOT=<source dir> -P cmake/CheckLayers.cmake
#
# Dependencies point down. Each rule names a folder and the project folders
# and third-party headers its non-test sources may include; the longest
# matching folder wins. Tests (*_test.cc and test helpers) may reach across
# layers to drive them, but never between the coordinator, the worker and
# the client. Test code (fakes live in testing/ folders) stays out of the
# product: a non-test source may not include a header from a testing/ folder.
cmake_minimum_required(VERSION 3.25)

# folder | allowed project folders (prefixes) | forbidden third-party headers (regex)
set(RULES
  "protocol/|protocol/|zmq|leveldb|spdlog|yaml-cpp|nlohmann"
  "protocol/security/|protocol/|leveldb|yaml-cpp|nlohmann"
  "storage/|protocol/ storage/|zmq|spdlog|yaml-cpp|nlohmann"
  "topology/|protocol/ topology/|zmq|leveldb|spdlog"
  "control/raft/|protocol/ storage/ control/raft/|zmq|leveldb|yaml-cpp|nlohmann"
  "control/scheduler/|protocol/ topology/ control/scheduler/|zmq|leveldb|spdlog|yaml-cpp|nlohmann"
  "control/state/|protocol/ topology/ control/state/|zmq|leveldb|spdlog|yaml-cpp|nlohmann"
  "control/sim/|protocol/ topology/ control/scheduler/ control/state/ control/sim/|zmq|leveldb"
  "control/health/|protocol/ topology/ control/health/|zmq|leveldb|yaml-cpp"
  "control/log/|protocol/ storage/ control/log/|zmq|yaml-cpp|nlohmann"
  "control/replication/|protocol/ storage/ control/raft/ control/log/ control/replication/|leveldb|yaml-cpp|nlohmann"
  "control/security/|protocol/ topology/ control/state/ control/security/|leveldb|yaml-cpp|nlohmann"
  "control/http/|protocol/ control/ control/http/|leveldb|yaml-cpp"
  "control/metrics/|protocol/ topology/ control/state/ control/log/ control/ control/metrics/|leveldb|yaml-cpp"
  "control/dashboard/|protocol/ control/dashboard/|zmq|leveldb|yaml-cpp|nlohmann"
  "control/watch/|protocol/ topology/ control/state/ control/ control/watch/|zmq|leveldb|yaml-cpp|nlohmann"
  "control/gateway/|protocol/ topology/ control/state/ control/security/ control/watch/ control/ control/gateway/|zmq|leveldb|yaml-cpp"
  "control/|protocol/ storage/ topology/ control/raft/ control/log/ control/replication/ control/scheduler/ control/state/ control/health/ control/security/ control/http/ control/metrics/ control/dashboard/ control/watch/ control/gateway/ control/|leveldb|yaml-cpp"
  "worker/|protocol/ topology/ worker/|leveldb"
  "client/|protocol/ topology/ client/|leveldb|spdlog"
)
# What a test may never include, by the test's top folder.
set(TEST_RULES
  "control/|worker/ client/"
  "worker/|control/ client/"
  "client/|control/ worker/"
)

file(GLOB_RECURSE sources RELATIVE "${ROOT}"
  "${ROOT}/protocol/*.h" "${ROOT}/protocol/*.cc" "${ROOT}/storage/*.h" "${ROOT}/storage/*.cc"
  "${ROOT}/topology/*.h" "${ROOT}/topology/*.cc" "${ROOT}/control/*.h" "${ROOT}/control/*.cc"
  "${ROOT}/worker/*.h" "${ROOT}/worker/*.cc" "${ROOT}/client/*.h" "${ROOT}/client/*.cc")

set(violations "")
foreach(source IN LISTS sources)
  file(STRINGS "${ROOT}/${source}" includes REGEX "^#include [\"<]")
  if(source MATCHES "(_test\\.cc|_harness\\.h|_fixture\\.h|(/|_)test_[a-z_]*\\.h|fake_[a-z_]*\\.(h|cc)|/testdata/|/sim/main\\.cc)$"
     OR source MATCHES "/(testdata|testing)/")
    foreach(rule IN LISTS TEST_RULES)
      string(REPLACE "|" ";" parts "${rule}")
      list(GET parts 0 folder)
      list(GET parts 1 banned)
      string(FIND "${source}" "${folder}" at)
      if(NOT at EQUAL 0)
        continue()
      endif()
      separate_arguments(banned)
      foreach(line IN LISTS includes)
        foreach(prefix IN LISTS banned)
          if(line MATCHES "^#include \"${prefix}")
            string(APPEND violations "  ${source}: ${line} (a ${folder} test may not include ${prefix})\n")
          endif()
        endforeach()
      endforeach()
    endforeach()
    continue()
  endif()
  # The longest folder that holds the source decides.
  set(best "")
  set(best_length 0)
  foreach(rule IN LISTS RULES)
    string(REPLACE "|" ";" parts "${rule}")
    list(GET parts 0 folder)
    string(FIND "${source}" "${folder}" at)
    string(LENGTH "${folder}" length)
    if(at EQUAL 0 AND length GREATER best_length)
      set(best "${rule}")
      set(best_length ${length})
    endif()
  endforeach()
  if(best STREQUAL "")
    continue()
  endif()
  string(REPLACE "|" ";" parts "${best}")
  list(GET parts 0 folder)
  list(GET parts 1 allowed)
  list(SUBLIST parts 2 -1 forbidden)
  separate_arguments(allowed)
  foreach(line IN LISTS includes)
    if(line MATCHES "^#include \"([^\"]*/testing/[^\"]*)\"")
      string(APPEND violations "  ${source}: ${line} (product code may not include test code)\n")
    elseif(line MATCHES "^#include \"([^\"]+)\"")
      set(header "${CMAKE_MATCH_1}")
      set(ok FALSE)
      foreach(prefix IN LISTS allowed)
        string(FIND "${header}" "${prefix}" at)
        if(at EQUAL 0)
          # control/ allows control/* only for the folders it names: a
          # top-level control file may not reach into control/sim/.
          if(prefix STREQUAL "control/" AND header MATCHES "^control/[a-z_]+/")
            continue()
          endif()
          set(ok TRUE)
        endif()
      endforeach()
      if(NOT ok)
        string(APPEND violations "  ${source}: ${line} (${folder} may include only ${allowed})\n")
      endif()
    elseif(line MATCHES "^#include <([^>]+)>")
      set(header "${CMAKE_MATCH_1}")
      foreach(pattern IN LISTS forbidden)
        if(header MATCHES "^${pattern}")
          string(APPEND violations "  ${source}: ${line} (${folder} may not use ${pattern})\n")
        endif()
      endforeach()
    endif()
  endforeach()
endforeach()

if(NOT violations STREQUAL "")
  message(FATAL_ERROR "Layering violations (dependencies point down; see docs/architecture.md):\n${violations}")
endif()
