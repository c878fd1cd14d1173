"""A throwaway Ray cluster on 127.0.0.1 (a head and a worker, each its own `ray start`): the runner tests, the bench.

Each node runs `ray start --block` in its own process group, so a test can kill one node (the worker) and the
teardown ends exactly these processes, never another Ray on the machine. HOME is a temporary folder and
RAY_AUTH_MODE is set explicitly: a plain Ray start writes an auth token into ~/.ray otherwise.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

RAY = Path(sys.executable).with_name("ray")
READY_CEILING_S = 180.0
"""How long the nodes may take to come up on a loaded machine: a hang guard, not a budget."""
START_TRIES = 3
"""Whole cluster starts before giving up. `ray start` waits a fixed 30 s for its raylet to register with the GCS
and exits when a loaded machine is slower than that; a fresh start (new ports, new temp dir) is the remedy."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NodeExited(RuntimeError):
    """A node's `ray start` ended before the cluster was up."""


class Cluster:
    def __init__(self, root: Path):
        self.root = root
        self.home = root / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self._ports()
        self.env = {**os.environ, "HOME": str(self.home), "RAY_AUTH_MODE": "disabled",
                    "RAY_USAGE_STATS_ENABLED": "0"}
        self.nodes: dict[str, subprocess.Popen] = {}
        self.attempt = 1

    def _ports(self) -> None:
        self.port, self.dashboard_port = free_port(), free_port()
        self.address = f"http://127.0.0.1:{self.dashboard_port}"

    def start(self) -> Cluster:
        """Head, worker, and a first job run; a node that exits while starting is a fresh start of the whole
        cluster, up to START_TRIES (each node's log of every try is kept under root)."""
        for attempt in range(1, START_TRIES + 1):
            try:
                return self._start(attempt)
            except NodeExited:
                self.stop()
                if attempt == START_TRIES:
                    raise
                self.nodes.clear()
                self._ports()
        raise AssertionError("unreachable")

    def _start(self, attempt: int) -> Cluster:
        self.attempt = attempt
        temp = self.root / f"t{attempt}"  # short: Ray's socket paths must fit in 107 bytes
        self._node("head", "--head", f"--port={self.port}", "--dashboard-host=127.0.0.1",
                   f"--dashboard-port={self.dashboard_port}", "--include-dashboard=true", f"--temp-dir={temp}",
                   "--num-cpus=1", "--resources=" + json.dumps({"optseq_bench": 1, "head_node": 1}))
        self.wait_nodes(1)
        self.start_worker()
        self.wait_jobs()
        return self

    def start_worker(self) -> None:
        self._node("worker", f"--address=127.0.0.1:{self.port}", "--num-cpus=1",
                   "--resources=" + json.dumps({"optseq_bench": 1, "worker_node": 1}))
        self.wait_nodes(2)

    def wait_jobs(self) -> None:
        """Until a job can be submitted and run: the nodes' job agents start after the nodes do."""
        end = time.monotonic() + READY_CEILING_S
        client = self.client()
        while True:
            try:
                probe = client.submit_job(entrypoint="true")
                break
            except Exception:
                if time.monotonic() > end:
                    raise
                time.sleep(0.5)
        while not str(client.get_job_status(probe)).endswith(("SUCCEEDED", "FAILED", "STOPPED")):
            if time.monotonic() > end:
                raise RuntimeError("the Ray cluster's first job never ended")
            time.sleep(0.2)

    def log_path(self, name: str) -> Path:
        return self.root / f"{name}.{self.attempt}.log"

    def _node(self, name: str, *args: str) -> None:
        log = open(self.log_path(name), "wb")
        # two nodes on one machine: each its own agent ports (Ray's defaults would collide)
        ports = [f"--dashboard-agent-listen-port={free_port()}", f"--dashboard-agent-grpc-port={free_port()}",
                 f"--metrics-export-port={free_port()}", f"--runtime-env-agent-port={free_port()}"]
        self.nodes[name] = subprocess.Popen([str(RAY), "start", "--block", "--node-ip-address=127.0.0.1",
                                             "--disable-usage-stats", *ports, *args], env=self.env, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)

    def client(self):
        from ray.job_submission import JobSubmissionClient

        return JobSubmissionClient(self.address)

    def alive(self) -> list[dict]:
        try:
            reply = self.client()._do_request("GET", "/api/v0/nodes?limit=100")
            return [r for r in reply.json()["data"]["result"]["result"] if r.get("state") == "ALIVE"]
        except Exception:
            return []

    def wait_nodes(self, n: int) -> None:
        end = time.monotonic() + READY_CEILING_S
        while len(self.alive()) < n:
            for name, proc in self.nodes.items():
                if proc.poll() is not None:
                    raise NodeExited(f"ray {name} node exited (start {self.attempt} of {START_TRIES}): "
                                     f"{self.log_path(name).read_text(errors='replace')[-2000:]}")
            if time.monotonic() > end:
                raise RuntimeError(f"the Ray cluster did not reach {n} nodes within {READY_CEILING_S:g} s")
            time.sleep(0.5)

    def kill(self, name: str) -> None:
        proc = self.nodes[name]
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

    def stop(self) -> None:
        for name in reversed(list(self.nodes)):
            proc = self.nodes[name]
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    pass
            # `ray start --block` ends its node's processes on SIGTERM, but agents still shutting down outlive
            # it (renamed `ray::DashboardAgent`, so no command line names the root): the whole group goes
            self.kill(name)
            # whatever escaped its group goes too
            subprocess.run(["pkill", "-9", "-f", str(self.root / "t")], check=False)  # t1, t2...: every try's
