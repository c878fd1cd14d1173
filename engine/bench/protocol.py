"""The run protocol, child side: one JSON object per stdout line, keyed by "event".

optseq (state/runner) parses these lines; everything else a bench prints is log.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path


def emit(event: str, **fields) -> None:
    line = json.dumps({"event": event, **fields}, default=str)
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # optseq went away: a run nobody reads must not keep the machine busy.
        os._exit(141)


def progress(done: int, total: int, msg: str = "") -> None:
    emit("progress", done=done, total=total, msg=msg)


def sample(arm: str, metric: str, value: float, unit: str, higher_is_better: bool, pair: int) -> None:
    emit("sample", arm=arm, metric=metric, value=float(value), unit=unit,
         higher_is_better=bool(higher_is_better), pair=int(pair))


def quality(name: str, value: float, limit: float) -> None:
    emit("quality", name=name, value=float(value), limit=float(limit))


def unavailable(reason: str) -> None:
    emit("unavailable", reason=reason)


def done() -> None:
    emit("done")


class Unavailable(Exception):
    """Raised by a bench whose lever cannot run here (no CUDA, no tensorrt); reported, not failed."""


@dataclass(frozen=True)
class Infra:
    """The current stack a run's baseline arm must use (OPTSEQ_INFRA)."""

    adopted: frozenset[str] = frozenset()
    model: dict = field(default_factory=dict)

    def has(self, lever: str) -> bool:
        return lever in self.adopted


def infra() -> Infra:
    raw = os.environ.get("OPTSEQ_INFRA", "")
    if not raw:
        return Infra()
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"OPTSEQ_INFRA: not JSON ({exc.msg})")
    return Infra(adopted=frozenset(data.get("adopted", [])), model=dict(data.get("model") or {}))


def artifacts_dir() -> Path:
    path = Path(os.environ.get("OPTSEQ_ARTIFACTS") or "artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


def watch_parent(interval: float = 0.5) -> None:
    """Exit when the launching process dies, even by SIGKILL, so no run is orphaned."""
    parent = os.getppid()

    def loop() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(143)

    threading.Thread(target=loop, name="parent-watch", daemon=True).start()


def paired(baseline, candidate, *, repeats: int, warmup: int, metric: str, unit: str,
           higher_is_better: bool, label: str = "") -> list[tuple[float, float]]:
    """Alternate arms A B A B after warm-ups; emit one sample per arm per pair.

    `baseline` and `candidate` are zero-argument callables returning the metric value.
    """
    for _ in range(warmup):
        baseline()
        candidate()
    pairs = []
    for i in range(repeats):
        a = baseline()
        sample("baseline", metric, a, unit, higher_is_better, i)
        b = candidate()
        sample("candidate", metric, b, unit, higher_is_better, i)
        pairs.append((a, b))
        progress(i + 1, repeats, f"{label} pair {i + 1}/{repeats}".strip())
    return pairs
