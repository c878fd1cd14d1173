"""The screen on the reference workload, on this machine: `optseq --run screen` over the engine's AMP, compile and
Option A levers at two model sizes, and over configs/examples/cpu_train's four toggles (issue 40, point 5).

`python -m optseq.state.bench.screen_ref [--sizes 64,512] [--budget LAUNCHES] [--no-cpu-train] [--write PATH]`

Each screen is the real CLI in a fresh store of its own (a temporary directory): `optseq --plan P --db D --run
screen LEVER … --json`, its design, blocks, launches, calls, effects and interactions read from that summary. The
engine's plan is configs/examples/screen_engine/plan.toml with its workload's --hidden set to each size; model size
is the context of two independent screens rather than a factor of one (a factor of a screen is a lever the run
would decide, adopt and confirm, and "adopt a smaller model" is not a speed-up to take). How much a lever's gain
moves with size is the ratio of its two main effects, its interval from their log-scale standard errors combined
(Welch–Satterthwaite's degrees of freedom). cpu_train's levers each run their own command; a screen launches one
[workload], so its plan is written here as one: the same train.py, the same four environment toggles and rules,
without the order its `requires` imposes (deciding them together is the point), and one guard, the loosest of its
levers' (bf16's 3% of the final loss), since a design's runs mix the toggles.

Nothing here times anything itself: every figure is what the screens measured. The section also says the machine's
load at the start and the end, since the machine is shared.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import msgspec

from optseq.state.bench.screen_ref_doc import SECTION, render
from optseq.state.screen_record import Effect, Report, report as as_report
from optseq.state.bench.store_measure import CLI, ROOT

ENGINE_PLAN = ROOT / "configs" / "examples" / "screen_engine" / "plan.toml"
CPU_TRAIN = ROOT / "configs" / "examples" / "cpu_train"
ENGINE_LEVERS = ("amp", "compile", "option_a")
SIZES = (64, 512)
MAKE_COMMAND = "python -m optseq.state.bench.screen_ref --write docs/performance.md"


@dataclass
class Screened:
    """One screen as the CLI reported it."""

    name: str
    levers: tuple[str, ...]
    exit_code: int
    wall_s: float
    report: Report | None = None
    """The `--run screen --json` summary's run (ScreenReport.to_dict()), None where it brought none."""
    error: str = ""

    def main(self, lever: str) -> Effect | None:
        fit = self.report.fit if self.report is not None else None
        return next((effect for effect in fit.mains if effect.name == lever), None) if fit is not None else None


def engine_plan(hidden: int, where: Path) -> Path:
    """The screen_engine plan with its workload at `hidden`, written into `where`."""
    text = ENGINE_PLAN.read_text(encoding="utf-8")
    sized, n = re.subn(r'"--hidden=\d+"', f'"--hidden={hidden}"', text)
    if n != 1:
        raise SystemExit(f"{ENGINE_PLAN}: expected one --hidden=N in its workload, found {n}")
    path = where / "plan.toml"
    path.write_text(sized, encoding="utf-8")
    return path


def _toml(value) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(f"no TOML for {value!r}")


def cpu_train_plan(where: Path) -> tuple[Path, tuple[str, ...]]:
    """configs/examples/cpu_train as one [workload] with its four toggles as its levers' changes."""
    shipped = tomllib.loads((CPU_TRAIN / "plan.toml").read_text(encoding="utf-8"))
    loosest = {"name": "final_loss", "json": "final_loss", "max_rel_diff": 0.03}
    lines = ["[plan]", f"title = {_toml(shipped['plan']['title'] + ', screened')}",
             f"as_of = {shipped['plan']['as_of'].isoformat()}", 'lang = "en"', "",
             "[workload]", f"command = {_toml(['python', 'train.py'])}", f"cwd = {_toml(str(CPU_TRAIN))}",
             'metric = { name = "samples_per_s", json = "samples_per_s", unit = "samples/s" }',
             f"guards = [{_toml(loosest)}]", "warmup = 0"]
    ids = []
    for lever in shipped["levers"]:
        rule = {k: lever["rule"][k] for k in ("metric", "min_speedup", "repeats", "max_repeats")}
        lines += ["", "[[levers]]", f"id = {_toml(lever['id'])}", f"title = {_toml(lever['title'])}",
                  'kind = "speedup"', f"timeout_s = {lever['timeout_s']}", 'status = "not measured"',
                  f"rule = {_toml(rule)}", "[levers.arms]",
                  f"candidate_env = {_toml(lever['arms']['candidate_env'])}"]
        ids.append(lever["id"])
    path = where / "plan.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, tuple(ids)


def screen(name: str, plan: Path, levers: tuple[str, ...], budget: int | None, log) -> Screened:
    """`optseq --run screen` in a store of its own; its stderr (progress) goes on to ours as it comes."""
    db = plan.parent / "db"
    argv = [*CLI, "--plan", str(plan), "--db", str(db), "--run", "screen", *levers, "--json"]
    if budget is not None:
        argv += ["--budget", str(budget)]
    log(f"{name}: {' '.join(argv[2:])}")
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=plan.parent, stdout=subprocess.PIPE, stderr=None, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        out, _ = proc.communicate()
    except BaseException:
        # Ctrl-C reaches optseq through the terminal's process group; SIGTERM and SIGHUP reach only this process,
        # so they are passed on: optseq cancels the screen, stops its launches and records what it measured
        proc.terminate()
        proc.wait()
        raise
    wall = time.perf_counter() - start
    found = Screened(name, levers, proc.returncode, wall)
    try:
        found.report = as_report(json.loads(out)["runs"][0])
    except (ValueError, KeyError, IndexError, TypeError, msgspec.ValidationError):
        found.error = (out.strip().splitlines() or ["no output"])[-1]
    return found


@dataclass(frozen=True)
class SizeRatio:
    """How a lever's effect moves from the small model to the large: the ratio of its two ratios."""

    lever: str
    small: float
    large: float
    ratio: float
    low: float
    high: float
    df: float


def size_ratio(lever: str, small: Effect, large: Effect) -> SizeRatio | None:
    """large/small with its 95% interval; the two screens are independent, so their log variances add."""
    from scipy import stats

    se1, se2 = small.log_se or 0.0, large.log_se or 0.0
    df1, df2 = small.df or 0, large.df or 0
    if df1 <= 0 or df2 <= 0 or se1 + se2 == 0.0:
        return None
    log_ratio = math.log(large.ratio) - math.log(small.ratio)
    var = se1 ** 2 + se2 ** 2
    df = var ** 2 / (se1 ** 4 / df1 + se2 ** 4 / df2)
    half = float(stats.t.ppf(0.975, df)) * math.sqrt(var)
    return SizeRatio(lever, small.ratio, large.ratio, math.exp(log_ratio), math.exp(log_ratio - half),
                     math.exp(log_ratio + half), df)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} (1 min), {five:.2f} (5 min), {fifteen:.2f} (15 min)"


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m optseq.state.bench.screen_ref", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default=",".join(map(str, SIZES)),
                   help="two hidden widths, small then large (default 64,512)")
    p.add_argument("--budget", type=int, default=None, metavar="LAUNCHES",
                   help="each screen's budget in launches (default: what its levers' own rules would spend)")
    p.add_argument("--no-cpu-train", dest="cpu_train", action="store_false",
                   help="screen the engine's levers only")
    p.add_argument("--write", default=None, metavar="PATH", help="write the section into this markdown file")
    args = p.parse_args(argv)
    try:
        sizes = tuple(int(s) for s in args.sizes.split(","))
    except ValueError:
        p.error(f"--sizes {args.sizes!r}: expected two whole numbers, like 64,512")
    if len(sizes) != 2 or min(sizes) < 1 or sizes[0] >= sizes[1]:
        p.error(f"--sizes {args.sizes!r}: expected two widths, small then large, like 64,512")
    if args.budget is not None and args.budget < 1:
        p.error(f"--budget {args.budget}: a screen's budget is a number of launches, at least 1")
    args.sizes = sizes
    return args


def _interrupted(signum, frame) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupted)
    try:
        return _main(args, argv)
    except KeyboardInterrupt as exc:
        print(f"screen_ref: stopped ({exc or 'SIGINT'}): nothing written", file=sys.stderr, flush=True)
        return 130


def _main(args: argparse.Namespace, argv: list[str] | None) -> int:

    def log(line: str) -> None:
        print(f"screen_ref: {line}", file=sys.stderr, flush=True)

    started, load_start = dt.datetime.now(dt.timezone.utc), load()
    log(f"load at the start: {load_start}")
    screens = []
    with tempfile.TemporaryDirectory(prefix="optseq-screen-ref-") as tmp:
        for hidden in args.sizes:
            where = Path(tmp) / f"h{hidden}"
            where.mkdir()
            screens.append(screen(f"h{hidden}", engine_plan(hidden, where), ENGINE_LEVERS, args.budget, log))
        if args.cpu_train:
            where = Path(tmp) / "cpu_train"
            where.mkdir()
            plan, ids = cpu_train_plan(where)
            screens.append(screen("cpu_train", plan, ids, args.budget, log))
    load_end = load()
    log(f"load at the end: {load_end}")
    small, large = screens[0], screens[1]
    ratios = []
    for lever in ENGINE_LEVERS:
        a, b = small.main(lever), large.main(lever)
        if a is not None and b is not None and (found := size_ratio(lever, a, b)) is not None:
            ratios.append(found)
    command = "python -m optseq.state.bench.screen_ref " + " ".join(argv if argv is not None else sys.argv[1:])
    text = render(screens, ratios, sizes=args.sizes, command=command.strip(), make=MAKE_COMMAND, when=started,
                  load_start=load_start, load_end=load_end)
    print(text)
    if args.write:
        from optseq.state.bench.perf_doc import write_section

        write_section(Path(args.write), text, SECTION)
        log(f"wrote the {SECTION} section of {args.write}")
    return 0 if all(s.report is not None for s in screens) else 1


if __name__ == "__main__":
    sys.exit(main())
