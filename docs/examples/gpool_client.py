#!/usr/bin/python3
"""A gpool client written from docs/protocol.md alone.

Needs pyzmq and msgpack (Debian: python3-zmq python3-msgpack).
GPOOL_COORDINATOR (comma-separated endpoints, default tcp://127.0.0.1:7400;
host:port means tcp://host:port) and GPOOL_TOKEN as for the CLI. CurveZMQ keys as the
CLI finds them: GPOOL_KEY_FILE (your secret key file) and GPOOL_COORDINATOR_KEY (one public
key file, or one per endpoint in the same order), defaulting to ~/.config/gpool/user.key
and coordinator.pub; inside a task GPOOL_EXEC_TOKEN and GPOOL_COORDINATOR_PUBLIC_KEY;
plaintext only when none of these exist.

  gpool_client.py [-v] run                  submit a two-task job, wait for it, print its logs
  gpool_client.py [-v] submit-and-status    submit a one-task job; print its id and the
                                            ClusterStatus role as one line of JSON

-v prints every timeout, redirect and retry on stderr.
"""
import itertools
import json
import os
import sys
import time
import uuid

import msgpack
import zmq

TERMINAL = {"Succeeded", "Failed", "Cancelled"}


class GpoolError(Exception):
    def __init__(self, code, message, leader=""):
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.leader = code, message, leader


def parse_endpoints(text):
    """'a:7400, tcp://b:7400' -> ['tcp://a:7400', 'tcp://b:7400'] (protocol.md 2.1)."""
    endpoints = []
    for entry in text.split(","):
        entry = entry.strip()
        if entry:
            endpoints.append(entry if "://" in entry else "tcp://" + entry)
    if not endpoints:
        raise GpoolError("InvalidArgument", "no coordinator endpoint given")
    return endpoints


def read_key_file(path):
    """The fields of a gpool key file: public-key and secret-key, or "" for a file of one bare key."""
    fields = {}
    with open(path, encoding="ascii") as f:
        for line in f:
            line = line.strip()
            if not fields and len(line) == 40 and '"' not in line and " " not in line:
                fields[""] = line  # a bare Z85 key (Z85 has '#' and '=', so test this first)
            elif line and not line.startswith("#"):
                name, _, value = line.partition("=")
                fields[name.strip()] = value.strip().strip('"')
    return fields


def curve_keys(endpoints):
    """(public, secret, {endpoint: server key}) for CurveZMQ, or None for plaintext (operations.md 2.1)."""
    env = os.environ
    key_file, server_files = env.get("GPOOL_KEY_FILE"), env.get("GPOOL_COORDINATOR_KEY")
    if key_file is None and server_files is None:
        token, servers = env.get("GPOOL_EXEC_TOKEN", ""), env.get("GPOOL_COORDINATOR_PUBLIC_KEY", "")
        if len(token) == 40 and servers:  # inside a task: the task's own key, the replicas' keys
            return (zmq.curve_public(token.encode()).decode(), token,
                    match_server_keys(endpoints, servers.split(",")))
    config = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    explicit = key_file is not None
    key_file = key_file or os.path.join(config, "gpool", "user.key")
    files = (server_files or os.path.join(config, "gpool", "coordinator.pub")).split(",")
    if not explicit and not all(os.path.exists(f) for f in [key_file] + files):
        return None  # no keys set up: plaintext, which only an --insecure coordinator answers
    if os.stat(key_file).st_mode & 0o077:
        raise GpoolError("FailedPrecondition", f"{key_file}: group or others may read it; chmod 600 it")
    mine = read_key_file(key_file)
    servers = [(lambda f: f.get("") or f["public-key"])(read_key_file(f)) for f in files]
    return mine["public-key"], mine["secret-key"], match_server_keys(endpoints, servers)


def match_server_keys(endpoints, keys):
    """One key for every endpoint, or one per endpoint in the same order; "*" names the only key."""
    if len(keys) == 1:
        return {"*": keys[0]}
    if len(keys) != len(endpoints):
        raise GpoolError("InvalidArgument", f"{len(keys)} coordinator keys for {len(endpoints)} endpoints")
    return dict(zip(endpoints, keys))


class Client:
    """Lazy pirate over a list of coordinator replicas (protocol.md 2.7)."""

    def __init__(self, endpoints, token="", timeout_ms=5000, retries=3, connect_timeout_ms=1000,
                 verbose=False, curve=None):
        self.endpoints, self.current = list(endpoints), 0
        self.curve = curve  # curve_keys(endpoints), or None for plaintext
        self.token, self.timeout_ms, self.retries = token, timeout_ms, retries
        self.connect_timeout_ms = min(connect_timeout_ms, timeout_ms)
        self.verbose = verbose
        self.context = zmq.Context.instance()
        self.socket = None
        self.ids = itertools.count(1)  # request ids: never 0, never reused on a connection

    def endpoint(self):
        return self.endpoints[self.current]

    def _log(self, text):
        if self.verbose:
            print(f"gpool_client: {text}", file=sys.stderr)

    def _open(self):
        if self.socket is None:
            socket = self.context.socket(zmq.DEALER)  # not REQ: no empty delimiter frame
            socket.setsockopt(zmq.LINGER, 0)
            # Queue nothing until a connection is up, and give up on a send after
            # connect_timeout_ms: an endpoint where nothing listens costs 1 s, not the timeout.
            socket.setsockopt(zmq.IMMEDIATE, 1)
            socket.setsockopt(zmq.SNDTIMEO, self.connect_timeout_ms)
            if self.curve is not None:
                public, secret, servers = self.curve
                server = servers.get("*") or servers.get(self.endpoint())
                if server is None:
                    raise GpoolError("Unavailable", f"no coordinator key for {self.endpoint()} "
                                     "(GPOOL_COORDINATOR_KEY: one file, or one per endpoint)")
                socket.curve_publickey, socket.curve_secretkey = public.encode(), secret.encode()
                socket.curve_serverkey = server.encode()
            socket.connect(self.endpoint())
            self.socket = socket
        return self.socket

    def close(self):
        if self.socket is not None:
            self.socket.close()
            self.socket = None

    def _next_endpoint(self):
        self.current = (self.current + 1) % len(self.endpoints)

    def _use_leader(self, leader):
        leader = leader if "://" in leader else "tcp://" + leader
        if leader not in self.endpoints:
            self.endpoints.append(leader)  # a replica the caller did not list
        self.current = self.endpoints.index(leader)

    def _await(self, socket, request_id):
        """The reply envelope to request_id, or None after timeout_ms."""
        deadline = time.monotonic() + self.timeout_ms / 1000
        while (left := deadline - time.monotonic()) > 0:
            if not socket.poll(int(left * 1000) + 1):
                return None
            parts = socket.recv_multipart()
            if len(parts) != 1:
                continue  # the coordinator always sends exactly one frame
            # Log data arrives as msgpack bin (Python bytes); other strings as str.
            reply = msgpack.unpackb(parts[0], raw=False, unicode_errors="surrogateescape")
            reply_id = reply.get("id")
            if reply_id == request_id or (reply_id == 0 and reply.get("type") == "ErrorReply"):
                return reply  # id 0: an error the coordinator could not attribute (2.4)
            # else a late reply to an earlier attempt: drop it
        return None

    def call(self, msg_type, body, reply_type):
        """Sends one request, following redirects and retrying; returns the reply body (a dict).

        Raises GpoolError: the coordinator's error, or Unavailable once every attempt failed.
        Resend only what is safe to resend (2.7): SubmitJob only with an idempotency_key.
        """
        last = GpoolError("Unavailable", "no attempt made")
        for attempt in range(1 + self.retries):
            request_id = next(self.ids)
            frame = msgpack.packb({"v": 1, "type": msg_type, "id": request_id,
                                   "from": f"gpool_client-{os.getpid()}", "token": self.token,
                                   "body": body}, use_bin_type=True)
            endpoint = self.endpoint()
            socket = self._open()
            try:
                socket.send(frame)  # exactly one frame
            except zmq.Again:
                last = GpoolError("Unavailable", f"cannot connect to {endpoint} (or it refused this key)")
                self._log(f"{msg_type}: nothing accepted a connection at {endpoint}; trying the next endpoint")
                self.close()
                self._next_endpoint()
                continue
            reply = self._await(socket, request_id)
            if reply is None:
                last = GpoolError("Unavailable", f"{endpoint} did not answer within {self.timeout_ms} ms")
                self._log(f"{msg_type}: no answer from {endpoint}; trying the next endpoint")
                self.close()  # lazy pirate: a fresh socket, a new request id
                self._next_endpoint()
                continue
            if reply["type"] == "ErrorReply":
                error = reply["body"]
                code, message, leader = error["code"], error["message"], error.get("leader", "")
                if code != "NotLeader":
                    raise GpoolError(code, message)
                last = GpoolError(code, message, leader)
                self.close()
                if leader:
                    self._log(f"{msg_type}: NotLeader from {endpoint} (epoch {reply.get('epoch', 0)}); "
                              f"the leader is {leader}")
                    self._use_leader(leader)
                else:
                    # No leader known (an election, or a leader still catching up): wait a little.
                    pause_ms = min(self.timeout_ms, 100 << min(attempt, 6))
                    self._log(f"{msg_type}: NotLeader from {endpoint}, no leader known; "
                              f"trying the next endpoint in {pause_ms} ms")
                    self._next_endpoint()
                    time.sleep(pause_ms / 1000)
                continue
            if reply["type"] != reply_type:
                raise GpoolError("Malformed", f"expected {reply_type}, got {reply['type']}")
            return reply["body"]
        raise last


def submit(client, spec):
    # One key per logical submission, reused by every resend of it.
    return client.call("SubmitJob", {"spec": spec, "idempotency_key": uuid.uuid4().hex}, "SubmitJobReply")


def run(client):
    spec = {
        "name": "hello",
        "queue": "default",
        "priority": 0,
        "tasks": [{
            "name": "main",
            "replicas": 2,
            "command": ["sh", "-c", "echo task $GPOOL_TASK_INDEX/$GPOOL_NUM_TASKS on GPU $CUDA_VISIBLE_DEVICES"],
            "env": {"GREETING": "hello"},
            "resources": {"gpus": 1, "cpu_milli": 1000, "memory_mib": 2048},
        }],
    }
    job_id = submit(client, spec)["job_id"]
    print(f"submitted job {job_id}")

    while True:
        job = client.call("GetJob", {"job_id": job_id}, "GetJobReply")
        summary = job["summary"]
        print(f"job {job_id}: {summary['state']} {summary.get('reason', '')}".rstrip())
        if summary["state"] in TERMINAL:
            break
        time.sleep(1)

    for task in job["tasks"]:
        print(f"task {task['index']}: {task['state']} node={task.get('node', '')} "
              f"exit_code={task.get('exit_code', 0)}")
        try:
            log = client.call("GetTaskLog", {"job_id": job_id, "task_index": task["index"],
                                             "max_bytes": 4096}, "GetTaskLogReply")
            data = log["data"]  # bytes; a str from an older coordinator is accepted too
            if isinstance(data, str):
                data = data.encode("utf-8", "surrogateescape")
            sys.stdout.write(data.decode("utf-8", "replace"))
        except GpoolError as e:
            print(f"  (no log: {e})")
    return 0 if summary["state"] == "Succeeded" else 1


def submit_and_status(client):
    spec = {
        "name": "doc-example",
        "tasks": [{
            "name": "main",
            "command": ["sh", "-c", "echo hello from task $GPOOL_TASK_INDEX"],
            "resources": {"cpu_milli": 100, "memory_mib": 64},
        }],
    }
    submitted = submit(client, spec)
    status = client.call("ClusterStatus", {}, "ClusterStatusReply")
    print(json.dumps({"job_id": submitted["job_id"], "duplicate": submitted.get("duplicate", False),
                      "role": status["role"], "replica_id": status["replica_id"],
                      "term": status.get("term", 0), "endpoint": client.endpoint()}))
    return 0


def main(argv):
    args = argv[1:]
    verbose = "-v" in args
    args = [a for a in args if a != "-v"]
    command = args[0] if args else "run"
    commands = {"run": run, "submit-and-status": submit_and_status}
    if len(args) > 1 or command not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    client = None
    try:
        endpoints = parse_endpoints(os.environ.get("GPOOL_COORDINATOR", "tcp://127.0.0.1:7400"))
        client = Client(endpoints, os.environ.get("GPOOL_TOKEN", ""), verbose=verbose,
                        curve=curve_keys(endpoints))
        return commands[command](client)
    except GpoolError as e:
        print(f"gpool_client: {e}", file=sys.stderr)
        return 1
    except (OSError, KeyError) as e:  # an unreadable or malformed key file
        print(f"gpool_client: key file: {e}", file=sys.stderr)
        return 1
    finally:
        if client is not None:
            client.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
