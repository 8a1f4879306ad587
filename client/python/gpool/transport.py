"""One DEALER connection to a list of coordinator replicas (docs/protocol.md 2).

The lazy pirate of 2.7: one request in flight at a time; a timeout or a failed
send closes the socket and tries the next endpoint with a new request id; a
NotLeader moves to the leader it names (or to the next endpoint after a short,
doubling pause); any other ErrorReply is the answer. Callers resend only what
is safe to resend: SubmitJob always carries an idempotency key for that reason.

Pushes (WatchUpdate, protocol.md 7.19: envelope id 0, never answered) arrive
on the same socket, also while a request waits for its reply; they are kept
per watch id for the watches registered with watch_started() and handed out by
next_push(). A watch lives on one socket: `generation` counts the sockets
closed, so a watch made on an earlier one knows it must be made again.

Not thread-safe: use one Connection (one Client) per thread.
"""
from __future__ import annotations

import collections
import itertools
import os
import time
from typing import Any, Deque, Dict, List, Optional, Sequence

import msgpack  # type: ignore[import]  # Debian's has no stubs
import zmq

from .errors import GpoolError, Malformed, ResourceExhausted, Unavailable, InvalidArgument, error_from_reply
from .keys import KeyPair

PROTOCOL_VERSION = 1
# No coordinator reads a frame above this whole (protocol/envelope.h kMinReadableFrameBytes); a larger one
# could be dropped unanswered, which a client would only see as a timeout (2.3).
MAX_REQUEST_BYTES = 64 * 1024 * 1024
# 3.5: what the C++ client accepts from the coordinator.
MAX_REPLY_BYTES = 16 * 1024 * 1024
# Pushes kept per watch while nobody reads them; past it they are dropped, and the watch sees a seq gap
# and catches up with a new Watch (7.19), as if ZeroMQ had dropped them.
MAX_BUFFERED_PUSHES = 10000


def parse_endpoints(text: str) -> List[str]:
    """'a:7400, tcp://b:7400' -> ['tcp://a:7400', 'tcp://b:7400'] (2.1)."""
    endpoints = []
    for entry in text.split(","):
        entry = entry.strip()
        if not entry:
            continue
        endpoint = entry if "://" in entry else "tcp://" + entry
        if endpoint.startswith("tcp://") and ":" not in endpoint[len("tcp://"):]:
            raise InvalidArgument(f"coordinator endpoint '{entry}' has no port")
        endpoints.append(endpoint)
    if not endpoints:
        raise InvalidArgument("no coordinator endpoint given")
    return endpoints


class Connection:
    def __init__(self, endpoints: Sequence[str], *, token: str = "", timeout_ms: int = 5000, retries: int = 3,
                 connect_timeout_ms: int = 1000, curve_keys: Optional[KeyPair] = None,
                 server_keys: Sequence[str] = (), sender: str = "") -> None:
        if timeout_ms <= 0 or retries < 0 or connect_timeout_ms <= 0:
            raise InvalidArgument("timeout_ms and connect_timeout_ms must be positive, retries not negative")
        self.endpoints: List[str] = list(endpoints)
        if not self.endpoints:
            raise InvalidArgument("no coordinator endpoint given")
        self.current = 0
        self.token = token
        self.timeout_ms = timeout_ms
        self.retries = retries
        self.connect_timeout_ms = min(connect_timeout_ms, timeout_ms)
        self.sender = sender or f"gpool-py-{os.getpid()}"
        self.curve_keys = curve_keys if curve_keys and curve_keys.secret_key else None
        self._server_keys: Dict[str, str] = {}
        self._default_server_key = ""
        if self.curve_keys is not None:
            if len(server_keys) == 1:
                self._default_server_key = server_keys[0]
            elif len(server_keys) == len(self.endpoints):
                self._server_keys = dict(zip(self.endpoints, server_keys))
            else:
                raise InvalidArgument(f"give one coordinator public key, or one per endpoint "
                                      f"({len(self.endpoints)}); got {len(server_keys)}")
        self._context = zmq.Context.instance()
        self._socket: Optional[zmq.Socket[bytes]] = None
        self._ids = itertools.count(1)  # never 0, never reused on this connection (2.4)
        self._pushes: Dict[int, Deque[Dict[str, Any]]] = {}
        self.generation = 0  # sockets closed so far

    @property
    def endpoint(self) -> str:
        """The endpoint requests go to now: the last one that answered."""
        return self.endpoints[self.current]

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None
            self.generation += 1
            for pushes in self._pushes.values():
                pushes.clear()  # what the old socket had is the old watch's

    def watch_started(self, watch_id: int) -> None:
        self._pushes[watch_id] = collections.deque()

    def watch_ended(self, watch_id: int) -> None:
        self._pushes.pop(watch_id, None)

    def next_push(self, watch_id: int, timeout_ms: int) -> Optional[Dict[str, Any]]:
        """The next WatchUpdate body for `watch_id`, or None after timeout_ms (at once without a socket)."""
        buffered = self._pushes.get(watch_id)
        if buffered:
            return buffered.popleft()
        socket = self._socket
        if socket is None:
            return None
        deadline = time.monotonic() + timeout_ms / 1000
        while (left := deadline - time.monotonic()) > 0:
            if not socket.poll(int(left * 1000) + 1):
                return None
            self._receive(socket)
            if buffered:
                return buffered.popleft()
        return None

    def _keep_push(self, envelope: Dict[str, Any]) -> None:
        body = envelope.get("body")
        if not isinstance(body, dict):
            return
        pushes = self._pushes.get(body.get("watch_id"))  # type: ignore[arg-type]
        if pushes is not None and len(pushes) < MAX_BUFFERED_PUSHES:
            pushes.append(body)

    def _receive(self, socket: "zmq.Socket[bytes]") -> Optional[Dict[str, Any]]:
        """One frame off the socket: a reply envelope, or None for a push (kept) or a multipart message."""
        parts = socket.recv_multipart()
        if len(parts) != 1:
            return None  # the coordinator always sends exactly one frame
        try:
            envelope = msgpack.unpackb(parts[0], raw=False, unicode_errors="surrogateescape",
                                       strict_map_key=False)
        except (ValueError, msgpack.UnpackException) as e:
            raise Malformed(f"the coordinator's reply does not decode: {e}") from None
        if not isinstance(envelope, dict):
            raise Malformed("the coordinator's reply is not a map")
        if envelope.get("type") == "WatchUpdate" and envelope.get("id") == 0:
            self._keep_push(envelope)
            return None
        return envelope

    def _server_key(self, endpoint: str) -> str:
        key = self._server_keys.get(endpoint, self._default_server_key)
        if not key:
            raise Unavailable(f"no coordinator public key for {endpoint} (a redirect named a replica whose key "
                              f"was not given); give one key for every replica")
        return key

    def _open(self) -> "zmq.Socket[bytes]":
        if self._socket is None:
            socket = self._context.socket(zmq.DEALER)  # never REQ: no empty delimiter frame (2.2)
            socket.setsockopt(zmq.LINGER, 0)
            # Queue nothing until a connection is up, and give up on a send after connect_timeout_ms.
            socket.setsockopt(zmq.IMMEDIATE, 1)
            socket.setsockopt(zmq.SNDTIMEO, self.connect_timeout_ms)
            socket.setsockopt(zmq.MAXMSGSIZE, MAX_REPLY_BYTES)
            if self.curve_keys is not None:
                try:
                    socket.curve_serverkey = self._server_key(self.endpoint).encode("ascii")
                    socket.curve_publickey = self.curve_keys.public_key.encode("ascii")
                    socket.curve_secretkey = self.curve_keys.secret_key.encode("ascii")
                except GpoolError:
                    socket.close(linger=0)
                    raise
            socket.connect(self.endpoint)
            self._socket = socket
        return self._socket

    def _next_endpoint(self) -> None:
        self.current = (self.current + 1) % len(self.endpoints)

    def _use_leader(self, leader: str) -> None:
        leader = leader if "://" in leader else "tcp://" + leader
        if leader not in self.endpoints:
            self.endpoints.append(leader)  # a replica the caller did not list
        self.current = self.endpoints.index(leader)

    def _await(self, socket: "zmq.Socket[bytes]", request_id: int, timeout_ms: int) -> Optional[Dict[str, Any]]:
        deadline = time.monotonic() + timeout_ms / 1000
        while (left := deadline - time.monotonic()) > 0:
            if not socket.poll(int(left * 1000) + 1):
                return None
            reply = self._receive(socket)
            if reply is None:
                continue
            reply_id = reply.get("id")
            if reply_id == request_id or (reply_id == 0 and reply.get("type") == "ErrorReply"):
                return reply  # id 0: an error the coordinator could not attribute (2.4)
            # else a late reply to an earlier attempt: drop it
        return None

    def call(self, msg_type: str, body: Dict[str, Any], reply_type: str,
             timeout_ms: Optional[int] = None) -> Dict[str, Any]:
        """Sends one request, following redirects and retrying; the reply's body."""
        timeout_ms = timeout_ms or self.timeout_ms
        last: GpoolError = Unavailable("no attempt made")
        for attempt in range(1 + self.retries):
            request_id = next(self._ids)
            frame = msgpack.packb({"v": PROTOCOL_VERSION, "type": msg_type, "id": request_id,
                                   "from": self.sender, "epoch": 0, "token": self.token, "body": body},
                                  use_bin_type=True)
            if len(frame) > MAX_REQUEST_BYTES:
                raise ResourceExhausted(f"the request is {len(frame)} bytes; no coordinator reads requests over "
                                        f"{MAX_REQUEST_BYTES} bytes")
            endpoint = self.endpoint
            socket = self._open()
            try:
                socket.send(frame)  # exactly one frame
            except zmq.Again:
                last = Unavailable(f"cannot connect to the coordinator at {endpoint} within "
                                   f"{self.connect_timeout_ms} ms")
                self.close()
                self._next_endpoint()
                continue
            reply = self._await(socket, request_id, timeout_ms)
            if reply is None:
                last = Unavailable(f"coordinator at {endpoint} did not answer within {timeout_ms} ms")
                self.close()  # lazy pirate: a fresh socket, a new request id
                self._next_endpoint()
                continue
            reply_body = reply.get("body")
            if not isinstance(reply_body, dict):
                raise Malformed(f"the coordinator's {reply.get('type')} has no body map")
            if reply.get("type") == "ErrorReply":
                code, message = str(reply_body.get("code", "")), str(reply_body.get("message", ""))
                leader = str(reply_body.get("leader", "") or "")
                if code != "NotLeader":
                    raise error_from_reply(code, message)
                last = error_from_reply(code, message, leader)
                self.close()
                if leader:
                    self._use_leader(leader)
                else:
                    # No leader known (an election, or a leader catching up): try the next one a little later.
                    self._next_endpoint()
                    time.sleep(min(timeout_ms, 100 << min(attempt, 6)) / 1000)
                continue
            if reply.get("type") != reply_type:
                raise Malformed(f"expected {reply_type}, got {reply.get('type')}")
            return reply_body
        raise last
