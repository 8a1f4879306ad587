#!/bin/bash
# gpool-coordinator-entrypoint: runs one replica of a StatefulSet of
# coordinators (deploy/kubernetes/coordinator-statefulset.yaml).
#
# From the pod's name, <statefulset>-<ordinal>, it derives the replica id
# (ordinal + 1) and every replica's address from the StatefulSet's stable DNS
# names, <statefulset>-<i>.<service>.<namespace>.svc.<domain>, then execs
# gpool-coordinator with those flags and its own arguments after them.
#
# Environment (the StatefulSet sets the first two from the downward API):
#   GPOOL_POD_NAME        this pod's name (default: $HOSTNAME)
#   GPOOL_NAMESPACE       its namespace (default: gpool)
#   GPOOL_SERVICE         the headless Service (default: gpool-coordinator)
#   GPOOL_REPLICAS        how many replicas (default: 3)
#   GPOOL_INITIAL_REPLICAS  replicas of the first configuration; a replica with
#                         a higher id starts with --join, to be added with
#                         'gpool admin replica add' (default: GPOOL_REPLICAS)
#   GPOOL_CLUSTER_DOMAIN  (default: cluster.local)
#   GPOOL_KEY_DIR         coordinator-<id>.key and .pub for every id, admin.pub
#                         (default: /etc/gpool/keys, the Secret)
#   GPOOL_RUN_DIR         where this replica's secret key is copied with mode
#                         0600 (default: /run/gpool)
#   GPOOL_DATA_VOLUME     where the data volume is mounted (default:
#                         /var/lib/gpool/coordinator)
#   GPOOL_DATA_DIR        (default: $GPOOL_DATA_VOLUME/state). Not the volume's
#                         root: under fsGroup that is group-accessible, and the
#                         coordinator refuses a data dir group or others can
#                         reach (issue 48). A volume from before, with db/ at
#                         its root, is moved into state/ once, made private.
#   GPOOL_INSECURE=1      no keys: plaintext (--insecure), for trying it out only
#   GPOOL_HTTP_TLS_DIR    tls.crt and tls.key (a kubernetes.io/tls Secret): the
#                         HTTP port serves HTTPS (--http-cert/--http-key; then
#                         give the probes scheme: HTTPS). Without them it serves
#                         plain HTTP (--http-insecure, warned): API tokens cross
#                         the pod network in the clear (default: /etc/gpool/http-tls)
#   GPOOL_COORDINATOR_BIN (default: /usr/local/bin/gpool-coordinator)
# Ports: client 7400, worker 7401, peer 7402, HTTP 7480 (/healthz, /readyz,
# /metrics), every one on all interfaces.
# Exit 2 with a message for a pod name or key directory it cannot use.
set -euo pipefail

fail() { echo "gpool-coordinator-entrypoint: $*" >&2; exit 2; }

pod=${GPOOL_POD_NAME:-${HOSTNAME:-}}
namespace=${GPOOL_NAMESPACE:-gpool}
service=${GPOOL_SERVICE:-gpool-coordinator}
replicas=${GPOOL_REPLICAS:-3}
initial=${GPOOL_INITIAL_REPLICAS:-$replicas}
domain=${GPOOL_CLUSTER_DOMAIN:-cluster.local}
key_dir=${GPOOL_KEY_DIR:-/etc/gpool/keys}
run_dir=${GPOOL_RUN_DIR:-/run/gpool}
volume=${GPOOL_DATA_VOLUME:-/var/lib/gpool/coordinator}
data_dir=${GPOOL_DATA_DIR:-$volume/state}
bin=${GPOOL_COORDINATOR_BIN:-/usr/local/bin/gpool-coordinator}

[[ $pod =~ ^(.+)-([0-9]+)$ ]] || fail "pod name '$pod' is not <statefulset>-<ordinal>"
set_name=${BASH_REMATCH[1]}
ordinal=${BASH_REMATCH[2]}
[[ $replicas =~ ^[1-9][0-9]*$ ]] || fail "GPOOL_REPLICAS '$replicas' is not a positive number"
[[ $initial =~ ^[1-9][0-9]*$ ]] || fail "GPOOL_INITIAL_REPLICAS '$initial' is not a positive number"
id=$((10#$ordinal + 1))
(( id <= replicas )) || fail "pod $pod is replica $id, beyond GPOOL_REPLICAS=$replicas"

host() { echo "$set_name-$(($1 - 1)).$service.$namespace.svc.$domain"; }
list() {  # list PORT: ID=tcp://HOST:PORT,... for every replica
  local out="" i
  for ((i = 1; i <= replicas; i++)); do out+="${out:+,}$i=tcp://$(host "$i"):$1"; done
  echo "$out"
}

args=(--id "$id" --data-dir "$data_dir"
      --peers "$(list 7402)" --peer-clients "$(list 7400)" --peer-workers "$(list 7401)"
      --client-addr tcp://0.0.0.0:7400 --worker-addr tcp://0.0.0.0:7401 --peer-addr tcp://0.0.0.0:7402
      --http-address 0.0.0.0:7480)
http_tls=${GPOOL_HTTP_TLS_DIR:-/etc/gpool/http-tls}
if [[ -r $http_tls/tls.crt && -r $http_tls/tls.key ]]; then
  args+=(--http-cert "$http_tls/tls.crt" --http-key "$http_tls/tls.key")
else
  echo "gpool-coordinator-entrypoint: no $http_tls/tls.crt and tls.key: the HTTP port serves plain HTTP" \
       "(--http-insecure); mount a TLS Secret there" >&2
  args+=(--http-insecure)
fi
(( id > initial )) && args+=(--join)

if [[ ${GPOOL_INSECURE:-} == 1 ]]; then
  args+=(--insecure)
else
  [[ -r $key_dir/coordinator-$id.key ]] ||
    fail "no $key_dir/coordinator-$id.key (this replica's secret key; or GPOOL_INSECURE=1)"
  mkdir -p "$run_dir"
  # The coordinator refuses a secret key file others can read: copy it, 0600.
  install -m 0600 "$key_dir/coordinator-$id.key" "$run_dir/coordinator.key"
  peer_keys=""
  for ((i = 1; i <= replicas; i++)); do
    [[ -r $key_dir/coordinator-$i.pub ]] || fail "no $key_dir/coordinator-$i.pub (replica $i's public key)"
    peer_keys+="${peer_keys:+,}$i=$key_dir/coordinator-$i.pub"
  done
  args+=(--key-file "$run_dir/coordinator.key" --peer-keys "$peer_keys")
  [[ -r $key_dir/admin.pub ]] && args+=(--admin-key "$key_dir/admin.pub")
fi

# The old layout (db/ and endpoints at the volume's root, before issue 48):
# moved into the private data dir once, every file made private.
if [[ -z ${GPOOL_DATA_DIR:-} && -d $volume/db && ! -e $data_dir ]]; then
  mkdir -m 0700 "$data_dir"
  for f in db endpoints; do
    if [[ -e $volume/$f ]]; then mv "$volume/$f" "$data_dir/"; fi
  done
  chmod -R go-rwx "$data_dir"
  echo "gpool-coordinator-entrypoint: moved the data dir from $volume into $data_dir (mode 0700)" >&2
fi

exec "$bin" "${args[@]}" "$@"
