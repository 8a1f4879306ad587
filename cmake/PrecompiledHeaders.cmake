# Precompiled headers (issue 47): the standard library and the third-party
# headers nearly every source parses (msgpack, spdlog, zmq.hpp, gtest) are
# compiled once per build into a few PCH owners, and every library, program
# and test reuses one of them (target_precompile_headers(... REUSE_FROM)).
#
# gpool_precompiled_headers(), called once at the end of the top-level
# CMakeLists.txt when every target exists, gives each C++ target the PCH that
# matches what it links: its compile-time link closure (LINK_LIBRARIES, then
# INTERFACE_LINK_LIBRARIES down; $<LINK_ONLY:> is for the link line alone).
#
#   gpool_pch_std       the standard library: every target not below (the
#                       pure layers: protocol, storage, topology, scheduler,
#                       state, health, Raft, the simulator, ...)
#   gpool_pch_wire      + msgpack.hpp, zmq.hpp: targets that link
#                       gpool_protocol and cppzmq but not spdlog (the client
#                       library, the CLI, the integration test support)
#   gpool_pch_service   + spdlog: targets that link all three (security,
#                       replication, the coordinator, the worker)
#   gpool_pch_<set>_test, gpool_pch_test (std)
#                       the same + gtest/gtest.h: targets that link GTest::gtest
#
# Why divided so:
#   - A PCH is force-included (-include) before a source's first line, so
#     whatever it holds compiles without its #include. A header that a
#     target may not use must not be in its PCH, or a forbidden or missing
#     include is hidden: the pure layers (topology/, the scheduler, the
#     state machine, the health policy, Raft: cmake/CheckLayers.cmake) do not
#     use ZeroMQ or spdlog, and the client may not use spdlog. The rule is
#     the one the links enforce: a target gets a third-party header through
#     a PCH only if it links that library. msgpack comes with ZeroMQ, never
#     alone: the scheduler and topology link gpool_protocol (whose wire.h
#     parses msgpack) but do not parse msgpack themselves, so their PCH is
#     the standard library alone, and a source there that used msgpack
#     without including a protocol header still fails to compile.
#   - GCC uses a .gch only where the macros the headers test are defined as
#     when it was made (-Winvalid-pch, an error under GPOOL_WERROR, says so
#     otherwise). spdlog's and fmt's usage requirements (SPDLOG_COMPILED_LIB,
#     FMT_SHARED, ...), msgpack's (MSGPACK_NO_BOOST, MSGPACK_DEFAULT_API_VERSION)
#     and gtest's (-DGTEST_HAS_PTHREAD=1) appear in those headers, so a
#     target can reuse a PCH with them only when it gets the same definitions
#     the same way: by linking the same libraries as the owner. Giving a
#     pure target those libraries' flags, or links, just to share a PCH
#     would defeat the point.
#   - Each set costs one PCH compile (a few CPU seconds, ~100-160 MB .gch)
#     and pays off only over several unity batches; nlohmann/json, yaml-cpp,
#     zmq_addon.hpp and gmock are used by fewer targets (and the first two
#     are banned in more layers), so they stay out, and spdlog without
#     ZeroMQ (gpool_sim) gets the std set rather than a set of its own.
#
# Measured (issue 47) on the CI configuration (deploy/test.sh's cmake line,
# Ninja, cmake --build -j2, no ccache, GCC 12, two cores that other builds
# shared): GPOOL_PCH=OFF 1844 s wall, 1211 s compiler CPU (user+sys);
# GPOOL_PCH=ON 1084 s wall, 1125 s CPU. The CPU time, which the other load
# disturbs least, drops 7 %; the wall times mostly show how busy the machine
# was (load ~7 during the OFF build, ~4-5 during the ON one). Unity batches
# of sixteen already parse each header once per sixteen sources, and most
# of a sanitized Debug build is code generation, which a PCH does not save.
#
# Targets left out: shared and module libraries and anything whose
# POSITION_INDEPENDENT_CODE differs from the default (GCC rejects a .gch made
# with a different -fPIC: gpool_cuda_ledger),
# targets whose PRECOMPILE_HEADERS or PRECOMPILE_HEADERS_REUSE_FROM is
# already set, and a target whose GPOOL_PCH property is OFF.
#
# The include-view check (cmake/IncludeViews.cmake, the LayerCheck tests) is
# unaffected: a PCH holds no project header, so control/snapshot_schedule.h
# is still not found from a target that links only gpool_scheduler; the
# probe targets reuse their layer's PCH like any other target.
#
# ccache: a compiler launcher (CMAKE_CXX_COMPILER_LAUNCHER, e.g.
# -DCMAKE_CXX_COMPILER_LAUNCHER=ccache) turns the PCH off. ccache caches a
# compilation that uses a PCH only with sloppiness=pch_defines,time_macros
# in its configuration and -fpch-preprocess on every command; without them
# it misses every time, which loses more than the PCH saves. A developer
# with ccache gets its incremental caching instead; -DGPOOL_PCH=ON does not
# override this.

option(GPOOL_PCH "Precompiled headers shared across targets (turned off by a compiler launcher such as ccache)" ON)

set(GPOOL_PCH_STD_HEADERS
  <algorithm> <array> <atomic> <cerrno> <charconv> <chrono> <cmath> <cstddef> <cstdint> <cstdio>
  <cstdlib> <cstring> <deque> <filesystem> <fstream> <functional> <iterator> <limits> <map> <memory>
  <mutex> <optional> <random> <set> <sstream> <string> <string_view> <thread> <tuple>
  <unordered_map> <utility> <vector>)
set(GPOOL_PCH_WIRE_HEADERS <msgpack.hpp> <zmq.hpp>)
set(GPOOL_PCH_SERVICE_HEADERS <spdlog/spdlog.h>)
set(GPOOL_PCH_TEST_HEADERS <gtest/gtest.h>)

# The targets whose usage requirements target gets: what it links, and what
# those pass on (not $<LINK_ONLY:>, which is for the link line alone).
function(_gpool_compile_closure target out)
  get_target_property(pending ${target} LINK_LIBRARIES)
  if(NOT pending)
    set(pending "")
  endif()
  set(seen "")
  while(pending)
    list(POP_FRONT pending item)
    if(item MATCHES "\\$<" OR NOT TARGET "${item}" OR item IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${item})
    get_target_property(aliased ${item} ALIASED_TARGET)
    if(aliased)
      list(APPEND pending ${aliased})
    endif()
    get_target_property(interface ${item} INTERFACE_LINK_LIBRARIES)
    if(interface)
      list(APPEND pending ${interface})
    endif()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

function(_gpool_pch_owner name headers libraries)
  set(source ${CMAKE_BINARY_DIR}/pch/${name}.cc)
  file(CONFIGURE OUTPUT ${source}
       CONTENT "// The owner of the ${name} precompiled header (cmake/PrecompiledHeaders.cmake).\n")
  add_library(${name} OBJECT ${source})
  target_link_libraries(${name} PRIVATE ${libraries})
  target_precompile_headers(${name} PRIVATE ${headers})
  set_target_properties(${name} PROPERTIES UNITY_BUILD OFF)
endfunction()

function(gpool_precompiled_headers)
  if(NOT GPOOL_PCH)
    return()
  endif()
  # GCC only: that is what CI builds and what the sets above were checked
  # with. Clang (deploy/fuzz.sh's libFuzzer build) validates a PCH's macros
  # and flags differently and is not worth a second set of rules here.
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    message(STATUS "gpool: precompiled headers off: ${CMAKE_CXX_COMPILER_ID} is not GCC")
    return()
  endif()
  if(CMAKE_CXX_COMPILER_LAUNCHER)
    message(STATUS "gpool: precompiled headers off: a compiler launcher (${CMAKE_CXX_COMPILER_LAUNCHER}) is set")
    return()
  endif()

  # What a target must link (in its compile closure) for each part.
  set(wire_libraries gpool_protocol cppzmq)
  set(service_libraries gpool_protocol cppzmq spdlog::spdlog)
  set(test_libraries GTest::gtest)

  _gpool_targets_below(${PROJECT_SOURCE_DIR} all_targets)
  set(sets std wire service test wire_test service_test)
  foreach(set IN LISTS sets)
    set(reusers_${set} "")
  endforeach()
  foreach(target IN LISTS all_targets)
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(STATIC_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
      continue()
    endif()
    # The owners are built with the directory's default -fPIC setting.
    get_target_property(pic ${target} POSITION_INDEPENDENT_CODE)
    if(pic)
      set(pic TRUE)
    else()
      set(pic FALSE)
    endif()
    if(CMAKE_POSITION_INDEPENDENT_CODE)
      set(pic_default TRUE)
    else()
      set(pic_default FALSE)
    endif()
    get_target_property(own ${target} PRECOMPILE_HEADERS)
    get_target_property(reuse ${target} PRECOMPILE_HEADERS_REUSE_FROM)
    get_target_property(wanted ${target} GPOOL_PCH)
    if(NOT pic STREQUAL pic_default OR own OR reuse OR (NOT wanted STREQUAL "wanted-NOTFOUND" AND NOT wanted))
      continue()
    endif()
    _gpool_compile_closure(${target} closure)
    set(set std)
    foreach(part IN ITEMS wire service)
      set(has TRUE)
      foreach(library IN LISTS ${part}_libraries)
        if(NOT library IN_LIST closure)
          set(has FALSE)
        endif()
      endforeach()
      if(has)
        set(set ${part})
      endif()
    endforeach()
    if(test_libraries IN_LIST closure)
      if(set STREQUAL "std")
        set(set test)
      else()
        string(APPEND set _test)
      endif()
    endif()
    list(APPEND reusers_${set} ${target})
  endforeach()

  set(headers_std ${GPOOL_PCH_STD_HEADERS})
  set(headers_wire ${GPOOL_PCH_STD_HEADERS} ${GPOOL_PCH_WIRE_HEADERS})
  set(headers_service ${headers_wire} ${GPOOL_PCH_SERVICE_HEADERS})
  set(libraries_std "")
  set(libraries_wire ${wire_libraries})
  set(libraries_service ${service_libraries})
  foreach(base IN ITEMS std wire service)
    set(headers_${base}_test ${headers_${base}} ${GPOOL_PCH_TEST_HEADERS})
    set(libraries_${base}_test ${libraries_${base}} ${test_libraries})
  endforeach()
  set(headers_test ${headers_std_test})
  set(libraries_test ${libraries_std_test})

  # An owner only for a set that has reusers (no tests, no test PCH).
  set(summary "")
  foreach(set IN LISTS sets)
    list(LENGTH reusers_${set} count)
    if(count EQUAL 0)
      continue()
    endif()
    _gpool_pch_owner(gpool_pch_${set} "${headers_${set}}" "${libraries_${set}}")
    foreach(target IN LISTS reusers_${set})
      target_precompile_headers(${target} REUSE_FROM gpool_pch_${set})
    endforeach()
    list(APPEND summary "${set} ${count}")
  endforeach()
  list(JOIN summary ", " summary)
  message(STATUS "gpool: precompiled headers, targets per set: ${summary}")
endfunction()
