"""A scripted fake coordinator (a ROUTER on 127.0.0.1) for transport and watch tests: each request is
answered with the next scripted list of frames, which may carry pushes (envelope id 0) too."""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional

import msgpack  # type: ignore[import]
import zmq

Reply = Callable[[Dict[str, Any]], List[bytes]]


class FakeCoordinator:
    """Answers each request with the next scripted reply: a function of the request giving frames to send."""

    def __init__(self, script: List[Reply]) -> None:
        self.socket = zmq.Context.instance().socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        port = self.socket.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = f"tcp://127.0.0.1:{port}"
        self.script = list(script)
        self.requests: List[Dict[str, Any]] = []
        self.frame_counts: List[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set() and self.script:
            if not self.socket.poll(50):
                continue
            routing_id, *frames = self.socket.recv_multipart()
            self.frame_counts.append(len(frames))
            request = msgpack.unpackb(frames[-1], raw=False)
            self.requests.append(request)
            for frame in self.script.pop(0)(request):
                self.socket.send_multipart([routing_id, frame])

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.socket.close()


def envelope(request: Dict[str, Any], msg_type: str, body: Dict[str, Any], request_id: Optional[int] = None) -> bytes:
    return msgpack.packb({"v": 1, "type": msg_type, "id": request["id"] if request_id is None else request_id,
                          "from": "coordinator", "epoch": 1, "token": "", "body": body}, use_bin_type=True)


def ok_jobs(request: Dict[str, Any]) -> List[bytes]:
    return [envelope(request, "ListJobsReply", {"jobs": [{"job_id": 3, "name": "x", "state": "Running"}]})]


def fake(fakes: List[FakeCoordinator], *script: Reply) -> FakeCoordinator:
    fakes.append(FakeCoordinator(list(script)))
    return fakes[-1]
