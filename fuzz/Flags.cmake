# Compiler flags for the libFuzzer build (-DGPOOL_FUZZ=ON), included from the
# top CMakeLists.txt before any library, because libFuzzer only steers by
# the coverage of code compiled with -fsanitize=fuzzer-no-link: the decoders
# live in the libraries, not in the targets. Clang only (Debian's clang);
# use a separate build directory, e.g.
#   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DGPOOL_FUZZ=ON \
#     -DGPOOL_BUILD_TESTS=OFF -DGPOOL_BUILD_BENCH=OFF
# deploy/fuzz.sh does this and runs every target.
if(GPOOL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "GPOOL_FUZZ=ON needs clang (libFuzzer): CC=clang CXX=clang++ cmake ...")
  endif()
  if(GPOOL_SANITIZE)
    message(FATAL_ERROR "GPOOL_FUZZ=ON already builds with ASan and UBSan; leave GPOOL_SANITIZE off")
  endif()
  # GPOOL_FUZZ_ASAN=OFF keeps UBSan and drops ASan: several times the
  # executions per second on the YAML/JSON readers, whose node-per-value
  # allocations all go through ASan (deploy/fuzz.sh --ubsan-only).
  option(GPOOL_FUZZ_ASAN "Fuzz with AddressSanitizer (and UBSan)" ON)
  if(GPOOL_FUZZ_ASAN)
    set(gpool_fuzz_sanitizers address,undefined)
  else()
    set(gpool_fuzz_sanitizers undefined)
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,${gpool_fuzz_sanitizers} -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=${gpool_fuzz_sanitizers})
endif()
