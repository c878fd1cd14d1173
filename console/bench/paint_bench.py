"""Paint bench: the console's first screen against a minimal Textual app's, and `optseq status` against
`import textual.app`, side by side.

`python -m optseq.console.bench.paint_bench [--repeat N] [--write docs/performance.md]`

Each round runs, one after the other, fresh processes of (a) `python -c "import textual.app"`, (b) the
console on the default plan in a tmux pane of 80×24 of its own (its own server socket), timed from the
`tmux new-session` call to the first capture-pane that shows the footer's keys (`? Help`, `q Quit`,
`^p palette` on the last line) with the lever table above them, (c) `optseq status` on the same plan
and store, and (d) the floor under (b): a minimal Textual app (MINIMAL_APP: a header, a nine-row
`DataTable`, a footer with the same keys) timed the same way. The figures are medians over the rounds and
the verdicts ratios of medians taken in the same run, so a busy machine slows all four alike. Nothing here
imports textual: every figure is a child.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from optseq.state.api import Exit, perf_doc

ROOT = Path(__file__).resolve().parents[2]
"""The repo (or the installed optseq package): where configs/ lies."""
DEFAULT_PLAN = ROOT / "configs" / "sequencing.toml"
SECTION = "paint"
REPEAT = 5
TARGETS = {"paint": 1.5, "status": 0.4, "floor": 1.1}
"""Issue 25: the keyed first screen within 1.5× of `import textual.app`, `status` within 0.4× of it; issue 33:
the keyed first screen within 1.1× of the minimal app's, what any Textual app with a table costs."""
SIZE = (80, 24)
POLL_S = 0.02
"""How often the pane is read while waiting for the screen: the figure is late by half of it on average."""
CEILING_S = 120.0
"""A screen that has not come by then is a hang, not a figure."""
FOOTER_KEYS = ("? Help", "q Quit", "^p palette")
TABLE_MARK = "julia_port"
"""A lever of the default plan: the table is drawn once it shows."""
MAKE_COMMAND = "python -m optseq.console.bench.paint_bench --write docs/performance.md"
MINIMAL_APP = textwrap.dedent("""\
    from textual.app import App
    from textual.binding import Binding
    from textual.widgets import DataTable, Footer, Header

    LEVERS = ("julia_port", "port", "cython_bot", "option_b", "model_size", "amp", "compile", "tensorrt",
              "option_a")


    class Minimal(App):
        BINDINGS = [Binding("question_mark", "help", "Help"), Binding("q", "quit", "Quit")]

        def compose(self):
            yield Header()
            yield DataTable()
            yield Footer()

        def on_mount(self):
            table = self.query_one(DataTable)
            table.add_columns("lever", "state", "next")
            table.add_rows((lever, "ready", "run it") for lever in LEVERS)


    Minimal().run()
""")
"""(d): the least a Textual app that shows what the console's first screen shows can take to paint it."""


class BenchError(RuntimeError):
    """A child failed or a screen never came; str() says which and what it printed."""


@dataclass
class Round:
    textual_s: float
    first_text_s: float
    """(b) until the pane first shows any text."""
    keyed_s: float
    """(b) until the table and the footer's keys are on the pane."""
    status_s: float
    textual_cpu: float
    """CPU seconds (user + system) of (a), (b) up to the read that saw its keys, and (c): what a busy machine
    does not stretch as it stretches wall time."""
    keyed_cpu: float
    status_cpu: float
    minimal_s: float
    """(d) until the minimal app's table and footer keys are on the pane."""
    minimal_cpu: float


def optseq_command() -> list[str]:
    """The installed `optseq` beside this interpreter, else the same entry point through `-m`."""
    script = Path(sys.executable).parent / "optseq"
    return [str(script)] if script.exists() else [sys.executable, "-m", "optseq.console.cli"]


DROPPED = ("OPTSEQ_DB", "OPTSEQ_PLAN", "PYTHONDONTWRITEBYTECODE")
"""Not passed to the children: they open the plan and store they are given, and keep Python's bytecode cache
as an installed optseq does (without it every start compiles optseq's own modules again, while textual's
come compiled from its wheel, so the comparison would be of a source checkout, not of the console)."""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in DROPPED}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def child(argv: list[str]) -> tuple[float, float]:
    """Run one process to its end: its wall and CPU seconds; BenchError if it fails."""
    cpu0, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    elapsed, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise BenchError(f"{shlex.join(argv)} exited {proc.returncode}: {' | '.join(tail)}")
    return elapsed, cpu


def process_cpu(pid: int) -> float:
    """CPU seconds a live process has run so far: /proc/PID/schedstat (ns), else its stat's clock ticks."""
    try:
        with open(f"/proc/{pid}/schedstat", encoding="ascii") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def keyed(screen: str) -> bool:
    lines = screen.rstrip("\n").splitlines()
    return bool(lines) and all(k in lines[-1] for k in FOOTER_KEYS) and TABLE_MARK in screen


def paint(tmux: str, command: list[str]) -> tuple[float, float, float]:
    """(first text, keyed screen) seconds of one app in a fresh tmux server, which is then closed, and
    the CPU seconds the app had run when its keys were seen."""
    socket = f"optseq-paint-{uuid.uuid4().hex[:8]}"
    # a tmux server started without a terminal hands its panes COLUMNS and LINES, which Textual prefers to
    # the pane's real size: dropped, so the pane's size rules (as in tests/console/test_tmux.py)
    shell = f"unset COLUMNS LINES; cd {shlex.quote(str(ROOT))} && exec {shlex.join(command)}"
    base = [tmux, "-L", socket, "-f", "/dev/null"]
    env = {k: v for k, v in _env().items() if k not in ("TMUX", "TMUX_PANE")}
    env["TERM"] = "xterm-256color"
    first = None
    t0 = time.perf_counter()
    try:
        subprocess.run(base + ["new-session", "-d", "-x", str(SIZE[0]), "-y", str(SIZE[1]), shell],
                       check=True, timeout=30, env=env)
        # the shell execs the app: the pane's process is the app's
        pid = int(subprocess.run(base + ["display-message", "-p", "#{pane_pid}"], capture_output=True,
                                 text=True, timeout=30, check=True).stdout)
        while True:
            screen = subprocess.run(base + ["capture-pane", "-p"], capture_output=True, text=True,
                                    timeout=30).stdout
            now = time.perf_counter() - t0
            if first is None and screen.strip():
                first = now
            if keyed(screen):
                return (now if first is None else first), now, process_cpu(pid)
            if now > CEILING_S:
                raise BenchError(f"{command[0]}'s keyed screen did not come in {CEILING_S:g} s; the pane:\n{screen}")
            time.sleep(POLL_S)
    finally:
        subprocess.run(base + ["kill-server"], capture_output=True, timeout=30)


def measure(repeat: int, plan: Path, db: Path, say=lambda _: None) -> list[Round]:
    tmux = shutil.which("tmux")
    if tmux is None:
        raise BenchError("tmux is not installed: the first screen is timed in a tmux pane")
    optseq = optseq_command()
    textual = [sys.executable, "-c", "import textual.app"]
    status = [*optseq, "status", "--plan", str(plan), "--db", str(db)]
    console = [*optseq, "--plan", str(plan), "--db", str(db)]
    minimal = [sys.executable, "-c", MINIMAL_APP]
    from optseq.state.api import Store

    Store.open(db, mode="write").close()  # a read (status) of a --db with no store is refused: the store is made first
    # a round not counted: the files are in the page cache, .pyc files are written
    child(status)
    child(textual)
    paint(tmux, console)
    paint(tmux, minimal)
    rounds = []
    for i in range(repeat):
        a, a_cpu = child(textual)
        first, keys, keys_cpu = paint(tmux, console)
        c, c_cpu = child(status)
        _, d, d_cpu = paint(tmux, minimal)
        rounds.append(Round(a, first, keys, c, a_cpu, keys_cpu, c_cpu, d, d_cpu))
        say(f"round {i + 1}/{repeat}: import textual.app {a:.2f} s ({a_cpu:.2f} s CPU), first text {first:.2f} s, "
            f"keyed screen {keys:.2f} s ({keys_cpu:.2f} s CPU), status {c:.2f} s ({c_cpu:.2f} s CPU), "
            f"minimal app {d:.2f} s ({d_cpu:.2f} s CPU)")
    return rounds


def load() -> str:
    """The load average and core count, in words: the section says what the machine was doing."""
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return f"{os.cpu_count()} cores"
    said = f"{os.cpu_count()} cores, load average {one:.1f} (1 min) / {five:.1f} (5 min) when it started"
    if one > (os.cpu_count() or 1) / 2:
        said += (" (a shared, busy machine: other work took its cores, which stretches the wall time of (b), "
                 "several processes with tmux's, more than that of one python)")
    return said


def render(rounds: list[Round], *, command: str, when: str, machine: str) -> str:
    med = {k: statistics.median(getattr(r, k) for r in rounds) for k in Round.__dataclass_fields__}
    made_by = f"`make paint-bench` (`{command}`)" if command == MAKE_COMMAND else f"`{command}`"

    def verdict(of: str, target: float, against: str = "textual") -> str:
        wall, cpu = med[f"{of}_s"] / med[f"{against}_s"], med[f"{of}_cpu"] / med[f"{against}_cpu"]
        return (f"{_ratio(wall, target)} wall, {_ratio(cpu, target)} CPU (target ≤ {target:g}×: "
                f"{_met(wall <= target)} by wall time, {_met(cpu <= target)} by CPU time)")

    about = (f"Medians of {len(rounds)} rounds; each round runs (a), (b) and (c) one after the other, as fresh "
             "processes, after one round not counted. (a) `python -c \"import textual.app\"`. (b) `optseq` on "
             f"`configs/sequencing.toml` in a tmux pane of {SIZE[0]}×{SIZE[1]} (a tmux server of its own, "
             "TERM=xterm-256color), from the `tmux new-session` call to the first `tmux capture-pane -p` that "
             "shows the lever table and the footer's keys (`? Help`, `q Quit`, `^p palette`); the pane is read "
             f"every {POLL_S * 1000:.0f} ms, and first text is the first read with anything on it. (c) `optseq "
             "status` on the same plan and store. (d) the floor under (b): a minimal Textual app (a header, a "
             "nine-row `DataTable` of the plan's lever names, a footer with the same keys; `MINIMAL_APP` in "
             "console/bench/paint_bench.py) timed as (b) is. Every figure includes process start-up; the children run with "
             "Python's bytecode cache (PYTHONDONTWRITEBYTECODE is not passed on), as an installed optseq does, "
             "and the uncounted round writes it. Wall time is what a user waits; CPU time (user + system: of "
             "(a) and (c) to their exit, of (b) up to the read that saw its keys, from /proc/PID/schedstat) is "
             "what a busy machine does not stretch, and the console keeps working a little after its first "
             "frame (the hours-saved column, the views behind tabs), which (b)'s CPU figure includes. The "
             "ratios are of medians taken side by side.")
    lines = [f"<!-- section:{SECTION} -->", "## Console first paint and `status`", "",
             f"Written by {made_by} on {when}; {machine}.", "", *textwrap.wrap(about, 110), "",
             "| | (a) `import textual.app` | (b) first text | (b) keyed first screen | (c) `optseq status` "
             "| (d) minimal app, keyed |",
             "|---|---|---|---|---|---|",
             f"| wall | {med['textual_s']:.2f} s | {med['first_text_s']:.2f} s | {med['keyed_s']:.2f} s "
             f"| {med['status_s']:.2f} s | {med['minimal_s']:.2f} s |",
             f"| CPU | {med['textual_cpu']:.2f} s | | {med['keyed_cpu']:.2f} s | {med['status_cpu']:.2f} s "
             f"| {med['minimal_cpu']:.2f} s |", "",
             f"Keyed first screen / minimal app's: {verdict('keyed', TARGETS['floor'], 'minimal')}.", "",
             f"Keyed first screen / `import textual.app`: {verdict('keyed', TARGETS['paint'])}.", "",
             f"`optseq status` / `import textual.app`: {verdict('status', TARGETS['status'])}.", "",
             f"<!-- /section:{SECTION} -->"]
    return "\n".join(lines)


def _ratio(ratio: float, target: float) -> str:
    """Two decimals, three where two would round a ratio over its target down onto it (0.405 is not 0.40)."""
    shown = f"{ratio:.2f}"
    return f"{ratio:.3f}×" if ratio > target and float(shown) <= target else f"{shown}×"


def _met(ok: bool) -> str:
    return "met" if ok else "**not met**"


def machine() -> str:
    cpu = perf_doc.cpu_name()
    return f"{cpu}, {load()}, Python {platform.python_version()}, {platform.system()} {platform.release()}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m optseq.console.bench.paint_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=REPEAT, help=f"rounds (default {REPEAT})")
    p.add_argument("--write", type=Path, default=None, metavar="PATH", help="write the section into this markdown file")
    p.add_argument("--plan", type=Path, default=DEFAULT_PLAN, help="plan to open (default configs/sequencing.toml)")
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error(f"--repeat {args.repeat}: needs at least one")

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    about = machine()
    try:
        with tempfile.TemporaryDirectory(prefix="optseq-paint-bench-") as tmp:
            rounds = measure(args.repeat, args.plan.resolve(), Path(tmp) / "state", say)
    except BenchError as e:
        print(f"optseq paint bench: {e}", file=sys.stderr)
        return Exit.RUN_FAILED
    command = "python -m optseq.console.bench.paint_bench" + (
        f" --repeat {args.repeat}" if args.repeat != REPEAT else "") + (
        f" --plan {args.plan}" if args.plan != DEFAULT_PLAN else "") + (f" --write {args.write}" if args.write else "")
    section = render(rounds, command=command, when=when, machine=about)
    if args.write:
        try:
            perf_doc.write_section(args.write, section, SECTION)
        except perf_doc.SectionError as e:
            print(f"optseq paint bench: {e}", file=sys.stderr)
            return Exit.BAD_INPUT
        print(f"wrote {args.write}")
    else:
        print(section)
    return Exit.OK


if __name__ == "__main__":
    sys.exit(main())
