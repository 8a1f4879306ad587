#!/bin/bash
# Tests the container entrypoints with stand-ins for the binaries: each
# stand-in writes the arguments it was given, one a line, and the test
# compares them with what the entrypoint should have passed.
#   entrypoint_test.sh DEPLOY_CONTAINER_DIR
set -uo pipefail
dir=$(cd "${1:-$(dirname "$0")}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0 passed=0

cat > "$work/fake-bin" <<'FAKE'
#!/bin/bash
printf '%s\n' "$@" > "$FAKE_OUT"
FAKE
cat > "$work/fake-cli" <<'FAKE'
#!/bin/bash
# gpool admin keygen --out PREFIX
echo keygen >> "$FAKE_CLI_LOG"
[[ $1 == admin && $2 == keygen && $3 == --out ]] || exit 9
touch "$4.key" "$4.pub"
FAKE
chmod +x "$work/fake-bin" "$work/fake-cli"
mkdir -p "$work/keys"
for i in 1 2 3 4; do echo "secret $i" > "$work/keys/coordinator-$i.key"; echo "pub $i" > "$work/keys/coordinator-$i.pub"; done
echo admin > "$work/keys/admin.pub"
chmod 0644 "$work/keys/"*.key  # as loose as a Secret volume's files: the entrypoint must tighten them

check() {  # check NAME EXPECTED ACTUAL
  if [[ "$2" == "$3" ]]; then
    passed=$((passed + 1))
  else
    failures=$((failures + 1))
    printf 'FAIL %s\n--- expected\n%s\n--- got\n%s\n' "$1" "$2" "$3"
  fi
}

coordinator() {  # coordinator ENV... -- ARGS...: runs the entrypoint, prints its exit status
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  rm -f "$work/out"
  env -i PATH="$PATH" FAKE_OUT="$work/out" GPOOL_COORDINATOR_BIN="$work/fake-bin" GPOOL_KEY_DIR="$work/keys" \
    GPOOL_RUN_DIR="$work/run" GPOOL_DATA_VOLUME="$work/volume" GPOOL_NAMESPACE=ns "${envs[@]}" \
    bash "$dir/coordinator-entrypoint.sh" "$@" 2> "$work/err"
  echo $?
}

D=ns.svc.cluster.local
status=$(coordinator GPOOL_POD_NAME=gpool-coordinator-1 -- --scheduler-config=/x.conf)
check "coordinator exits as its program" 0 "$status"
check "coordinator flags" "--id
2
--data-dir
$work/volume/state
--peers
1=tcp://gpool-coordinator-0.gpool-coordinator.$D:7402,2=tcp://gpool-coordinator-1.gpool-coordinator.$D:7402,3=tcp://gpool-coordinator-2.gpool-coordinator.$D:7402
--peer-clients
1=tcp://gpool-coordinator-0.gpool-coordinator.$D:7400,2=tcp://gpool-coordinator-1.gpool-coordinator.$D:7400,3=tcp://gpool-coordinator-2.gpool-coordinator.$D:7400
--peer-workers
1=tcp://gpool-coordinator-0.gpool-coordinator.$D:7401,2=tcp://gpool-coordinator-1.gpool-coordinator.$D:7401,3=tcp://gpool-coordinator-2.gpool-coordinator.$D:7401
--client-addr
tcp://0.0.0.0:7400
--worker-addr
tcp://0.0.0.0:7401
--peer-addr
tcp://0.0.0.0:7402
--http-address
0.0.0.0:7480
--http-insecure
--key-file
$work/run/coordinator.key
--peer-keys
1=$work/keys/coordinator-1.pub,2=$work/keys/coordinator-2.pub,3=$work/keys/coordinator-3.pub
--admin-key
$work/keys/admin.pub
--scheduler-config=/x.conf" "$(cat "$work/out")"
check "this replica's secret key, copied 0600" "600 secret 2" "$(stat -c %a "$work/run/coordinator.key") $(cat "$work/run/coordinator.key")"

# Issue 48: a volume of the old layout (db/ at its root, group-readable as
# fsGroup leaves it) is moved into state/, 0700, files private.
mkdir -p "$work/volume/db" && echo old > "$work/volume/db/CURRENT" && echo e > "$work/volume/endpoints"
chmod 2775 "$work/volume" "$work/volume/db" && chmod 0664 "$work/volume/db/CURRENT"
status=$(coordinator GPOOL_POD_NAME=gpool-coordinator-1 --)
check "the old layout is moved into state/, private (setgid kept from the volume)" "0 2700 600 old e 0" \
  "$status $(stat -c %a "$work/volume/state") $(stat -c %a "$work/volume/state/db/CURRENT") \
$(cat "$work/volume/state/db/CURRENT") $(cat "$work/volume/state/endpoints") $(ls "$work/volume" | grep -c -x db)"
status=$(coordinator GPOOL_POD_NAME=gpool-coordinator-1 --)
check "and only once" "0 old" "$status $(cat "$work/volume/state/db/CURRENT")"

mkdir -p "$work/http-tls" && touch "$work/http-tls/tls.crt" "$work/http-tls/tls.key"
status=$(coordinator GPOOL_POD_NAME=gpool-coordinator-0 GPOOL_HTTP_TLS_DIR="$work/http-tls" --)
check "a mounted TLS secret serves HTTPS" "0 $work/http-tls/tls.crt $work/http-tls/tls.key " \
  "$status $(grep -x -A1 -- --http-cert "$work/out" | tail -1) $(grep -x -A1 -- --http-key "$work/out" | tail -1) $(grep -x -- --http-insecure "$work/out")"
status=$(coordinator GPOOL_POD_NAME=gpool-coordinator-3 GPOOL_REPLICAS=4 GPOOL_INITIAL_REPLICAS=3 --)
check "a fourth replica joins" "0 --id 4 --join" "$status $(sed -n 1,2p "$work/out" | tr '\n' ' ')$(grep -x -- --join "$work/out")"
status=$(coordinator GPOOL_POD_NAME=gpool-coordinator-0 --)
check "replica 1 of the first configuration does not join" "0 " "$status $(grep -x -- --join "$work/out")"

status=$(coordinator GPOOL_POD_NAME=coordinator --)
check "a pod name without an ordinal" "2 not <statefulset>-<ordinal>" "$status $(grep -o 'not <statefulset>-<ordinal>' "$work/err")"
status=$(coordinator GPOOL_POD_NAME=gpool-coordinator-3 --)
check "an ordinal beyond the replicas" "2 beyond GPOOL_REPLICAS=3" "$status $(grep -o 'beyond GPOOL_REPLICAS=3' "$work/err")"
status=$(coordinator GPOOL_POD_NAME=gpool-coordinator-0 GPOOL_KEY_DIR="$work/none" --)
check "no key" "2 coordinator-1.key" "$status $(grep -o 'coordinator-1.key' "$work/err")"
status=$(coordinator GPOOL_POD_NAME=gpool-coordinator-0 GPOOL_KEY_DIR="$work/none" GPOOL_INSECURE=1 --)
check "insecure, no keys" "0 --insecure" "$status $(grep -x -- --insecure "$work/out")"

worker() {
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  rm -f "$work/out"
  env -i PATH="$PATH" FAKE_OUT="$work/out" FAKE_CLI_LOG="$work/cli.log" GPOOL_WORKER_BIN="$work/fake-bin" \
    GPOOL_CLI_BIN="$work/fake-cli" GPOOL_PUBKEY_DIR="$work/keys" GPOOL_DATA_DIR="$work/worker" "${envs[@]}" \
    bash "$dir/worker-entrypoint.sh" "$@" 2> "$work/err"
  echo $?
}

status=$(worker GPOOL_NODE_NAME=gpu-a01 -- --log-level=debug)
check "worker exits as its program" 0 "$status"
D=gpool.svc.cluster.local
check "worker flags" "--node-name
gpu-a01
--coordinator
tcp://gpool-coordinator-0.gpool-coordinator.$D:7401,tcp://gpool-coordinator-1.gpool-coordinator.$D:7401,tcp://gpool-coordinator-2.gpool-coordinator.$D:7401
--data-dir
$work/worker
--http-address
0.0.0.0:7481
--http-insecure
--key-file
$work/worker/node.key
--coordinator-key
$work/keys/coordinator-1.pub,$work/keys/coordinator-2.pub,$work/keys/coordinator-3.pub
--log-level=debug" "$(cat "$work/out")"
status=$(worker GPOOL_NODE_NAME=gpu-a01 --)
check "the node key is made once and kept" "0 1" "$status $(wc -l < "$work/cli.log")"
# Issue 48: plain HTTP only with --http-insecure, loopback included; none: no port flags.
status=$(worker GPOOL_NODE_NAME=gpu-a01 GPOOL_HTTP_ADDRESS=127.0.0.1:7481 --)
check "a loopback port without TLS is plain HTTP by --http-insecure" "0 127.0.0.1:7481 --http-insecure" \
  "$status $(grep -x -A1 -- --http-address "$work/out" | tail -1) $(grep -x -- --http-insecure "$work/out")"
status=$(worker GPOOL_NODE_NAME=gpu-a01 GPOOL_HTTP_ADDRESS=none GPOOL_HTTP_TLS_DIR="$work/http-tls" --)
check "no HTTP port: no TLS flags, no --http-insecure" "0 none 0" \
  "$status $(grep -x -A1 -- --http-address "$work/out" | tail -1) $(grep -c -x -E -- '--http-(cert|key|insecure)' "$work/out")"
status=$(worker GPOOL_NODE_NAME=gpu-a01 GPOOL_HTTP_TLS_DIR="$work/http-tls" --)
check "a mounted TLS secret serves /metrics over HTTPS" "0 $work/http-tls/tls.crt $work/http-tls/tls.key 0" \
  "$status $(grep -x -A1 -- --http-cert "$work/out" | tail -1) $(grep -x -A1 -- --http-key "$work/out" | tail -1) \
$(grep -c -x -- --http-insecure "$work/out")"
status=$(worker --)
check "no node name" "2 GPOOL_NODE_NAME is not set" "$status $(grep -o 'GPOOL_NODE_NAME is not set' "$work/err")"
status=$(worker GPOOL_NODE_NAME=n GPOOL_PUBKEY_DIR="$work/none" --)
check "no coordinator key" "2 coordinator-1.pub" "$status $(grep -o 'coordinator-1.pub' "$work/err")"

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
