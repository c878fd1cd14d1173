"""The lever kit: what a bench script needs to speak optseq's run protocol. Standard library only.

optseq runs a lever's command as a child process and reads its stdout: one JSON object per line,
keyed by "event"; every other line is log. This module writes those lines for you, so your bench can
be a short script in your own repository. Importing it loads nothing heavy (no torch, no numpy, no
optseq internals), so it costs your bench nothing before its own imports.

A complete bench::

    import time
    from optseq.engine import kit
    from mylib import CORPUS, tokenize, tokenize_fast

    def seconds(fn):
        def run():
            start = time.perf_counter()
            fn(CORPUS)
            return time.perf_counter() - start
        return run

    kit.watch_parent()
    wrong = sum(a != b for a, b in zip(tokenize(CORPUS), tokenize_fast(CORPUS)))
    kit.quality("token_mismatches", wrong, 0)
    kit.pairs(seconds(tokenize), seconds(tokenize_fast), metric="s_per_corpus", unit="s",
              higher_is_better=False)
    kit.done()

`kit.pairs` runs warm-ups, then as many A/B pairs as optseq asked for (or `default_repeats` when run
by hand), in counterbalanced order, and reports every measured value. The baseline arm is the
current stack: `kit.infra()` says which levers are already adopted. A quality guard (`kit.quality`)
fails the lever when its value exceeds its limit. If the lever cannot run on this machine (no GPU,
a missing library), call `kit.unavailable(reason)` and exit 0: that is reported, not failed. If the
bench itself goes wrong, `kit.fail(reason)` gives optseq the one line to show, then exit non-zero.
End every successful run with `kit.done()`: a command that exits 0 without it counts as failed.

What optseq sets in the bench's environment:

- OPTSEQ_REPEATS: pairs wanted this pass; `kit.repeats(default)` reads it. Unset when run by hand.
- OPTSEQ_PASS: the pass number, from 1; every pass is a launch of its own, and a run measures several
  (the launch, not the pair, is what its test counts), so each must measure fresh pairs rather than
  replay an earlier pass's numbers. `kit.pass_number()`.
- OPTSEQ_LAUNCH: a token for this launch; `kit.sample` echoes it in every sample, so optseq can tell a
  launch's own numbers from output saved by another launch and printed again.
- OPTSEQ_INFRA: JSON of the current stack (adopted levers, model settings); `kit.infra()`.
- OPTSEQ_RUN_ID: the run's id; with the pass it seeds `order="random"`, so a pass can be replayed.
- OPTSEQ_ARTIFACTS: a folder for files worth keeping (exported models, traces); `kit.artifacts_dir()`.
"""
from __future__ import annotations

import json
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "emit", "progress", "sample", "quality", "unavailable", "fail", "done", "env",
    "Unavailable", "Infra", "infra", "artifacts_dir", "watch_parent",
    "repeats", "pass_number", "pairs",
]

ORDERS = ("alternate", "random")


def emit(event: str, **fields) -> None:
    """Write one protocol line and flush it, so optseq sees it now and not when the buffer fills."""
    line = json.dumps({"event": event, **fields}, default=str)
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # optseq went away: a run nobody reads must not keep the machine busy.
        os._exit(141)


def progress(done: int, total: int, msg: str = "") -> None:
    emit("progress", done=done, total=total, msg=msg)


def sample(arm: str, metric: str, value: float, unit: str, higher_is_better: bool, pair: int,
           first: bool | None = None) -> None:
    """One measured value of one arm ("baseline" or "candidate") in pair number `pair` (from 0); `first` says
    whether this arm ran first in its pair. Without it optseq takes the order a pair's two samples are written in
    for the order its arms ran in (and says so on the run): write each as soon as it is measured, or give `first`.
    A bench that runs the same arm first in every pair is not decided. The launch's token (OPTSEQ_LAUNCH) goes with
    it."""
    fields = {"launch": os.environ["OPTSEQ_LAUNCH"]} if os.environ.get("OPTSEQ_LAUNCH") else {}
    if first is not None:
        fields["first"] = bool(first)
    emit("sample", arm=arm, metric=metric, value=float(value), unit=unit,
         higher_is_better=bool(higher_is_better), pair=int(pair), **fields)


def quality(name: str, value: float, limit: float) -> None:
    """A guard: the lever fails when `value` exceeds `limit` (say, a max abs error of the candidate)."""
    emit("quality", name=name, value=float(value), limit=float(limit))


def unavailable(reason: str) -> None:
    emit("unavailable", reason=reason)


def fail(reason: str) -> None:
    """Give optseq the run's one-line failure; only emits: exit non-zero yourself afterwards."""
    emit("fail", reason=reason)


def done() -> None:
    emit("done")


def env(**facts) -> None:
    """Facts about the machine and software the numbers came from (GPU, versions), kept with the run."""
    emit("env", **facts)


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


def _positive_env(name: str) -> int | None:
    # Lenient on purpose: a bench run by hand with a stray value should still run, at its default.
    try:
        value = int(os.environ.get(name, "").strip())
    except ValueError:
        return None
    return value if value > 0 else None


def repeats(default: int) -> int:
    """Pairs to measure: what optseq asked for (OPTSEQ_REPEATS), else `default`."""
    asked = _positive_env("OPTSEQ_REPEATS")
    return default if asked is None else asked


_asked_repeats = repeats  # `pairs` takes a `repeats` argument, which hides the function there


def pass_number() -> int:
    """This run's pass, from 1 (OPTSEQ_PASS); 1 when run by hand."""
    return _positive_env("OPTSEQ_PASS") or 1


def _measure(baseline: Callable[[], float], candidate: Callable[[], float], warmup: int,
             baseline_first: Iterable[bool], total: int, *, metric: str, unit: str, higher_is_better: bool,
             label: str) -> list[tuple[float, float]]:
    for _ in range(warmup):
        baseline()
        candidate()
    measured = []
    for i, a_first in enumerate(baseline_first):
        arms = [("baseline", baseline), ("candidate", candidate)]
        values = {}
        for position, (arm, fn) in enumerate(arms if a_first else arms[::-1]):
            values[arm] = fn()
            sample(arm, metric, values[arm], unit, higher_is_better, i, first=position == 0)
        measured.append((values["baseline"], values["candidate"]))
        progress(i + 1, total, f"{label} pair {i + 1}/{total}".strip())
    return measured


def pairs(baseline: Callable[[], float], candidate: Callable[[], float], *, metric: str, unit: str,
          higher_is_better: bool, warmup: int = 1, repeats: int | None = None, default_repeats: int = 5,
          order: str = "alternate", label: str = "") -> list[tuple[float, float]]:
    """Measure A/B pairs and emit every value; returns [(baseline, candidate), ...] in pair order.

    `baseline` and `candidate` are zero-argument callables returning one measurement (seconds, items
    per second, ...). `repeats=None` takes what optseq asked for, else `default_repeats`. The `warmup`
    calls of each arm come first and are never reported: caches, JIT and clocks settle on them.

    Within a pair the arm that runs second sees a warmer (or hotter, throttled) machine, so the order
    is varied: "alternate" runs baseline first in even pairs and candidate first in odd ones (A B B A
    ...), and the other way round in every other pass (B A A B ...): optseq counts launches, and a launch
    whose first pair favours one arm is followed by one whose first pair favours the other; "random"
    flips a coin per pair, seeded by OPTSEQ_RUN_ID and the pass so a pass can be replayed while the next
    pass gets a fresh order.
    """
    if order not in ORDERS:
        raise ValueError(f"order={order!r}: one of {', '.join(map(repr, ORDERS))}")
    n = _asked_repeats(default_repeats) if repeats is None else repeats
    if order == "alternate":
        # every other launch starts with the candidate: a warm-up that fades over the first pairs, or a drift,
        # favours the arm that goes second, and in each launch that is the other one
        start = pass_number() % 2
        firsts = [(i + start) % 2 == 1 for i in range(n)]
    else:
        rng = random.Random(f"{os.environ.get('OPTSEQ_RUN_ID', '')}-{pass_number()}")
        firsts = [rng.random() < 0.5 for _ in range(n)]
    return _measure(baseline, candidate, warmup, firsts, n, metric=metric, unit=unit,
                    higher_is_better=higher_is_better, label=label)
