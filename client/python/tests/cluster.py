"""A gpool cluster on 127.0.0.1 for the SDK's tests: coordinator replicas and workers with simulated GPUs.

Binaries come from the environment (set by client/python/CMakeLists.txt):
GPOOL_COORDINATOR_BIN, GPOOL_WORKER_BIN, GPOOL_CLI_BIN, and for rGPU sessions
GPOOL_RGPU_SERVER_BIN, GPOOL_CUDA_INTERPOSER_LIB, GPOOL_FAKE_CUDA_LIB (derived
from GPOOL_WORKER_BIN's build tree when unset). Every process is started in a
process group of its own and stopped by that group's id, so tasks its worker
started go with it. Ports are ephemeral (port 0) where the coordinator allows;
replicas, which must know each other's ports before they start, get free
loopback ports picked just before. No process serves HTTP (the default since
issue 48): the SDK speaks only the ZeroMQ protocol.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, TypeVar

import gpool
from gpool.keys import generate_key_pair, write_key_pair

T = TypeVar("T")


def binary(name: str) -> str:
    path = os.environ.get(name, "")
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError(f"{name} must name the built binary (got '{path}'); ctest sets it, see "
                           f"client/python/CMakeLists.txt")
    return path


def session_binaries() -> Dict[str, str]:
    """The rGPU pieces a worker needs to open sessions, from the environment or the worker's build tree."""
    worker_dir = os.path.dirname(binary("GPOOL_WORKER_BIN"))
    defaults = {"GPOOL_RGPU_SERVER_BIN": os.path.join(worker_dir, "rgpu", "gpool-rgpu-server"),
                "GPOOL_CUDA_INTERPOSER_LIB": os.path.join(worker_dir, "cuda", "libgpool-cuda.so.1"),
                "GPOOL_FAKE_CUDA_LIB": os.path.join(worker_dir, "cuda", "fake_driver", "libcuda.so.1")}
    found = {name: os.environ.get(name) or default for name, default in defaults.items()}
    for name, path in found.items():
        if not os.path.exists(path):
            raise RuntimeError(f"{name}: {path} does not exist (build gpool-rgpu-server and the CUDA libraries)")
    return found


def wait_for(what: str, check: Callable[[], Optional[T]], timeout_s: float = 30.0, interval_s: float = 0.1) -> T:
    """Polls check() until it returns something other than None/False; its value. Fails after timeout_s."""
    deadline = time.monotonic() + timeout_s
    last_error: Optional[BaseException] = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value is not None and value is not False:
                return value
        except gpool.GpoolError as e:
            last_error = e
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}" +
                         (f" (last error: {last_error})" if last_error else ""))


def free_ports(count: int) -> List[int]:
    held = []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        held.append(s)
    ports = [s.getsockname()[1] for s in held]
    for s in held:
        s.close()
    return ports


class Process:
    def __init__(self, name: str, argv: Sequence[str], log_path: str, env: Optional[Dict[str, str]] = None) -> None:
        self.name, self.log_path = name, log_path
        with open(log_path, "ab") as log:
            self.popen = subprocess.Popen(list(argv), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          env={**os.environ, **(env or {})}, start_new_session=True)

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    def stop(self) -> None:
        """SIGTERM to its process group, SIGKILL after 10 s."""
        pgid = self.popen.pid  # start_new_session: the group's id is the pid
        for sig, grace_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            try:
                self.popen.wait(timeout=grace_s)
                break
            except subprocess.TimeoutExpired:
                continue
        try:
            os.killpg(pgid, signal.SIGKILL)  # whatever of the group outlived its leader
        except ProcessLookupError:
            pass
        self.popen.wait(timeout=5)

    def log(self) -> str:
        with open(self.log_path, errors="replace") as f:
            return f.read()[-4000:]


class LocalCluster:
    def __init__(self, directory: str, *, replicas: int = 1, workers: int = 1, gpus_per_worker: int = 2,
                 secure: bool = False, sessions: bool = False, coordinator_flags: Sequence[str] = (),
                 token: str = "") -> None:
        self.dir, self.secure, self.token = directory, secure, token
        self.replicas, self.workers_count, self.gpus = replicas, workers, gpus_per_worker
        self.sessions, self.coordinator_flags = sessions, list(coordinator_flags)
        self.processes: List[Process] = []
        self.client_endpoints: List[str] = []
        self.worker_endpoints: List[str] = []
        if secure:
            for name in [f"replica-{i + 1}" for i in range(replicas)] + ["admin"]:
                self.make_key(name)

    # --- keys ------------------------------------------------------------------------------------------

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def make_key(self, name: str) -> str:
        """NAME.key and NAME.pub in the cluster's directory; the public key."""
        if not os.path.exists(self.path(name + ".key")):
            write_key_pair(self.path(name), generate_key_pair())
        return gpool.read_public_key_file(self.path(name + ".pub"))

    @property
    def coordinator_key_files(self) -> List[str]:
        return [self.path(f"replica-{i + 1}.pub") for i in range(self.replicas)]

    def client(self, key: str = "admin", endpoints: Optional[Sequence[str]] = None, **options: Any) -> gpool.Client:
        """A Client of this cluster: as user `key` (its NAME.key) when secure."""
        endpoints = list(endpoints or self.client_endpoints)
        if not self.secure:
            options.setdefault("token", self.token)
            return gpool.Client(endpoints, insecure=True, **options)  # type: ignore[arg-type]
        files = self.coordinator_key_files
        by_endpoint = dict(zip(self.client_endpoints, files))
        return gpool.Client(endpoints, key_file=self.path(key + ".key"),  # type: ignore[arg-type]
                            coordinator_key=[by_endpoint[e] for e in endpoints], **options)

    def cli_args(self) -> List[str]:
        security = (["--key-file", self.path("admin.key"), "--coordinator-key", ",".join(self.coordinator_key_files)]
                    if self.secure else ["--insecure"])
        return [binary("GPOOL_CLI_BIN"), "--coordinator", ",".join(self.client_endpoints)] + security

    # --- processes -------------------------------------------------------------------------------------

    def start(self) -> "LocalCluster":
        try:
            self._start_coordinators()
            for i in range(self.workers_count):
                self._start_worker(i)
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_coordinators(self) -> None:
        replicated = self.replicas > 1
        ports = free_ports(2 * self.replicas) if replicated else []
        clients = [f"tcp://127.0.0.1:{p}" for p in ports[:self.replicas]] or ["tcp://127.0.0.1:0"]
        peers = [f"tcp://127.0.0.1:{p}" for p in ports[self.replicas:]]
        for i in range(self.replicas):
            data_dir = self.path(f"coordinator-{i + 1}")
            argv = [binary("GPOOL_COORDINATOR_BIN"), "--data-dir", data_dir, "--client-addr", clients[i],
                    "--worker-addr", "tcp://127.0.0.1:0", "--heartbeat-ms", "200", "--node-timeout-ms", "2000"]
            if replicated:
                argv += ["--id", str(i + 1),
                         "--peers", ",".join(f"{j + 1}={p}" for j, p in enumerate(peers)),
                         "--peer-clients", ",".join(f"{j + 1}={c}" for j, c in enumerate(clients))]
            if self.secure:
                argv += ["--key-file", self.path(f"replica-{i + 1}.key"), "--admin-key", self.path("admin.pub")]
                if replicated:
                    argv += ["--peer-keys", ",".join(f"{j + 1}={f}" for j, f in enumerate(self.coordinator_key_files))]
            else:
                argv.append("--insecure")
            argv += self._token_flags() + self.coordinator_flags
            self.processes.append(Process(f"coordinator-{i + 1}", argv, self.path(f"coordinator-{i + 1}.log")))
        for i in range(self.replicas):
            endpoints = wait_for(f"coordinator {i + 1}'s endpoints file",
                                 lambda: self._endpoints(self.path(f"coordinator-{i + 1}"), self.processes[i]), 20)
            self.client_endpoints.append(endpoints["client"])
            self.worker_endpoints.append(endpoints["worker"])

    @staticmethod
    def _endpoints(data_dir: str, process: Process) -> Optional[Dict[str, str]]:
        if not process.running:
            raise AssertionError(f"{process.name} exited: {process.log()}")
        try:
            with open(os.path.join(data_dir, "endpoints")) as f:
                lines = [line.split() for line in f if line.strip()]
        except FileNotFoundError:
            return None
        found = {parts[0]: parts[1] for parts in lines if len(parts) == 2}
        return found if "client" in found and "worker" in found else None

    def _start_worker(self, index: int) -> None:
        name = f"node-{index}"
        spec = self.path(name + ".yaml")
        with open(spec, "w") as f:
            f.write(f"name: {name}\ncpus: 32\nmemory: 256Gi\ngpus:\n  count: {self.gpus}\n"
                    f"  model: A100-SXM4-80GB\n  memory: 80Gi\n")
        argv = [binary("GPOOL_WORKER_BIN"), "--coordinator", ",".join(self.worker_endpoints), "--spec", spec,
                "--data-dir", self.path(f"worker-{index}")]
        argv += (["--key-file", self.path(name + ".key"), "--coordinator-key", ",".join(self.coordinator_key_files)]
                 if self.secure else ["--insecure"])
        if self.secure:
            self.make_key(name)
            self._enrol(name)
        argv += self._token_flags()
        env = {}
        if self.sessions:
            libs = session_binaries()
            argv += ["--cuda-interposer", libs["GPOOL_CUDA_INTERPOSER_LIB"],
                     "--cuda-real-driver", libs["GPOOL_FAKE_CUDA_LIB"],
                     "--rgpu-server", libs["GPOOL_RGPU_SERVER_BIN"], "--rgpu-address", "127.0.0.1",
                     "--task-env-pass", "LD_LIBRARY_PATH",
                     # The fake driver holds no memory for contexts: neither may a share.
                     "--cuda-object-costs", "none"]
            env["LD_LIBRARY_PATH"] = os.path.dirname(libs["GPOOL_FAKE_CUDA_LIB"])
        self.processes.append(Process(name, argv, self.path(name + ".log"), env))

    def _enrol(self, name: str) -> None:
        """Binds the node's key to its name before its worker starts, as an operator does on a cluster that
        admits nodes by admission (docs/operations.md 2.3); retried until a leader takes the request."""
        argv = ["admin", "node", "enrol", name, "--node-key", self.path(name + ".pub")]
        wait_for(f"{name}'s key enrolled", lambda: self.run_cli(*argv).returncode == 0, timeout_s=30)

    def _token_flags(self) -> List[str]:
        """--token-file for a cluster with a token; the file has surrounding whitespace, which is trimmed."""
        if not self.token:
            return []
        path = self.path("token")
        with open(path, "w") as f:
            f.write(f"  {self.token}\n")
        return ["--token-file", path]

    def wait_ready(self) -> None:
        with self.client(timeout_ms=2000) as c:
            wait_for("a serving leader", lambda: c.status().role == "leader")
            wait_for(f"{self.workers_count} Ready nodes",
                     lambda: sum(n.ready for n in c.nodes()) >= self.workers_count)

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()

    def logs(self) -> str:
        return "\n".join(f"---- {p.name}\n{p.log()}" for p in self.processes)

    def run_cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(self.cli_args() + list(args), capture_output=True, text=True, timeout=60)
