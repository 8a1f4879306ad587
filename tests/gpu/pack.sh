#!/usr/bin/env bash
# Packs gpool-coordinator, gpool-worker and gpool, with every shared library they need that is not
# part of glibc, into <repo>/.gpucarry/{bin,lib}, so that tests/gpu/real_gpu_check.sh can run on a
# GPU machine that has none of gpool's build dependencies. See tests/gpu/README.md.
#
#   tests/gpu/pack.sh                 # binaries from build-gpucheck/ (built if missing)
#   GPUCHECK_BUILD=build-release tests/gpu/pack.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${GPUCHECK_BUILD:-$ROOT/build-gpucheck}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
OUT=$ROOT/.gpucarry
MAX_MIB=40
BINS=(control/gpool-coordinator worker/gpool-worker worker/gpool-task-supervisor client/gpool client/gpool-probe)

# Always (re)build: an incremental build is quick, and stale binaries would
# check code other than the commit the MANIFEST names.
if [[ ! -f $BUILD/CMakeCache.txt ]]; then
  nice -n 10 cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGPOOL_BUILD_TESTS=OFF -DGPOOL_BUILD_BENCH=OFF >/dev/null
fi
echo "pack: building into $BUILD (Release, no tests, no benchmarks)"
nice -n 10 cmake --build "$BUILD" -j2 --target gpool-coordinator gpool-worker gpool-task-supervisor gpool gpool-probe

# glibc's own libraries: the target machine has its own (the binaries need GLIBC_2.34 at most; the
# carried libstdc++ may need 2.36, which real_gpu_check.sh works around by falling back to the
# target's libstdc++).
is_glibc() {
  case $1 in
    libc.so.* | libm.so.* | libmvec.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | \
      libutil.so.* | libanl.so.* | libnsl.so.* | libnss_*.so.* | libBrokenLocale.so.* | libthread_db.so.* | \
      libc_malloc_debug.so.* | ld-linux*.so.* | linux-vdso.so.* | linux-gate.so.*) return 0 ;;
  esac
  return 1
}

rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"

for b in "${BINS[@]}"; do
  strip -o "$OUT/bin/$(basename "$b")" "$BUILD/$b"
done

declare -A seen=()
for b in "${BINS[@]}"; do
  if ldd "$BUILD/$b" | grep -q 'not found'; then
    echo "pack: $b has unresolved libraries:" >&2
    ldd "$BUILD/$b" >&2
    exit 1
  fi
  while read -r name path; do
    [[ -n $path && -e $path ]] || continue
    is_glibc "$name" && continue
    [[ -n ${seen[$name]:-} ]] && continue
    seen[$name]=1
    # Copy the file the soname points at, under the soname the binaries ask for.
    cp -L "$path" "$OUT/lib/$name"
    chmod u+w "$OUT/lib/$name"
    strip --strip-unneeded "$OUT/lib/$name" 2>/dev/null || true
  done < <(ldd "$BUILD/$b" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
done

# Everything must now resolve into .gpucarry/lib or glibc.
bad=0
for b in "$OUT"/bin/*; do
  while read -r name _ path _; do
    is_glibc "$name" && continue
    if [[ $path != "$OUT/lib/"* ]]; then
      echo "pack: $(basename "$b"): $name resolves to '$path', not into $OUT/lib" >&2
      bad=1
    fi
  done < <(LD_LIBRARY_PATH=$OUT/lib ldd "$b" | awk '$2 == "=>"')
  # gpool-probe and gpool-task-supervisor have no --version: their usage (exit 0 or 2) shows that they load.
  if [[ $(basename "$b") == gpool-probe || $(basename "$b") == gpool-task-supervisor ]]; then
    LD_LIBRARY_PATH=$OUT/lib "$b" --help >/dev/null 2>&1
    (($? <= 2)) || { echo "pack: $b does not start" >&2; bad=1; }
  else
    LD_LIBRARY_PATH=$OUT/lib "$b" --version >/dev/null || { echo "pack: $b --version failed" >&2; bad=1; }
  fi
done
((bad == 0)) || exit 1

{
  echo "packed $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) ($(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}"), $(ldd --version | head -1))"
  echo "from $BUILD, repo HEAD $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' + uncommitted changes')"
  echo "max GLIBC needed: bin $(objdump -T "$OUT"/bin/* | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1), lib $(objdump -T "$OUT"/lib/* | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
  (cd "$OUT" && sha256sum bin/* lib/*)
} >"$OUT/MANIFEST"

# Keep the carry out of git without touching .gitignore.
EXCLUDE=$(git -C "$ROOT" rev-parse --git-path info/exclude 2>/dev/null || echo "$ROOT/.git/info/exclude")
case $EXCLUDE in /*) ;; *) EXCLUDE=$ROOT/$EXCLUDE ;; esac
mkdir -p "$(dirname "$EXCLUDE")"
grep -qxF '/.gpucarry/' "$EXCLUDE" 2>/dev/null || echo '/.gpucarry/' >>"$EXCLUDE"

size_kib=$(du -sk "$OUT" | cut -f1)
echo "pack: $(ls "$OUT/bin" | wc -l) binaries, $(ls "$OUT/lib" | wc -l) libraries, $(du -sh "$OUT" | cut -f1) in $OUT"
if ((size_kib > MAX_MIB * 1024)); then
  echo "pack: $OUT is over $MAX_MIB MiB" >&2
  exit 1
fi
