"""Run a command-pair lever's arms: warm-ups, then pairs in counterbalanced or seeded random order, via the kit."""
from __future__ import annotations

import collections
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from optseq.engine import kit
from optseq.engine.arms import sources, trees
from optseq.engine.bench.envinfo import cpu_model  # light: torch only inside pick_device

KEEP_LINES = 20_000
"""Lines of one arm's output kept for its sources: the last match wins, and a long training log must not eat memory."""


class ArmFailed(Exception):
    """One line on why an arm's run gives no number: the run fails with it."""


class Arm:
    """One side of the pair: its command and environment, and every number it gave, warm-ups first."""

    def __init__(self, name: str, spec: dict, cwd: str | None = None):
        self.name = name
        argv = list(spec[name])
        self.argv = [sys.executable, *argv[1:]] if argv[0] == "python" else argv
        self.cwd = cwd or spec["cwd"]
        tree = (spec.get("trees") or {}).get(name)
        self.tag = f"{name} {tree['commit'][:7]}" if tree else name
        self.checkout = Path(tree["path"]) if tree and tree.get("path") and not tree.get("ship") else None
        """optseq's git checkout of the arm's commit, checked after each launch; None for a copy shipped to a node
        (no git there) and for a command-pair lever."""
        self.commit = tree["commit"] if tree else None
        """How its lines are marked in the log: a branch lever's arm says the commit it runs."""
        env = {k: v for k, v in os.environ.items() if k != "OPTSEQ_ARMS"}
        self.env = {"PYTHONUNBUFFERED": "1", **env, **spec["stack_env"], **spec[f"{name}_env"], "OPTSEQ_ARM": name}
        self.spec = spec
        self.calls = 0
        self.guards: dict[str, list[float]] = {g["name"]: [] for g in spec["guards"]}

    def __call__(self) -> float:
        """One run of the arm: stream its output as log, return its metric, keep its guard values."""
        warmup = self.spec["warmup"]
        if self.calls < warmup:
            label, pair = f"warm-up {self.calls + 1}", f"warmup-{self.calls + 1}"
        else:
            label, pair = f"pair {self.calls - warmup}", str(self.calls - warmup)
        self.calls += 1
        run = self._execute(label, pair)
        value = self._read(self.spec["source"], run, label)
        for guard in self.spec["guards"]:
            self.guards[guard["name"]].append(self._read(guard["source"], run, label))
        return value

    def _execute(self, label: str, pair: str) -> sources.ArmRun:
        lines: collections.deque[str] = collections.deque(maxlen=KEEP_LINES)
        prefix = f"[{self.tag} {label}] "
        started, clock = time.time(), time.perf_counter()
        try:
            proc = subprocess.Popen(self.argv, cwd=self.cwd, env={**self.env, "OPTSEQ_PAIR": pair},
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        except OSError as exc:
            raise ArmFailed(f"{self.name} arm ({label}) could not start {self.argv[0]!r}: {exc.strerror}") from None
        for raw in proc.stdout:
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            lines.append(line)
            print(prefix + line, flush=True)
        code = proc.wait()
        wall = time.perf_counter() - clock
        if code != 0:
            raise ArmFailed(f"{self.name} arm ({label}) exited {code}; last output line: {_last(lines)}")
        if self.checkout is not None:
            found = trees.changed(self.checkout, self.commit)
            if found is None:
                raise ArmFailed(f"{self.name} arm ({label}): its checkout of {self.commit[:7]} at {self.checkout} "
                                "is gone (deleted under the run)")
            if found:
                raise ArmFailed(f"{self.name} arm ({label}) changed tracked files of its checkout of "
                                f"{self.commit[:7]}: {trees.named(found)}; what it measured is not the commit (a "
                                "bench may write only untracked or ignored files); the next run resets the checkout")
        return sources.ArmRun(lines=lines, wall_s=wall, started=started, cwd=self.cwd)

    def _read(self, source: dict, run: sources.ArmRun, label: str) -> float:
        try:
            return sources.read(source, run)
        except sources.NotFound as exc:
            raise ArmFailed(f"{self.name} arm ({label}): {exc}; last output line: {_last(run.lines)}") from None

    def measured(self, guard: str) -> list[float]:
        return self.guards[guard][self.spec["warmup"]:]


def _last(lines) -> str:
    text = next((line for line in reversed(lines) if line.strip()), None)
    if text is None:
        return "(no output)"
    return repr(text if len(text) <= 200 else text[:197] + "...")


def arms(spec: dict, **overrides) -> tuple[Arm, Arm]:
    """Both arms, each in its folder: a branch lever's commits made ready first (trees.SetupFailed if not)."""
    dirs = trees.arm_dirs(spec, say=lambda line: print(line, flush=True)) if spec.get("trees") else {}
    spec = {**spec, **overrides}
    return Arm("baseline", spec, dirs.get("baseline")), Arm("candidate", spec, dirs.get("candidate"))


def run(spec: dict) -> int:
    try:
        baseline, candidate = arms(spec)
    except trees.SetupFailed as exc:
        kit.fail(str(exc))
        return 1
    kit.env(**env_facts(spec))
    try:
        kit.pairs(baseline, candidate, metric=spec["metric"], unit=spec["unit"],
                  higher_is_better=spec["higher_is_better"], warmup=spec["warmup"], order=spec["order"],
                  label=spec["metric"])
    except ArmFailed as exc:
        kit.fail(str(exc))
        return 1
    for guard in spec["guards"]:
        kit.quality(guard["name"], guard_value(guard, baseline.measured(guard["name"]),
                                               candidate.measured(guard["name"])), guard["limit"])
    kit.done()
    return 0


def check(spec: dict) -> int:
    """`optseq check`: one run of each arm, saying exactly what it was given and what was read from it; no pairs,
    no protocol, nothing for optseq to count. Plain lines, for a person checking a lever before spending pairs."""
    failed = 0
    try:
        pair = arms(spec, warmup=0)
    except trees.SetupFailed as exc:
        print(f"FAILED: {exc}", flush=True)
        return 1
    for arm in pair:
        name = arm.name
        given = {**spec["stack_env"], **spec[f"{name}_env"], "OPTSEQ_ARM": name, "OPTSEQ_PAIR": "check"}
        tree = (spec.get("trees") or {}).get(name)
        if tree:
            print(f"{name}: {tree['ref']} at {tree['commit'][:7]}", flush=True)
        print(f"{name}: argv {' '.join(_quoted(a) for a in arm.argv)}", flush=True)
        print(f"{name}: cwd {arm.cwd}", flush=True)
        print(f"{name}: env " + (" ".join(f"{k}={_quoted(v)}" for k, v in given.items())), flush=True)
        started = time.perf_counter()
        try:
            run = arm._execute("check", "check")
            value = arm._read(spec["source"], run, "check")
            guards = [(g["name"], arm._read(g["source"], run, "check")) for g in spec["guards"]]
        except ArmFailed as exc:
            print(f"{name}: FAILED: {exc}", flush=True)
            failed = 1
            continue
        print(f"{name}: {spec['metric']} = {value:g} {spec['unit']} "
              f"({'higher' if spec['higher_is_better'] else 'lower'} is better)".rstrip(), flush=True)
        for guard, found in guards:
            print(f"{name}: guard {guard} = {found:g}", flush=True)
        print(f"{name}: took {time.perf_counter() - started:.3g} s", flush=True)
    return failed


def _quoted(text: str) -> str:
    return text if text and all(c.isalnum() or c in "-_=./:,+@%" for c in text) else json.dumps(text)


def guard_value(guard: dict, base: list[float], cand: list[float]) -> float:
    """The worst value over the pairs, in the terms of the guard's bound."""
    bound = guard["bound"]
    if bound == "max_diff":
        return max(abs(c - b) for b, c in zip(base, cand))
    if bound == "max_rel_diff":
        return max(abs(c - b) / abs(b) if b else (0.0 if c == b else float("inf")) for b, c in zip(base, cand))
    return max(cand) if bound == "max" else min(cand)


def env_facts(spec: dict) -> dict:
    """What the numbers were measured on, for staleness: this machine, and a hash of the commands and their files."""
    facts = {"python": platform.python_version(), "cpu": cpu_model(), "host": platform.node(), "runner": "arms",
             "workload": workload(spec)}
    if spec.get("trees"):
        # the code is two commits, recorded on the run: a hash of the files would mix them
        facts.update(baseline_commit=spec["trees"]["baseline"]["commit"],
                     candidate_commit=spec["trees"]["candidate"]["commit"])
    else:
        facts["code_hash"] = code_hash(spec)
    gpu = _gpu()
    if gpu:
        facts["gpu"] = gpu
    return facts


def workload(spec: dict) -> str:
    """Which code the numbers come from: the arms' commands without their flags (the flags are the levers and the
    stack). Levers over one script share it, and its hash."""
    return "arms: " + " | ".join(dict.fromkeys(" ".join(_code(spec[arm])) for arm in ("baseline", "candidate")))


def code_hash(spec: dict) -> str:
    """The arms' commands and the contents of every file their argv names (train.py, ...).

    Not the toggles or flags: they are the lever, not the code, and two levers over one script must agree on its
    hash.
    """
    digest = hashlib.sha256(json.dumps([_code(spec["baseline"]), _code(spec["candidate"])]).encode())
    for arg in dict.fromkeys(spec["baseline"] + spec["candidate"]):
        path = Path(spec["cwd"], arg)
        try:
            if path.is_file() and path.stat().st_size < 16 * 1024 ** 2:
                digest.update(arg.encode() + b"\0" + path.read_bytes())
        except OSError:
            pass
    return digest.hexdigest()[:16]


def _code(argv: list[str]) -> list[str]:
    return [a for a in argv if not a.startswith("-")]


def _gpu() -> str | None:
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    names = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    return names[0] if out.returncode == 0 and names else None
