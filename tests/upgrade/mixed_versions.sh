#!/bin/bash
# Rolling-upgrade rehearsal (issue 50; docs/operations.md 15.5): three
# replicas on loopback, 1 and 2 on NEW_BIN, 3 on OLD_BIN (a gpool-coordinator
# from before state versions were sent), then 3 upgraded in place. Checks that
# while 3 is old the leader refuses what it would apply differently (a credit,
# a class grant) and takes the rest (a submit), and that both go through once
# 3 runs NEW_BIN. Opt-in, not in ctest: it needs an older build.
#
#   tests/upgrade/mixed_versions.sh OLD_BIN [NEW_BIN] [GPOOL_CLI] [BASE_PORT]
set -euo pipefail
OLD=${1:?usage: $0 OLD_COORDINATOR [NEW_COORDINATOR] [GPOOL_CLI] [BASE_PORT]}
NEW=${2:-build/control/gpool-coordinator}
G=${3:-build/client/gpool}
base=${4:-27400}
W=$(mktemp -d /tmp/gpool-upgrade-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "logs:" >&2; tail -n 5 "$W"/c*.log >&2; exit 1; }

peers="" clients=""
for r in 0 1 2; do
  id=$((r + 1)) p=$((base + 10 * r))
  peers+="${peers:+,}$id=tcp://127.0.0.1:$((p + 2))"
  clients+="${clients:+,}$id=tcp://127.0.0.1:$p"
done
start() {  # ID BINARY
  local id=$1 bin=$2 p=$((base + 10 * ($1 - 1)))
  mkdir -p -m 700 "$W/c$id"
  "$bin" --insecure --id "$id" --peers "$peers" --peer-clients "$clients" --data-dir "$W/c$id" \
    --client-addr "tcp://127.0.0.1:$p" --worker-addr "tcp://127.0.0.1:$((p + 1))" >>"$W/c$id.log" 2>&1 &
  pids[$id]=$!
}
cli() { "$G" --insecure "$@"; }
export GPOOL_COORDINATOR="tcp://127.0.0.1:$base,tcp://127.0.0.1:$((base + 10)),tcp://127.0.0.1:$((base + 20))"
version_of() { cli admin replica list | awk -v id="$1" '$1 == id { print $NF }'; }
wait_for() {  # SECONDS COMMAND...
  local until=$((SECONDS + $1)); shift
  until "$@"; do [ $SECONDS -lt $until ] || return 1; sleep 0.2; done
}

# 1 and 2 first, so a new replica leads; then 3 on the old binary.
start 1 "$NEW"; start 2 "$NEW"
wait_for 30 cli status >/dev/null 2>&1 || fail "no leader among replicas 1 and 2"
start 3 "$OLD"
lag_of() { cli admin replica list | awk -v id="$1" '$1 == id { print $5 }'; }
wait_for 30 bash -c "$(declare -f cli lag_of); G='$G'; [ \"\$(lag_of 3)\" = 0 ]" || fail "replica 3 did not catch up"
cli admin replica list
[ "$(version_of 3)" = - ] || fail "replica 3 says state version $(version_of 3): OLD_BIN sends one, it is not older"

set +e
out=$(cli credit add default 100 2>&1); rc=$?
set -e
echo "credit while 3 is old: rc=$rc $out"
[ $rc -ne 0 ] && grep -q 'FailedPrecondition.*replica 3' <<<"$out" || fail "a credit was not refused while replica 3 is old"
cli queue create team-a >/dev/null
set +e
out=$(cli queue grant-class team-a high 2>&1); rc=$?
set -e
echo "class grant while 3 is old: rc=$rc $out"
[ $rc -ne 0 ] && grep -q 'FailedPrecondition' <<<"$out" || fail "a class grant was not refused while replica 3 is old"
cli submit --name plain --gpus 0 -- true >/dev/null || fail "a plain submit was refused"

echo "upgrading replica 3 in place"
kill -TERM "${pids[3]}"; wait "${pids[3]}" 2>/dev/null || true
start 3 "$NEW"
wait_for 30 bash -c "$(declare -f cli version_of); G='$G'; [ \"\$(version_of 3)\" = 2 ]" || fail "replica 3 does not say version 2"
cli admin replica list
cli credit add default 100 || fail "a credit was refused after the upgrade"
cli queue grant-class team-a high || fail "a class grant was refused after the upgrade"
echo "PASS"
