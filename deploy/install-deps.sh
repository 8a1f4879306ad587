#!/usr/bin/env bash
# Installs every build and test dependency of gpool from Debian packages.
#   install-deps.sh               everything: building, testing, benchmarks
#   install-deps.sh --build-only  what building the programs needs (the
#                                 container image's build stage,
#                                 deploy/container/Containerfile)
# Idempotent: packages already present are left alone, and apt is only
# consulted when something is missing.
set -euo pipefail

BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  mold  # the linker CMakeLists.txt picks when present: ~50 programs link in seconds, not minutes
  libzmq3-dev cppzmq-dev libsodium-dev  # libsodium: SHA-256 of snapshot files (libzmq uses it too)
  libmsgpack-cxx-dev
  libleveldb-dev libsnappy-dev
  libspdlog-dev libfmt-dev
  libcxxopts-dev
  libyaml-cpp-dev nlohmann-json3-dev
  libcpp-httplib-dev
)

PACKAGES=(
  "${BUILD_PACKAGES[@]}"
  libgtest-dev libgmock-dev googletest
  libbenchmark-dev
  procps
  openmpi-bin
  gnuplot-nox
  python3-minimal python3-zmq python3-msgpack python3-yaml python3-pytest python3-setuptools python3-pip  # yaml, pytest, setuptools, pip: the Python SDK (client/python), its tests, pip install
  chromium prometheus  # the dashboard's browser test; the metrics scrape test (issue 34)
  python3-kubernetes  # deploy/kubernetes/validate.py: the manifests against the API types
)

case "${1:-}" in
  "") ;;
  --build-only) PACKAGES=("${BUILD_PACKAGES[@]}") ;;
  *) echo "usage: install-deps.sh [--build-only]" >&2; exit 2 ;;
esac

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
