#!/bin/bash
# gpool-worker-entrypoint: runs the node agent of a DaemonSet
# (deploy/kubernetes/worker-daemonset.yaml).
#
# It finds the coordinators by their StatefulSet's DNS names, makes this
# node's key pair on first start (kept in the data dir, a hostPath, so the
# node's name stays bound to it), and execs gpool-worker with those flags and
# its own arguments after them.
#
# Environment:
#   GPOOL_NODE_NAME       the node's name (the DaemonSet: spec.nodeName); required
#   GPOOL_COORDINATOR_SERVICE    the coordinators' headless Service (default: gpool-coordinator)
#   GPOOL_COORDINATOR_SET        their StatefulSet (default: the Service's name)
#   GPOOL_COORDINATOR_NAMESPACE  their namespace (default: gpool)
#   GPOOL_REPLICAS        how many coordinator replicas (default: 3)
#   GPOOL_CLUSTER_DOMAIN  (default: cluster.local)
#   GPOOL_PUBKEY_DIR      coordinator-<id>.pub for every replica (default: /etc/gpool/coordinator)
#   GPOOL_DATA_DIR        (default: /var/lib/gpool/worker); node.key lives here
#   GPOOL_HTTP_ADDRESS    (default: 0.0.0.0:7481; none: no HTTP port)
#   GPOOL_HTTP_TLS_DIR    tls.crt and tls.key: /metrics over HTTPS; without them
#                         plain HTTP (--http-insecure, warned; on every address,
#                         loopback too: issue 48) (default: /etc/gpool/http-tls)
#   GPOOL_INSECURE=1      no keys: plaintext (--insecure), for trying it out only
#   GPOOL_WORKER_BIN, GPOOL_CLI_BIN  (default: /usr/local/bin/gpool-worker, /usr/local/bin/gpool)
# Exit 2 with a message for a setting it cannot use.
set -euo pipefail

fail() { echo "gpool-worker-entrypoint: $*" >&2; exit 2; }

node=${GPOOL_NODE_NAME:-}
service=${GPOOL_COORDINATOR_SERVICE:-gpool-coordinator}
set_name=${GPOOL_COORDINATOR_SET:-$service}
namespace=${GPOOL_COORDINATOR_NAMESPACE:-gpool}
replicas=${GPOOL_REPLICAS:-3}
domain=${GPOOL_CLUSTER_DOMAIN:-cluster.local}
pub_dir=${GPOOL_PUBKEY_DIR:-/etc/gpool/coordinator}
data_dir=${GPOOL_DATA_DIR:-/var/lib/gpool/worker}
http=${GPOOL_HTTP_ADDRESS:-0.0.0.0:7481}
bin=${GPOOL_WORKER_BIN:-/usr/local/bin/gpool-worker}
cli=${GPOOL_CLI_BIN:-/usr/local/bin/gpool}

[[ -n $node ]] || fail "GPOOL_NODE_NAME is not set (the DaemonSet passes spec.nodeName)"
[[ $replicas =~ ^[1-9][0-9]*$ ]] || fail "GPOOL_REPLICAS '$replicas' is not a positive number"

endpoints="" keys=""
for ((i = 1; i <= replicas; i++)); do
  endpoints+="${endpoints:+,}tcp://$set_name-$((i - 1)).$service.$namespace.svc.$domain:7401"
  keys+="${keys:+,}$pub_dir/coordinator-$i.pub"
done

args=(--node-name "$node" --coordinator "$endpoints" --data-dir "$data_dir" --http-address "$http")
http_tls=${GPOOL_HTTP_TLS_DIR:-/etc/gpool/http-tls}
if [[ $http == none ]]; then
  :  # off: the port's flags would be refused
elif [[ -r $http_tls/tls.crt && -r $http_tls/tls.key ]]; then
  args+=(--http-cert "$http_tls/tls.crt" --http-key "$http_tls/tls.key")
else
  echo "gpool-worker-entrypoint: no $http_tls/tls.crt and tls.key: /metrics is served over plain HTTP" \
       "(--http-insecure)" >&2
  args+=(--http-insecure)
fi
if [[ ${GPOOL_INSECURE:-} == 1 ]]; then
  args+=(--insecure)
else
  for ((i = 1; i <= replicas; i++)); do
    [[ -r $pub_dir/coordinator-$i.pub ]] || fail "no $pub_dir/coordinator-$i.pub (replica $i's public key)"
  done
  mkdir -p "$data_dir"
  if [[ ! -e $data_dir/node.key ]]; then
    "$cli" admin keygen --out "$data_dir/node" >&2 || fail "cannot make the node key in $data_dir"
  fi
  args+=(--key-file "$data_dir/node.key" --coordinator-key "$keys")
fi

exec "$bin" "${args[@]}" "$@"
