"""`python -m optseq.engine.bench all`: run every lever bench as a child, parse its events, write docs/performance.md.

Figures here are descriptive (median and spread of per-pair ratios); the decision statistics live in state/.
"""
from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

AB_ARMS = ("baseline", "candidate")
LOG_TAIL = 5
NO_GPU = "not measured: no GPU lent"


@dataclass
class LeverRun:
    """What one bench child said: its events, its log lines and how it ended."""

    lever: str
    env: dict = field(default_factory=dict)
    samples: list[dict] = field(default_factory=list)
    quality: list[dict] = field(default_factory=list)
    unavailable: str | None = None
    done: bool = False
    log: list[str] = field(default_factory=list)
    returncode: int | None = 0
    wall_s: float = 0.0

    @property
    def status(self) -> str:
        if self.returncode != 0 or not self.done:
            return "failed"
        return "unavailable" if self.unavailable is not None else "succeeded"


def parse_lines(lever: str, lines: Iterable[str]) -> LeverRun:
    """Protocol events are JSON objects with an "event" key; every other line is log."""
    run = LeverRun(lever)
    for line in lines:
        line = line.rstrip("\n")
        event = _event(line)
        if event is None:
            if line.strip():
                run.log.append(line)
            continue
        kind = event["event"]
        if kind == "env":
            run.env.update({k: v for k, v in event.items() if k != "event"})
        elif kind == "sample":
            run.samples.append(event)
        elif kind == "quality":
            run.quality.append(event)
        elif kind == "unavailable":
            run.unavailable = str(event.get("reason", ""))
        elif kind == "done":
            run.done = True
    return run


def _event(line: str) -> dict | None:
    if not line.startswith("{"):
        return None
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) and "event" in data else None


@dataclass(frozen=True)
class ABSummary:
    """Per-pair ratios of one metric, oriented so that > 1 means the candidate is better."""

    metric: str
    unit: str
    higher_is_better: bool
    ratios: tuple[float, ...]
    baseline_median: float
    candidate_median: float

    @property
    def n(self) -> int:
        return len(self.ratios)

    @property
    def median(self) -> float:
        return statistics.median(self.ratios)


def ab_summaries(samples: list[dict]) -> list[ABSummary]:
    """One summary per metric measured on both arms; unmatched pairs are dropped."""
    by_metric: dict[str, dict[str, dict[int, dict]]] = {}
    for s in samples:
        if s.get("arm") in AB_ARMS:
            by_metric.setdefault(s["metric"], {}).setdefault(s["arm"], {})[int(s["pair"])] = s
    out = []
    for metric, arms in by_metric.items():
        base, cand = arms.get("baseline", {}), arms.get("candidate", {})
        pairs = sorted(set(base) & set(cand))
        if not pairs:
            continue
        higher = bool(base[pairs[0]]["higher_is_better"])
        ratios = []
        for p in pairs:
            b, c = float(base[p]["value"]), float(cand[p]["value"])
            ratios.append(c / b if higher else b / c)
        out.append(ABSummary(
            metric, str(base[pairs[0]].get("unit", "")), higher, tuple(ratios),
            statistics.median(float(base[p]["value"]) for p in pairs),
            statistics.median(float(cand[p]["value"]) for p in pairs),
        ))
    return out


def config_table_lines(arms: list[str], metrics: list[str], cells: dict) -> list[str]:
    """The per-config markdown table: one row per arm, the median of each metric."""
    head = " | ".join(f"{m} ({cells[(arms[0], m)][2]})" if (arms[0], m) in cells else m for m in metrics)
    lines = [f"| config | {head} |", "|---" * (len(metrics) + 1) + "|"]
    for arm in arms:
        row = []
        for m in metrics:
            if (arm, m) in cells:
                value, n, _ = cells[(arm, m)]
                row.append(_fmt(value) + (f" (median of {n})" if n > 1 else ""))
            else:
                row.append("—")
        lines.append(f"| {arm} | " + " | ".join(row) + " |")
    return lines


def config_table(samples: list[dict]) -> tuple[list[str], list[str], dict[tuple[str, str], tuple[float, int, str]]]:
    """Arms other than baseline/candidate (model-size configs): medians per (arm, metric)."""
    values: dict[tuple[str, str], list[float]] = {}
    units: dict[str, str] = {}
    arms: list[str] = []
    metrics: list[str] = []
    for s in samples:
        arm, metric = s.get("arm"), s.get("metric")
        if arm in AB_ARMS:
            continue
        if arm not in arms:
            arms.append(arm)
        if metric not in metrics:
            metrics.append(metric)
        units[metric] = s.get("unit", "")
        values.setdefault((arm, metric), []).append(float(s["value"]))
    cells = {key: (statistics.median(v), len(v), units[key[1]]) for key, v in values.items()}
    return arms, metrics, cells


def _fmt(x: float) -> str:
    if x == 0 or 1e-3 <= abs(x) < 1e5:
        return f"{x:.4g}"
    return f"{x:.3e}"


def render_run(run: LeverRun) -> list[str]:
    lines = [f"### {run.lever}", ""]
    if run.status == "failed":
        why = ("timed out" if run.returncode is None else f"exit {run.returncode}" if run.returncode != 0
               else "no `done` event")
        lines.append(f"**failed** ({why}, {run.wall_s:.1f} s). Last log lines:")
        lines += ["", "```", *(run.log[-LOG_TAIL:] or ["(no output)"]), "```", ""]
        return lines
    if run.status == "unavailable":
        lines += [f"**unavailable**: {run.unavailable}", ""]
    for s in ab_summaries(run.samples):
        better = "higher" if s.higher_is_better else "lower"
        lines += [
            f"- metric: `{s.metric}` ({s.unit}, {better} is better)",
            f"- candidate/baseline: **{s.median:.3f}×** median of per-pair ratios "
            f"(min–max {min(s.ratios):.3f}–{max(s.ratios):.3f}, n = {s.n} pairs; > 1 means the candidate is better)",
            f"- medians: baseline {_fmt(s.baseline_median)} {s.unit}, candidate {_fmt(s.candidate_median)} {s.unit}",
        ]
    arms, metrics, cells = config_table(run.samples)
    if arms:
        lines += [""] + config_table_lines(arms, metrics, cells)
    if run.quality:
        lines += ["", "Quality guards:", ""]
        for q in run.quality:
            ok = "ok" if float(q["value"]) <= float(q["limit"]) else "**FAILED**"
            lines.append(f"- `{q['name']}` = {_fmt(float(q['value']))} (limit {_fmt(float(q['limit']))}): {ok}")
    lines += ["", f"Wall time {run.wall_s:.1f} s.", ""]
    return lines


def machine_line(env: dict) -> str:
    parts = [f"CPU {env.get('cpu', '?')}"]
    if env.get("threads"):
        parts.append(f"{env['threads']} torch threads")
    parts.append(f"GPU {env['gpu']} (CUDA {env.get('cuda', '?')})" if env.get("gpu") else "no GPU")
    parts.append(f"torch {env.get('torch', '?')}")
    parts.append(f"Python {env.get('python', '?')}")
    return ", ".join(parts)


def section_marker(size: str, end: bool = False) -> str:
    return f"<!-- {'/' if end else ''}section:{size} -->"


def render_section(size: str, runs: list[LeverRun], command: str, date: str) -> str:
    env = next((r.env for r in runs if r.env), {})
    title = "CPU, CI size" if size == "ci" else "GPU, GPU size"
    lines = [
        section_marker(size), f"## {title}", "",
        f"- machine: {machine_line(env)}",
        f"- device: {env.get('device', '?')}",
        f"- date: {date}",
        f"- regenerate: `{command}`", "",
        "| lever | status | metric | candidate/baseline (median) | spread (min–max) | n pairs | guards |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        guards = "—"
        if run.quality:
            failed = [q["name"] for q in run.quality if float(q["value"]) > float(q["limit"])]
            guards = "failed: " + ", ".join(failed) if failed else f"{len(run.quality)} ok"
        summaries = ab_summaries(run.samples) if run.status != "failed" else []
        status = run.status if run.status != "unavailable" else f"unavailable: {run.unavailable}"
        if not summaries:
            arms = config_table(run.samples)[0] if run.status != "failed" else []
            what = f"{len(arms)} configs, table below" if arms else "—"
            lines.append(f"| {run.lever} | {_cell(status)} | {what} | — | — | — | {guards} |")
        for s in summaries:
            lines.append(f"| {run.lever} | {_cell(status)} | {s.metric} | {s.median:.3f}× | "
                         f"{min(s.ratios):.3f}–{max(s.ratios):.3f} | {s.n} | {guards} |")
    lines.append("")
    for run in runs:
        lines += render_run(run)
    lines.append(section_marker(size, end=True))
    return "\n".join(_single_blank(lines))


def _single_blank(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        if not (line == "" and out and out[-1] == ""):
            out.append(line)
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def empty_section(size: str) -> str:
    title = "CPU, CI size" if size == "ci" else "GPU, GPU size"
    return "\n".join([section_marker(size), f"## {title}", "", NO_GPU if size == "gpu" else "not measured", "",
                      section_marker(size, end=True)])


def kept_section(previous: str, size: str) -> str | None:
    """The `size` section of an earlier document, so a CPU rerun keeps GPU figures measured elsewhere."""
    match = re.search(re.escape(section_marker(size)) + r".*?" + re.escape(section_marker(size, end=True)),
                      previous, flags=re.S)
    return match.group(0) if match else None


def render_document(size: str, runs: list[LeverRun], command: str, date: str, previous: str = "") -> str:
    sections = {size: render_section(size, runs, command, date)}
    for other in ("ci", "gpu"):
        if other not in sections:
            sections[other] = kept_section(previous, other) or empty_section(other)
    # every other section (gpu-check's, optseq's decision-quality table) was written by its own command
    others = [key for key in re.findall(r"<!-- section:([\w-]+) -->", previous) if key not in ("ci", "gpu")]
    kept = [section for key in dict.fromkeys(others) if (section := kept_section(previous, key))]
    return "\n".join([
        "# Performance",
        "",
        "Written by `python -m optseq.engine.bench all`; do not edit by hand. Each lever bench runs its arms",
        "alternately (baseline = the current stack, candidate = + the lever) after warm-ups. Ratios are",
        "candidate/baseline per pair, inverted for lower-is-better metrics, so > 1 always means the",
        "candidate is better. These are descriptive figures; optseq's decisions (CIs, tests) live in `state/`.",
        "",
        sections["ci"],
        "",
        sections["gpu"],
        "",
        *(line for section in kept for line in (section, "")),
    ])


def run_lever(lever: str, size: str, timeout_s: float, artifacts: Path, extra: list[str] = ()) -> LeverRun:
    argv = [sys.executable, "-m", "optseq.engine.bench", lever, "--size", size, *extra]
    env = dict(os.environ, OPTSEQ_ARTIFACTS=str(artifacts / lever))
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout_s, env=env)
        run = parse_lines(lever, proc.stdout.splitlines())
        run.log += proc.stderr.splitlines()
        run.returncode = proc.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        run = parse_lines(lever, out.splitlines())
        run.log.append(f"timed out after {timeout_s:.0f} s")
        run.returncode = None
    run.wall_s = time.perf_counter() - start
    return run


def run_all(levers: Iterable[str], size: str, write: str | None, extra: list[str] = (),
            timeout_s: float = 900.0) -> int:
    """Run each lever's bench (`extra` flags passed on), print a line per lever, write or print the report."""
    if size == "gpu":
        import torch

        if not torch.cuda.is_available():
            print("optseq.engine.bench all --size gpu: no CUDA device here; run it on a GPU machine", file=sys.stderr)
            return 2
    runs = []
    with tempfile.TemporaryDirectory(prefix="optseq-bench-") as tmp:
        for lever in levers:
            print(f"[all] {lever} ...", flush=True)
            run = run_lever(lever, size, timeout_s, Path(tmp), list(extra))
            summary = "; ".join(f"{s.metric} {s.median:.3f}x (n={s.n})" for s in ab_summaries(run.samples))
            why = f": {run.unavailable}" if run.status == "unavailable" else ""
            print(f"[all] {lever}: {run.status}{why} {summary} ({run.wall_s:.1f} s)", flush=True)
            runs.append(run)
    command = " ".join(["python -m optseq.engine.bench all --size", size, *extra] + (["--write", write] if write else []))
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    if write:
        path = Path(write)
        previous = path.read_text() if path.exists() else ""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_document(size, runs, command, date, previous))
        print(f"[all] wrote {path}", flush=True)
    else:
        print(render_section(size, runs, command, date))
    return 0 if all(r.status != "failed" for r in runs) else 1
