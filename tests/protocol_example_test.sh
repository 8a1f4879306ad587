#!/usr/bin/env bash
# The example client of docs/protocol.md section 15 (docs/examples/gpool_client.py)
# against three coordinator replicas on 127.0.0.1, secured as by default (CurveZMQ,
# a key pair per replica, the client as the --admin-key user): with a follower first in
# GPOOL_COORDINATOR it must follow the NotLeader redirect to the leader, and
# with the list in other orders (host:port entries, spaces, an endpoint where
# nothing listens) it must still get through. Each submitted job must then
# exist, as the CLI sees it. A key the cluster does not know gets nowhere. Also checks that the script shown in the doc is
# the file, byte for byte.
#
# usage: protocol_example_test.sh GPOOL_COORDINATOR_BIN GPOOL_CLI_BIN
# Needs /usr/bin/python3 with python3-zmq and python3-msgpack (deploy/install-deps.sh).
# GPOOL_TEST_KEEP=1 keeps the work directory (logs, data dirs).
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 GPOOL_COORDINATOR_BIN GPOOL_CLI_BIN" >&2
  exit 2
fi
COORDINATOR=$1
CLI=$2
SOURCE_DIR=$(cd "$(dirname "$0")/.." && pwd)
EXAMPLE=$SOURCE_DIR/docs/examples/gpool_client.py
DOC=$SOURCE_DIR/docs/protocol.md
PYTHON=/usr/bin/python3  # the system one: python3-zmq and python3-msgpack live there

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

"$PYTHON" -c 'import zmq, msgpack' 2>/dev/null ||
  fail "$PYTHON cannot import zmq and msgpack: install python3-zmq python3-msgpack (deploy/install-deps.sh)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpool-protocol-example.XXXXXX")
PIDS=()
cleanup() {
  local status=$?
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "$status" -ne 0 ]; then
    for log in "$WORK"/*.log; do
      [ -f "$log" ] || continue
      echo "---- last lines of $log" >&2
      tail -n 30 "$log" >&2
    done
  fi
  if [ "${GPOOL_TEST_KEEP:-0}" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The doc shows the script verbatim: the first python block of section 15.
"$PYTHON" - "$DOC" "$EXAMPLE" <<'EOF' || fail "docs/protocol.md section 15 does not show docs/examples/gpool_client.py verbatim"
import sys
doc, example = (open(path, encoding="utf-8").read() for path in sys.argv[1:3])
section = doc.split("\n## 15. ", 1)[1].split("\n## 16. ", 1)[0]
shown = section.split("```python\n", 1)[1].split("\n```\n", 1)[0] + "\n"
sys.exit(0 if shown == example else 1)
EOF

# Peer and client ports must be known to every replica before any starts
# (--peers, --peer-clients), so take free ones now; worker ports are ephemeral.
read -r -a PORTS <<<"$("$PYTHON" - <<'EOF'
import socket
held = []
for _ in range(7):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    held.append(s)
print(" ".join(str(s.getsockname()[1]) for s in held))
EOF
)"
CLIENT_EP=()
PEERS=""
CLIENTS=""
for i in 1 2 3; do
  CLIENT_EP[i]=tcp://127.0.0.1:${PORTS[i - 1]}
  PEERS+="${PEERS:+,}$i=tcp://127.0.0.1:${PORTS[i + 2]}"
  CLIENTS+="${CLIENTS:+,}$i=${CLIENT_EP[i]}"
done
DEAD_EP=tcp://127.0.0.1:${PORTS[6]}  # nothing listens there
ALL="${CLIENT_EP[1]},${CLIENT_EP[2]},${CLIENT_EP[3]}"

# Keys as docs/operations.md 2.1 has them: one pair per replica, the admin's, and a stranger's.
PEER_KEYS=""
for name in replica-1 replica-2 replica-3 admin stranger; do
  "$CLI" admin keygen --out "$WORK/$name" >/dev/null || fail "gpool admin keygen --out $WORK/$name failed"
done
for i in 1 2 3; do PEER_KEYS+="${PEER_KEYS:+,}$i=$WORK/replica-$i.pub"; done
keys_for() {  # keys_for REPLICA...: the replicas' public key files in that order, comma-separated
  local out="" i
  for i in "$@"; do out+="${out:+,}$WORK/replica-$i.pub"; done
  echo "$out"
}
export GPOOL_KEY_FILE=$WORK/admin.key

for i in 1 2 3; do
  "$COORDINATOR" --id "$i" --peers "$PEERS" --peer-clients "$CLIENTS" --data-dir "$WORK/c$i" \
    --client-addr "${CLIENT_EP[i]}" --worker-addr tcp://127.0.0.1:0 --key-file "$WORK/replica-$i.key" \
    --peer-keys "$PEER_KEYS" --admin-key "$WORK/admin.pub" >"$WORK/c$i.log" 2>&1 &
  PIDS+=($!)
done

json_field() {  # json_field FIELD: reads one JSON object on stdin, prints FIELD
  "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}

# A leader, and every follower knowing it: ClusterStatus through the CLI ends
# at the leader (followers redirect there); a follower that knows no leader
# answers for itself with role follower or candidate.
all_running() {
  local pid
  for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null || return 1; done
}
LEADER=""
deadline=$((SECONDS + 30))
while [ "$SECONDS" -lt "$deadline" ]; do
  all_running || fail "a coordinator replica exited"
  if status=$(GPOOL_COORDINATOR_KEY=$(keys_for 1 2 3) "$CLI" -c "$ALL" --timeout-ms 2000 --json status 2>/dev/null) &&
    [ "$(json_field role <<<"$status")" = leader ]; then
    LEADER=$(json_field replica_id <<<"$status")
    break
  fi
  sleep 0.1
done
[ -n "$LEADER" ] || fail "no leader elected among the three replicas within 30 s"
FOLLOWERS=()
for i in 1 2 3; do [ "$i" = "$LEADER" ] || FOLLOWERS+=("$i"); done
F1=${FOLLOWERS[0]}
F2=${FOLLOWERS[1]}
echo "leader: replica $LEADER at ${CLIENT_EP[LEADER]}; followers: $F1, $F2"

# Wait until both followers redirect (they know the leader's client endpoint).
for f in "$F1" "$F2"; do
  known=""
  deadline=$((SECONDS + 10))
  while [ "$SECONDS" -lt "$deadline" ]; do
    out=$(GPOOL_COORDINATOR=${CLIENT_EP[f]} GPOOL_COORDINATOR_KEY=$(keys_for "$f") "$PYTHON" - <<'EOF' 2>/dev/null || true
import os, msgpack, zmq
def key(path, name):
    return next(l.split("=", 1)[1].strip().strip('"') for l in open(path) if l.startswith(name)).encode()
s = zmq.Context.instance().socket(zmq.DEALER)
s.setsockopt(zmq.LINGER, 0)
s.curve_publickey = key(os.environ["GPOOL_KEY_FILE"], "public-key")
s.curve_secretkey = key(os.environ["GPOOL_KEY_FILE"], "secret-key")
s.curve_serverkey = key(os.environ["GPOOL_COORDINATOR_KEY"], "public-key")
s.connect(os.environ["GPOOL_COORDINATOR"])
s.send(msgpack.packb({"v": 1, "type": "ListJobs", "id": 1, "body": {}}))
if s.poll(2000):
    reply = msgpack.unpackb(s.recv(), raw=False)
    print(reply["body"].get("leader", "") if reply["type"] == "ErrorReply" else "")
s.close()
EOF
)
    if [ "$out" = "${CLIENT_EP[LEADER]}" ]; then known=1; break; fi
    sleep 0.1
  done
  [ -n "$known" ] || fail "follower $f does not name the leader in NotLeader replies"
done

JOBS=()
run_example() {  # run_example NAME GPOOL_COORDINATOR GPOOL_COORDINATOR_KEY [EXPECTED_STDERR]
  local name=$1 endpoints=$2 keys=$3 expect=${4:-}
  local out err
  echo "== $name: GPOOL_COORDINATOR='$endpoints'"
  if ! GPOOL_COORDINATOR=$endpoints GPOOL_COORDINATOR_KEY=$keys "$PYTHON" "$EXAMPLE" -v submit-and-status \
    >"$WORK/$name.out" 2>"$WORK/$name.err"; then
    cat "$WORK/$name.err" >&2
    fail "$name: the example client failed"
  fi
  out=$(cat "$WORK/$name.out")
  err=$(cat "$WORK/$name.err")
  echo "$out"
  [ -z "$err" ] || echo "$err"
  # The replica that answered ClusterStatus is the leader, and the client ended there. (Checked
  # against the reply rather than against $LEADER, so a re-election in between does not matter.)
  [ "$(json_field role <<<"$out")" = leader ] || fail "$name: ClusterStatus role is not leader: $out"
  [ "$(json_field endpoint <<<"$out")" = "${CLIENT_EP[$(json_field replica_id <<<"$out")]}" ] ||
    fail "$name: the client did not end at the replica that says it leads: $out"
  if [ -n "$expect" ]; then
    grep -qF -- "$expect" <<<"$err" || fail "$name: expected '$expect' on stderr"
  fi
  JOBS+=("$(json_field job_id <<<"$out")")
}

# A follower first: its NotLeader (epoch 0) names the leader, and the client goes there.
run_example follower-first "${CLIENT_EP[F1]},${CLIENT_EP[F2]},${CLIENT_EP[LEADER]}" \
  "$(keys_for "$F1" "$F2" "$LEADER")" "NotLeader from ${CLIENT_EP[F1]} (epoch 0); the leader is tcp://127.0.0.1:"
# Another order, host:port entries and spaces: the other follower first.
run_example other-order " 127.0.0.1:${PORTS[F2 - 1]} , ${CLIENT_EP[LEADER]},127.0.0.1:${PORTS[F1 - 1]}" \
  "$(keys_for "$F2" "$LEADER" "$F1")" "NotLeader from ${CLIENT_EP[F2]} (epoch 0); the leader is tcp://127.0.0.1:"
# Nothing listening at the first endpoint: the next one after the connect timeout (the dead
# endpoint's key is any key; the leader is listed, as a secured client must know its key).
run_example dead-first "$DEAD_EP,${CLIENT_EP[F1]},${CLIENT_EP[LEADER]}" "$(keys_for "$F1" "$F1" "$LEADER")" \
  "nothing accepted a connection at $DEAD_EP"

# A key the cluster does not know: the handshake never completes, so the client gives up, and
# no job is made. One endpoint, one attempt per try: about 4 s.
if GPOOL_KEY_FILE=$WORK/stranger.key GPOOL_COORDINATOR=${CLIENT_EP[LEADER]} \
  GPOOL_COORDINATOR_KEY=$(keys_for "$LEADER") "$PYTHON" "$EXAMPLE" submit-and-status \
  >"$WORK/stranger.out" 2>"$WORK/stranger.err"; then
  fail "a key the cluster does not know submitted a job: $(cat "$WORK/stranger.out")"
fi
grep -qF "Unavailable" "$WORK/stranger.err" || fail "the stranger's failure does not say Unavailable: $(cat "$WORK/stranger.err")"

# Every job exists, once, as the CLI sees it through any replica.
[ "${#JOBS[@]}" -eq 3 ] || fail "expected 3 job ids, got ${JOBS[*]}"
[ "$(printf '%s\n' "${JOBS[@]}" | sort -u | wc -l)" -eq 3 ] || fail "job ids are not distinct: ${JOBS[*]}"
# A follower first: the CLI follows its redirect too (every replica listed, each with its key).
jobs=$(GPOOL_COORDINATOR_KEY=$(keys_for "$F2" "$F1" "$LEADER") "$CLI" \
  -c "${CLIENT_EP[F2]},${CLIENT_EP[F1]},${CLIENT_EP[LEADER]}" --json jobs --all)
for id in "${JOBS[@]}"; do
  "$PYTHON" -c '
import json, sys
jobs = {j["job_id"]: j for j in json.loads(sys.argv[1])["jobs"]}
job = jobs.get(int(sys.argv[2]))
sys.exit(0 if job is not None and job["name"] == "doc-example" else 1)' "$jobs" "$id" ||
    fail "job $id is not in 'gpool jobs --all': $jobs"
  GPOOL_COORDINATOR_KEY=$(keys_for "$F1" "$LEADER") "$CLI" -c "${CLIENT_EP[F1]},${CLIENT_EP[LEADER]}" job "$id" >"$WORK/job-$id.txt" || fail "gpool job $id failed"
  grep -q "doc-example" "$WORK/job-$id.txt" || fail "gpool job $id does not show the job"
done
echo "jobs ${JOBS[*]} exist"
echo "PASS"
