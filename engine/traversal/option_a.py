"""Option A: a central inference server thread batching requests from worker threads, with a deadline.

Each worker interleaves `k` traversals (Option B's loop) and sends its pending queries as one request:
k = 1 is plain Option A, k > 1 is A+B. The server fires a forward when every live worker has a request
in, when `max_batch` rows are waiting, or when the oldest request has waited `deadline_s`.
"""
from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Sequence

from optseq.engine.games.api import Game
from optseq.engine.traversal.generator import Traversal, TraversalResult
from optseq.engine.traversal.option_b import interleave
from optseq.engine.traversal.sequential import Net, forward_rows, gc_paused


@dataclass
class ServerStats:
    batch_sizes: list[int] = field(default_factory=list)
    """Rows per forward."""
    latencies: list[float] = field(default_factory=list)
    """Seconds from a request's submission to its answer."""

    @property
    def mean_batch(self) -> float:
        return statistics.fmean(self.batch_sizes) if self.batch_sizes else 0.0

    def latency_quantile(self, q: float) -> float:
        if not self.latencies:
            return 0.0
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class _Request:
    __slots__ = ("rows", "t0", "done", "result", "error")

    def __init__(self, rows: list):
        self.rows = rows
        self.t0 = time.perf_counter()
        self.done = threading.Event()
        self.result: list | None = None
        self.error: BaseException | None = None


class InferenceServer:
    """Owns the net; workers call submit(rows) from their own threads and block until answered."""

    def __init__(self, net: Net, *, deadline_s: float = 0.002, max_batch: int = 4096,
                 stats: ServerStats | None = None):
        self.net = net
        self.deadline_s = deadline_s
        self.max_batch = max_batch
        self.stats = stats if stats is not None else ServerStats()
        self._cond = threading.Condition()
        self._pending: list[_Request] = []
        self._workers = 0
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="inference-server", daemon=True)

    def __enter__(self) -> "InferenceServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()

    def register(self) -> None:
        with self._cond:
            self._workers += 1

    def unregister(self) -> None:
        with self._cond:
            self._workers -= 1
            # The batch may now be complete: the leaver no longer counts as someone to wait for.
            self._cond.notify_all()

    def submit(self, rows: list) -> list:
        request = _Request(rows)
        with self._cond:
            self._pending.append(request)
            self._cond.notify_all()
        request.done.wait()
        if request.error is not None:
            raise RuntimeError("inference server failed") from request.error
        return request.result

    def _ready(self) -> bool:
        rows = sum(len(r.rows) for r in self._pending)
        return len(self._pending) >= self._workers or rows >= self.max_batch

    def _take(self) -> list[_Request] | None:
        with self._cond:
            while not self._pending:
                if self._closed:
                    return None
                self._cond.wait()
            deadline = self._pending[0].t0 + self.deadline_s
            while not self._ready():
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            batch, self._pending = self._pending, []
            return batch

    def _loop(self) -> None:
        while (batch := self._take()) is not None:
            rows = [row for request in batch for row in request.rows]
            try:
                answers = forward_rows(self.net, rows)
            except BaseException as exc:  # hand the failure to every waiting worker rather than hang them
                for request in batch:
                    request.error = exc
                    request.done.set()
                continue
            now = time.perf_counter()
            self.stats.batch_sizes.append(len(rows))
            start = 0
            for request in batch:
                request.result = answers[start:start + len(request.rows)]
                start += len(request.rows)
                self.stats.latencies.append(now - request.t0)
                request.done.set()


def run(game: Game, net: Net, jobs: Sequence[Traversal], *, workers: int = 4, k: int = 1,
        deadline_s: float = 0.002, stats: ServerStats | None = None) -> list[TraversalResult]:
    """Jobs are dealt round-robin to `workers` threads; results come back in job order."""
    if workers < 1:
        raise ValueError(f"option_a: workers must be at least 1, got {workers}")
    results: list[TraversalResult | None] = [None] * len(jobs)
    errors: list[BaseException] = []

    with gc_paused(), InferenceServer(net, deadline_s=deadline_s, stats=stats) as server:
        def work(w: int) -> None:
            mine = list(range(w, len(jobs), workers))
            try:
                for i, result in zip(mine, interleave(game, [jobs[i] for i in mine], server.submit, k)):
                    results[i] = result
            except BaseException as exc:
                errors.append(exc)
            finally:
                server.unregister()

        threads = [threading.Thread(target=work, args=(w,), name=f"traversal-worker-{w}") for w in range(workers)]
        for _ in threads:
            server.register()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if errors:
        raise errors[0]
    return results
