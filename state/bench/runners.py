"""`python -m optseq.state.bench.runners [--runs N] [--write docs/performance.md]`: what a Ray run costs over a local one.

One command-pair lever (two short `python -c` arms, 6 pairs) is run end to end through the real Sequencer,
alternately by the local runner and by the Ray runner on a throwaway two-node cluster on 127.0.0.1, each run
into a fresh store. Per run: submit to first sample (launch, for Ray the job's scheduling and runtime env,
the interpreter start), and the whole run (every pair, judged and decided). Medians side by side, and their
ratio, into this bench's section of the document.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from optseq.state.bench import perf_doc
from optseq.state.plan.runner import RunnerConfig
from optseq.state.runners.choose import make

SECTION = "runners"
COMMAND = "python -m optseq.state.bench.runners --write docs/performance.md"
ARM = "import os; print('rate:', 200.0 if os.environ.get('FAST') == '1' else 100.0 + int(os.environ['OPTSEQ_PAIR']))"


def plan_text() -> str:
    return f"""
[plan]
title = "Runner bench"
as_of = 2026-12-01
lang = "en"

[[levers]]
id = "lever"
title = "FAST=1"
kind = "speedup"
timeout_s = 300
rule = {{ metric = "rate", min_speedup = 1.2, repeats = 6, max_repeats = 6 }}
[levers.arms]
command = ["python", "-c", {ARM!r}]
candidate_env = {{ FAST = "1" }}
metric = {{ name = "rate", regex = 'rate: ([0-9.]+)', unit = "items/s" }}
warmup = 0
"""


def one_run(plan: Path, db: Path, runner) -> dict:
    from optseq.state.sequencer import Sequencer

    first: list[float] = []
    with Sequencer.open(plan, db, mode="write") as seq:
        seq.lever_runs.runner = runner
        start = time.perf_counter()
        report = seq.run_lever("lever", on_event=lambda ev: first.append(time.perf_counter())
                               if ev.get("event") == "sample" and not first else None)
        total = time.perf_counter() - start
    if report.status != "succeeded":
        raise RuntimeError(f"{runner.name} run {report.status}: {report.message}")
    return {"first_sample_s": first[0] - start, "total_s": total}


def measure(runs: int, root: Path, address: str | None = None) -> dict[str, list[dict]]:
    from optseq.state.runners.local_cluster import Cluster

    plan = root / "plan.toml"
    plan.write_text(plan_text(), encoding="utf-8")
    cluster = None if address else Cluster(root / "ray").start()
    try:
        if cluster is not None:
            address = cluster.address
        runners = {"local": make(RunnerConfig()), "ray": make(RunnerConfig(kind="ray", address=address))}
        found: dict[str, list[dict]] = {"local": [], "ray": []}
        for i in range(runs):
            for name in (("local", "ray") if i % 2 == 0 else ("ray", "local")):  # side by side, order alternated
                found[name].append(one_run(plan, root / f"db-{name}-{i}", runners[name]))
                print(f"{name} run {i + 1}/{runs}: first sample {found[name][-1]['first_sample_s']:.2f} s, "
                      f"whole run {found[name][-1]['total_s']:.2f} s", file=sys.stderr, flush=True)
        return found
    finally:
        if cluster is not None:
            cluster.stop()


def render(found: dict[str, list[dict]], command: str) -> str:
    import ray

    def med(name: str, key: str) -> float:
        return statistics.median(r[key] for r in found[name])

    rows = []
    for key, label in (("first_sample_s", "submit → first sample"), ("total_s", "whole run (6 pairs, decided)")):
        local, remote = med("local", key), med("ray", key)
        rows.append(f"| {label} | {local:.2f} s | {remote:.2f} s | {remote / local:.1f}× | +{remote - local:.2f} s |")
    n = len(found["local"])
    return "\n".join([
        f"<!-- section:{SECTION} -->", "## Ray runner overhead", "",
        f"Written by `{command}`. One command-pair lever (two `python -c` arms, 6 pairs, one pass) run end to "
        f"end through the Sequencer {n} times by each runner, alternating, each into a fresh store; the Ray "
        "runs go to " + ("the cluster given by --address" if "--address" in command else
                         "a two-node cluster on 127.0.0.1 started for the bench") + ". Medians:", "",
        "| | local | Ray | ratio | Ray adds |", "| --- | --- | --- | --- | --- |", *rows, "",
        f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"Ray {ray.__version__}. The first-sample gap is the job's submission, scheduling and runtime env; "
        "the rest of the whole-run gap is the log stream's polling and the final log read.",
        f"<!-- /section:{SECTION} -->"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m optseq.state.bench.runners", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5, help="runs per runner (default 5)")
    p.add_argument("--write", type=Path, default=None, metavar="PATH", help="write the section into this document")
    p.add_argument("--address", default=None, help="an existing cluster's job API instead of a throwaway one")
    args = p.parse_args(argv)
    if args.runs < 1:
        p.exit(2, f"optseq.state.bench.runners: --runs {args.runs}: must be at least 1\n")
    try:
        import ray  # noqa: F401
    except ImportError:
        p.exit(3, "optseq.state.bench.runners: needs Ray here: pip install 'ray[default]>=2.9' (the ray extra)\n")
    command = "python -m optseq.state.bench.runners" + (f" --runs {args.runs}" if args.runs != 5 else "") + (
        f" --address {args.address}" if args.address else "") + (f" --write {args.write}" if args.write else "")
    with tempfile.TemporaryDirectory(prefix="optseq-runner-bench-") as tmp:
        section = render(measure(args.runs, Path(tmp), args.address), command)
    print(section)
    if args.write:
        perf_doc.write_section(args.write, section, SECTION)
    return 0


if __name__ == "__main__":
    sys.exit(main())
