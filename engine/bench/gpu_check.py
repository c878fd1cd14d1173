"""`python -m optseq.engine.bench gpu-check`: does AMP/compile pay at a large model but not a small one, in a time budget."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from optseq.engine.bench.report import (
    ABSummary,
    LeverRun,
    _cell,
    _fmt,
    ab_summaries,
    config_table,
    config_table_lines,
    empty_section,
    kept_section,
    machine_line,
    parse_lines,
    section_marker,
)

SECTION = "gpu-check"
CLAIM = "small model: dispatch overhead beats kernel gains; large model: AMP/compile pay"
TOLERANCE = 0.05
"""A median ratio within this of 1 is no gain: the claim wants <= 1 + TOLERANCE small, > 1 + TOLERANCE large."""
DEFAULT_MODELS = "64x3,1024x6"
DEFAULT_BUDGET_S = 420.0
MODEL_SIZE_ITERATIONS = 10
"""The seed's 200 iterations per config do not fit a 15-minute lease; 10 give the time per iteration at
GPU size and an early exploitability."""
MIN_STEP_S = 15.0
"""A child given less would spend it importing torch: the step is skipped instead."""
LOG_TAIL = 5
LEVER_TITLES = {"amp": "AMP", "compile": "compile"}
DESCRIPTION = (
    "Test the seed's claim (" + CLAIM + ") on one device: amp and compile at a small and a large model, "
    "then model_size, each a child bench with a share of --budget-s as its timeout. The section of "
    "docs/performance.md is rewritten after every step, so a lease cut short keeps the figures measured so far."
)


@dataclass(frozen=True)
class Step:
    """One child run: a lever at one model (hidden, layers), or model_size (model None) over its own configs."""

    lever: str
    model: tuple[int, int] | None
    weight: float
    """Its share of the budget left when it starts, against the steps still to come."""

    @property
    def name(self) -> str:
        return self.lever if self.model is None else f"{self.lever} {model_name(self.model)}"


@dataclass
class StepResult:
    step: Step
    run: LeverRun | None = None
    """None until the step runs, and for a step skipped for want of budget."""
    timeout_s: float = 0.0
    timed_out: bool = False
    skipped: bool = False


def model_name(model: tuple[int, int]) -> str:
    return f"h{model[0]}x{model[1]}"


def plan(small: tuple[int, int], large: tuple[int, int]) -> list[Step]:
    """The claim's figures first (AMP, then compile, small then large), model_size with what is left."""
    return [Step("amp", small, 1.5), Step("amp", large, 1.5), Step("compile", small, 2.5),
            Step("compile", large, 2.5), Step("model_size", None, 2.0)]


def step_timeout(steps: list[Step], index: int, remaining_s: float) -> float:
    """The step's weight-share of the budget left (so time a step does not use rolls on), at least MIN_STEP_S.

    Earlier steps matter more, so a tight budget goes to them first and the later ones are skipped.
    """
    weights = sum(s.weight for s in steps[index:])
    return min(remaining_s, max(MIN_STEP_S, remaining_s * steps[index].weight / weights))


def parse_models(text: str) -> tuple[tuple[int, int], tuple[int, int]]:
    match = re.fullmatch(r"\s*(\d+)x(\d+)\s*,\s*(\d+)x(\d+)\s*", text)
    if not match or min(int(g) for g in match.groups()) < 1:
        raise ValueError(f"--models {text!r}: expected SMALL,LARGE as HIDDENxLAYERS, e.g. {DEFAULT_MODELS}")
    h1, l1, h2, l2 = (int(g) for g in match.groups())
    if (h1, l1) == (h2, l2):
        raise ValueError(f"--models {text!r}: the small and the large model are the same")
    return (h1, l1), (h2, l2)


def figures(r: StepResult) -> list[ABSummary]:
    """The step's A/B figures: a finished run's, or the whole pairs a run cut off by its timeout got through."""
    if r.run is None or not (r.run.status == "succeeded" or r.timed_out):
        return []
    return ab_summaries(r.run.samples)


def summary(results: list[StepResult], lever: str,
            model: tuple[int, int]) -> tuple[ABSummary | None, StepResult | None]:
    for r in results:
        if r.step.lever == lever and r.step.model == model:
            found = figures(r)
            return (found[0] if found else None), r
    return None, None


def failed_guards(run: LeverRun | None) -> list[str]:
    if run is None:
        return []
    return [q["name"] for q in run.quality if float(q["value"]) > float(q["limit"])]


def verdict(results: list[StepResult], small: tuple[int, int], large: tuple[int, int]) -> str:
    """One sentence, from the figures, on whether the seed's claim holds for AMP and for compile."""
    threshold = 1 + TOLERANCE
    parts, outcome = [], {}
    for lever, title in LEVER_TITLES.items():
        (s, s_res), (l, l_res) = summary(results, lever, small), summary(results, lever, large)
        if s is None or l is None:
            missing = [model_name(m) for m, x in ((small, s), (large, l)) if x is None]
            outcome[title] = None
            parts.append(f"{title}: no figures at {' and '.join(missing)}")
            continue
        small_ok, large_ok = s.median <= threshold, l.median > threshold
        outcome[title] = small_ok and large_ok
        notes = []
        if not small_ok:
            notes.append(f"a gain already at {model_name(small)}")
        if not large_ok:
            notes.append(f"no gain at {model_name(large)}")
        for m, res, x in ((small, s_res, s), (large, l_res, l)):
            if res.timed_out:
                notes.append(f"cut off at {model_name(m)} after {x.n} pair{'s' * (x.n != 1)}")
            if failed_guards(res.run):
                notes.append(f"guard failed at {model_name(m)}: {', '.join(failed_guards(res.run))}")
        parts.append(f"{title} {s.median:.2f}× at {model_name(small)} and {l.median:.2f}× at {model_name(large)}"
                     + (f" ({'; '.join(notes)})" if notes else ""))
    yes = [t for t, v in outcome.items() if v is True]
    no = [t for t, v in outcome.items() if v is False]
    unjudged = [t for t, v in outcome.items() if v is None]
    if yes and no:
        head = f"partly reproduces: for {', '.join(yes)}; not for {', '.join(no)}"
    elif yes or no:
        head = ("reproduces" if yes else "does not reproduce") + (
            f" for {', '.join(yes or no)}; {', '.join(unjudged)} not judged" if unjudged else "")
    else:
        head = "cannot be judged yet"
    return (f"Seed's claim ({CLAIM}), read as ≤ {threshold:.2f}× at the small model and > {threshold:.2f}× at the "
            f"large one: **{head}** — {'; '.join(parts)}.")


def _status(r: StepResult) -> str:
    if r.skipped:
        return "skipped: budget spent"
    if r.run is None:
        return "not reached"
    if r.timed_out:
        return f"timed out ({r.timeout_s:.0f} s)"
    if r.run.status == "unavailable":
        return f"unavailable: {r.run.unavailable}"
    return r.run.status


def _guards(run: LeverRun | None) -> str:
    if run is None or not run.quality:
        return "—"
    failed = failed_guards(run)
    return "failed: " + ", ".join(failed) if failed else f"{len(run.quality)} ok"


@dataclass(frozen=True)
class Context:
    """What the section says about the run as a whole."""

    command: str
    date: str
    size: str
    device: str
    budget_s: float
    used_s: float
    iterations: int


def render_section(results: list[StepResult], small: tuple[int, int], large: tuple[int, int], ctx: Context) -> str:
    env = next((r.run.env for r in results if r.run is not None and r.run.env), {})
    lines = [
        section_marker(SECTION), "## GPU check: AMP and torch.compile by model size", "",
        f"- machine: {machine_line(env)}",
        f"- device: {env.get('device', ctx.device)}; torch {env.get('torch', '?')}, CUDA {env.get('cuda') or 'none'}",
        f"- date: {ctx.date}",
        f"- regenerate: `{ctx.command}`",
        f"- workload: bench size `{ctx.size}` (amp and compile train the MLP at each model, nothing else adopted); "
        f"budget {ctx.budget_s:.0f} s, {ctx.used_s:.0f} s used", "",
        verdict(results, small, large), "",
        "| lever | model | status | candidate/baseline (median) | spread (min–max) | n pairs "
        "| baseline median | candidate median | guards | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if r.step.model is None:
            continue
        s = figures(r)
        wall = f"{r.run.wall_s:.1f}" if r.run is not None else "—"
        head = f"| {r.step.lever} | {model_name(r.step.model)} | {_cell(_status(r))} |"
        if not s:
            lines.append(f"{head} — | — | — | — | — | {_guards(r.run)} | {wall} |")
        for x in s:
            lines.append(f"{head} {x.median:.3f}× | {min(x.ratios):.3f}–{max(x.ratios):.3f} | {x.n} | "
                         f"{_fmt(x.baseline_median)} {x.unit} | {_fmt(x.candidate_median)} {x.unit} | "
                         f"{_guards(r.run)} | {wall} |")
    lines.append("")
    for r in results:
        if r.step.model is None:
            lines += render_model_size(r, ctx.iterations)
    for r in results:
        if r.run is not None and (r.run.status == "failed" or r.timed_out):
            lines += [f"{r.step.name}, last log lines:", "", "```", *(r.run.log[-LOG_TAIL:] or ["(no output)"]),
                      "```", ""]
    lines.append(section_marker(SECTION, end=True))
    return "\n".join(lines)


def render_model_size(r: StepResult, iterations: int) -> list[str]:
    lines = [f"### model_size ({iterations} iteration{'s' * (iterations != 1)} per config, one block; the seed's "
             "experiment runs 200)", "",
             f"Status: {_status(r)}" + (f", wall {r.run.wall_s:.1f} s." if r.run is not None else "."), ""]
    if r.run is None:
        return lines
    arms, metrics, cells = config_table(r.run.samples)
    if not arms:
        return lines
    if "exploitability" not in metrics:
        lines += ["Cut off before exploitability: seconds per iteration only, over the iterations that ran.", ""]
    lines += config_table_lines(arms, metrics, cells)
    return lines + [""]


def write_section(path: Path, section: str) -> None:
    """Replace this command's section in the document (or add it), leaving every other section as it was."""
    previous = path.read_text() if path.exists() else ""
    old = kept_section(previous, SECTION)
    if old is not None:
        text = previous.replace(old, section)
    elif previous:
        text = previous.rstrip("\n") + "\n\n" + section + "\n"
    else:
        text = "\n\n".join(["# Performance", empty_section("ci"), empty_section("gpu"), section]) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)  # a cut-off mid-write leaves the previous file whole


def run_child(argv: list[str], env: dict, timeout_s: float, lever: str) -> tuple[LeverRun, bool]:
    """Run one bench in its own process group; at the deadline the whole group goes, its output so far kept."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        run = parse_lines(lever, out.read().splitlines())
        run.log += err.read().splitlines()
    run.returncode = None if timed_out else proc.returncode
    if timed_out:
        run.log.append(f"timed out after {timeout_s:.0f} s")
    run.wall_s = wall
    return run, timed_out


def child_argv(step: Step, args: argparse.Namespace) -> tuple[list[str], dict]:
    argv = [sys.executable, "-m", "optseq.engine.bench", step.lever, "--size", args.size, "--device", args.device]
    infra: dict = {"adopted": []}
    if step.model is None:
        # one block (every config trained once) at the iterations the budget allows, not the size's
        argv += ["--repeats", "1"]
        return argv, {"OPTSEQ_INFRA": json.dumps(infra), "OPTSEQ_ITERATIONS": str(args.model_size_iterations)}
    infra["model"] = {"hidden": step.model[0], "layers": step.model[1]}
    argv += [f"--{k}={v}" for k in ("repeats", "warmup") if (v := getattr(args, k)) is not None]
    return argv, {"OPTSEQ_INFRA": json.dumps(infra)}


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m optseq.engine.bench gpu-check", description=DESCRIPTION)
    p.add_argument("--device", default="cuda", help="torch device (default cuda; cpu only when named)")
    p.add_argument("--size", choices=["ci", "gpu"], default="gpu", help="bench size of every child (default gpu)")
    p.add_argument("--models", default=DEFAULT_MODELS, help=f"SMALL,LARGE as HIDDENxLAYERS (default {DEFAULT_MODELS})")
    p.add_argument("--repeats", type=int, default=None, help="A/B pairs for amp and compile (default: the size's)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up pairs for amp and compile")
    p.add_argument("--model-size-iterations", type=int, default=MODEL_SIZE_ITERATIONS,
                   help=f"Deep CFR iterations per model_size config (default {MODEL_SIZE_ITERATIONS})")
    p.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S, help="wall-clock budget for all steps")
    p.add_argument("--write", default=None, metavar="PATH", help="write the section into this markdown file")
    p.add_argument("--raw", default=None, metavar="PATH", help="also write every child's output as JSON lines")
    args = p.parse_args(argv)
    try:
        args.small, args.large = parse_models(args.models)
    except ValueError as exc:
        p.exit(2, f"optseq.engine.bench gpu-check: {exc}\n")
    for flag, value, low in (("--repeats", args.repeats, 1), ("--warmup", args.warmup, 0),
                             ("--model-size-iterations", args.model_size_iterations, 1)):
        if value is not None and value < low:
            p.exit(2, f"optseq.engine.bench gpu-check: {flag} {value}: must be at least {low}\n")
    if not args.budget_s > 0:
        p.exit(2, f"optseq.engine.bench gpu-check: --budget-s {args.budget_s}: must be positive\n")
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    try:
        return check(args, " ".join(["python -m optseq.engine.bench gpu-check", *argv]))
    except OSError as exc:  # --write or --raw somewhere it cannot write
        print(f"optseq.engine.bench gpu-check: {exc}", file=sys.stderr)
        return 2


def check(args: argparse.Namespace, command: str) -> int:
    if args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            print(f"optseq.engine.bench gpu-check: no CUDA device here (torch {torch.__version__}); "
                  "pass --device cpu to run it on the CPU", file=sys.stderr)
            return 2
    steps = plan(args.small, args.large)
    results = [StepResult(s) for s in steps]
    start = time.perf_counter()

    def publish() -> str:
        ctx = Context(command, datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), args.size, args.device,
                      args.budget_s, time.perf_counter() - start, args.model_size_iterations)
        section = render_section(results, args.small, args.large, ctx)
        if args.write:
            write_section(Path(args.write), section)
        return section

    with tempfile.TemporaryDirectory(prefix="optseq-gpu-check-") as tmp, \
            (open(args.raw, "w") if args.raw else contextlib.nullcontext()) as raw:
        for i, (step, result) in enumerate(zip(steps, results)):
            remaining = args.budget_s - (time.perf_counter() - start)
            timeout = step_timeout(steps, i, remaining)
            if remaining < MIN_STEP_S:
                result.skipped = True
                print(f"[gpu-check] {step.name}: skipped, {remaining:.0f} s of budget left", flush=True)
                continue
            print(f"[gpu-check] {step.name} (timeout {timeout:.0f} s) ...", flush=True)
            argv, extra_env = child_argv(step, args)
            env = dict(os.environ, OPTSEQ_ARTIFACTS=str(Path(tmp) / step.name.replace(" ", "-")), **extra_env)
            result.run, result.timed_out = run_child(argv, env, timeout, step.lever)
            result.timeout_s = timeout
            said = "; ".join(f"{s.metric} {s.median:.3f}x (n={s.n})" for s in ab_summaries(result.run.samples))
            print(f"[gpu-check] {step.name}: {_status(result)} {said} ({result.run.wall_s:.1f} s)", flush=True)
            if raw is not None:
                raw.write(json.dumps({"step": step.name, "argv": argv[1:], "env": extra_env,
                                      "returncode": result.run.returncode, "timed_out": result.timed_out,
                                      "wall_s": result.run.wall_s, "events": [*result.run.samples,
                                                                              *result.run.quality],
                                      "env_facts": result.run.env, "log_tail": result.run.log[-20:]}) + "\n")
                raw.flush()
            publish()
    section = publish()
    print(f"[gpu-check] wrote {args.write}" if args.write else section, flush=True)
    print("[gpu-check] " + verdict(results, args.small, args.large), flush=True)
    ok = all(r.run is not None and r.run.status != "failed" and not r.timed_out for r in results)
    return 0 if ok else 1
