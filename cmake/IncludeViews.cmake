# Include views: no target sees the whole source tree. Each library exposes
# only its own headers, so a header of a layer above (or beside) is not found
# at all, and including it fails to compile (issue 47).
#
# gpool_include_views(), called once at the end of the top-level
# CMakeLists.txt when every target exists, gives each library (static,
# shared, object) and each executable an include view:
#
#   ${CMAKE_BINARY_DIR}/include-views/<target>/<folder>/<header>  ->  <source dir>/<folder>/<header>
#
# one symbolic link for every header (*.h, *.inc) of every source folder the
# target compiles (the folders of its SOURCES), that folder only, not its
# subfolders: gpool_coordinator compiles control/*.cc, and so exposes
# control/*.h, but not control/scheduler/*.h, which only gpool_scheduler
# exposes. Where several targets compile in one folder, x.h belongs to the
# one that compiles x.cc (gpool_client, gpool_client_fakes and gpool_cli share
# client/, and only gpool_cli exposes client/format.h); a header with no .cc
# beside it is in every such view. Test helpers (GPOOL_TEST_HEADER_REGEX) are
# in none.
#
# A library's view is its PUBLIC include directory: a consumer gets
# a lower layer's headers only by linking it (they propagate with PUBLIC and
# INTERFACE links, as the libraries' own links do). An executable's view is
# PRIVATE (gpool-coordinator's control/main.cc sees control/*.h through it and
# through gpool_coordinator's).
#
# A target's GPOOL_HEADERS property adds what no source of its own shows:
# folders (relative to the source root) whose headers have no .cc in any
# library, and single headers (a path ending in .h or .inc). An INTERFACE
# library with GPOOL_HEADERS is a header-only target (gpool_cuda_driver_api:
# one header that the interposer, the rGPU client and server share).
#
# Targets that have the source root among their include directories keep it
# and get no view: test binaries (gpool_add_test), the bench/ and fuzz/
# folders (include_directories there), tests/' gpool_test_support, and the
# test stand-ins (the fake NVML and CUDA drivers). They are not product
# layers; cmake/CheckLayers.cmake still checks what tests include.
#
# Generated sources (in the build tree) add no folder. The views are rebuilt
# at every configure, and the header globs are CONFIGURE_DEPENDS: a header
# added to or removed from a folder re-runs the configure.

set(GPOOL_INCLUDE_VIEWS_DIR ${CMAKE_BINARY_DIR}/include-views)
# Test helpers (fixtures, harnesses, test_*.h, the fake ports) are in no view:
# only tests include them, and tests see the whole tree.
set(GPOOL_TEST_HEADER_REGEX "(^|/|_)test_[a-z_]*\\.h$|_harness\\.h$|_fixture\\.h$|/fake_ports\\.h$")

# Every buildsystem target defined in dir and below.
function(_gpool_targets_below dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    _gpool_targets_below(${subdir} below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# The source files of target in the source tree, relative to its root.
function(_gpool_sources target out)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  set(files "")
  if(sources)
    foreach(source IN LISTS sources)
      if(source MATCHES "\\$<")
        continue()
      endif()
      cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY ${source_dir} NORMALIZE)
      cmake_path(IS_PREFIX CMAKE_BINARY_DIR "${source}" NORMALIZE in_build_tree)
      cmake_path(IS_PREFIX PROJECT_SOURCE_DIR "${source}" NORMALIZE in_source_tree)
      if(in_build_tree OR NOT in_source_tree)
        continue()
      endif()
      cmake_path(RELATIVE_PATH source BASE_DIRECTORY ${PROJECT_SOURCE_DIR})
      list(APPEND files "${source}")
    endforeach()
  endif()
  set(${out} ${files} PARENT_SCOPE)
endfunction()

# Makes ${GPOOL_INCLUDE_VIEWS_DIR}/<target> hold exactly the links to the
# headers of folders (less those another target owns: the owner of x.h is
# whichever target compiles x.cc beside it) and to headers; returns the
# view's path.
function(_gpool_build_view target folders headers out)
  set(wanted "")
  foreach(folder IN LISTS folders)
    if(NOT IS_DIRECTORY ${PROJECT_SOURCE_DIR}/${folder})
      message(FATAL_ERROR "${target}: GPOOL_HEADERS names ${folder}, which is no folder of the source tree")
    endif()
    file(GLOB found CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}
         ${PROJECT_SOURCE_DIR}/${folder}/*.h ${PROJECT_SOURCE_DIR}/${folder}/*.inc)
    foreach(header IN LISTS found)
      get_property(owners GLOBAL PROPERTY _GPOOL_HEADER_OWNERS_${header})
      if(header MATCHES "${GPOOL_TEST_HEADER_REGEX}")
        continue()
      endif()
      if(NOT owners OR target IN_LIST owners)
        list(APPEND wanted ${header})
      endif()
    endforeach()
  endforeach()
  foreach(header IN LISTS headers)
    if(NOT EXISTS ${PROJECT_SOURCE_DIR}/${header} OR IS_DIRECTORY ${PROJECT_SOURCE_DIR}/${header})
      message(FATAL_ERROR "${target}: GPOOL_HEADERS names ${header}, which is no header of the source tree")
    endif()
    list(APPEND wanted ${header})
  endforeach()
  list(REMOVE_DUPLICATES wanted)
  set(view ${GPOOL_INCLUDE_VIEWS_DIR}/${target})
  if(NOT wanted)
    # Nothing to expose (gpool-sim's folder's headers are all gpool_sim's).
    file(REMOVE_RECURSE ${view})
    set(${out} "" PARENT_SCOPE)
    return()
  endif()

  # Links to headers since removed or moved, or no longer this target's.
  file(GLOB_RECURSE present LIST_DIRECTORIES false RELATIVE ${view} ${view}/*)
  foreach(link IN LISTS present)
    if(NOT link IN_LIST wanted)
      file(REMOVE ${view}/${link})
    endif()
  endforeach()
  # And the folders that left empty, deepest first.
  file(GLOB_RECURSE folders_present LIST_DIRECTORIES true ${view}/*)
  list(REVERSE folders_present)
  foreach(folder IN LISTS folders_present)
    if(IS_DIRECTORY ${folder} AND NOT IS_SYMLINK ${folder})
      file(GLOB content ${folder}/*)
      if(NOT content)
        file(REMOVE_RECURSE ${folder})
      endif()
    endif()
  endforeach()
  foreach(header IN LISTS wanted)
    if(NOT IS_SYMLINK ${view}/${header})
      cmake_path(GET header PARENT_PATH folder)
      file(MAKE_DIRECTORY ${view}/${folder})
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${header} ${view}/${header} SYMBOLIC)
    endif()
  endforeach()
  set(${out} ${view} PARENT_SCOPE)
endfunction()

function(gpool_include_views)
  _gpool_targets_below(${PROJECT_SOURCE_DIR} all_targets)
  # The targets that get a view, their scope, and who owns which header.
  set(targets "")
  foreach(target IN LISTS all_targets)
    get_target_property(type ${target} TYPE)
    get_target_property(extra ${target} GPOOL_HEADERS)
    if(NOT extra)
      set(extra "")
    endif()
    if(type MATCHES "^(STATIC|SHARED|MODULE|OBJECT)_LIBRARY$")
      set(scope PUBLIC)
    elseif(type STREQUAL "EXECUTABLE")
      set(scope PRIVATE)
    elseif(type STREQUAL "INTERFACE_LIBRARY" AND extra)
      set(scope INTERFACE)
    else()
      continue()
    endif()
    set(sources "")
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(include_dirs ${target} INCLUDE_DIRECTORIES)
      if(include_dirs AND PROJECT_SOURCE_DIR IN_LIST include_dirs)
        continue()
      endif()
      _gpool_sources(${target} sources)
    endif()
    list(APPEND targets ${target})
    set(scope_${target} ${scope})
    set(folders_${target} "")
    foreach(source IN LISTS sources)
      cmake_path(GET source PARENT_PATH folder)
      list(APPEND folders_${target} "${folder}")
      cmake_path(REPLACE_EXTENSION source LAST_ONLY .h OUTPUT_VARIABLE header)
      set_property(GLOBAL APPEND PROPERTY _GPOOL_HEADER_OWNERS_${header} ${target})
    endforeach()
    set(extra_${target} "${extra}")
  endforeach()

  set(made "")
  foreach(target IN LISTS targets)
    set(scope ${scope_${target}})
    set(folders ${folders_${target}})
    list(REMOVE_DUPLICATES folders)
    set(headers "")
    foreach(entry IN LISTS extra_${target})
      if(entry MATCHES "\\.(h|inc)$")
        list(APPEND headers ${entry})
      else()
        list(APPEND folders ${entry})
      endif()
    endforeach()
    list(REMOVE_ITEM folders ".")
    _gpool_build_view(${target} "${folders}" "${headers}" view)
    if(view)
      target_include_directories(${target} ${scope} $<BUILD_INTERFACE:${view}>)
      list(APPEND made ${target})
    endif()
  endforeach()

  # Views of targets that no longer exist.
  file(GLOB old_views LIST_DIRECTORIES true RELATIVE ${GPOOL_INCLUDE_VIEWS_DIR} ${GPOOL_INCLUDE_VIEWS_DIR}/*)
  foreach(old IN LISTS old_views)
    if(NOT old IN_LIST made)
      file(REMOVE_RECURSE ${GPOOL_INCLUDE_VIEWS_DIR}/${old})
    endif()
  endforeach()
endfunction()
