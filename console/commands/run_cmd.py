"""`optseq --run TARGET`: headless lever runs with progress and a summary (no textual import)."""
from __future__ import annotations

import os
import shutil
import sys
import time

from optseq.state.api import (Exit, InputError, PlanError, RunControl, RunProgress, RunReport, Sequencer, UnknownLever,
                              asks, p_text)

# back to the line's start and erase it: the bar never leaves characters behind, however short the next text;
# the one escape optseq writes itself, and the one the output filter lets through
from optseq.console.commands.safe_stream import CLEAR_LINE  # noqa: E402
from optseq.console.commands.ending import cancelling  # noqa: E402
from optseq.console.commands.outputs import JsonOut  # noqa: E402
from optseq.state.api import ratio_text  # noqa: E402


class Progress:
    """A one-line bar redrawn in place on a terminal; plain lines otherwise (logs, CI).

    The count runs over all the run's passes (state.runs.progress): an inconclusive run asking for
    more pairs moves the bar on, never back to the start.
    """

    current: "Progress | None" = None
    """The bar on the terminal now: what Ctrl-C clears before it says anything."""

    def __init__(self, stream, lever: str, plain: bool = False, lever_spec=None, echo: bool = False):
        self.stream = stream
        self.echo = echo
        """--verbose: every line the command prints, above the bar (a lever nobody here wrote, misbehaving)."""
        self.tty = stream.isatty() and not plain  # several runs at once: lines, not bars overwriting each other
        self.lever = lever
        self.counted = RunProgress.of(lever_spec)
        self.msg = ""
        self.estimate = ""
        self._last = 0.0
        self._drawn = False

    @property
    def done(self) -> float:
        return self.counted.done

    @property
    def total(self) -> float:
        return self.counted.total

    def event(self, ev: dict) -> None:
        kind = ev.get("event")
        if kind == "sample":
            self.counted.sample(ev)
        elif kind == "progress":
            self.counted.progress(ev.get("done", 0), ev.get("total", 0))
            self.msg = self.counted.message(ev.get("msg", ""))
            self._show(force=not self.tty)
        elif kind == "estimate":
            ci = f" [{ratio_text(ev['ci_low'], 3)}, {ratio_text(ev['ci_high'], 3)}]" if ev.get("ci_low") is not None \
                else ""
            self.estimate = f"{ratio_text(ev['estimate'], 3)}×{ci} (n={ev['n']})"
            if not self.tty:
                self._line(f"{self.lever}: running estimate {self.estimate}")
            self._show()
        elif kind == "unavailable":
            self._line(f"{self.lever}: unavailable: {ev.get('reason', '')}")

    def log(self, line: str) -> None:
        if line.startswith("[optseq]"):
            self._line(f"{self.lever}: {line[9:]}")
        elif self.echo:
            self._line(f"{self.lever}| {line}")

    def _show(self, force: bool = False) -> None:
        if not self.tty:
            if force and self.total:
                self._line(f"{self.lever}: {self.counted.text()} {self.msg}".rstrip())
            return
        now = time.monotonic()
        if now - self._last < 0.05 and self.done != self.total:
            return
        self._last = now
        width = 20
        filled = int(width * self.done / self.total) if self.total else 0
        bar = "#" * filled + "-" * (width - filled)
        text = f"{self.lever} [{bar}] {self.counted.text()} {self.msg} {self.estimate}".rstrip()
        # one character short of the width: a line that fills the last column wraps on some terminals
        columns = _columns(self.stream)
        self.stream.write(CLEAR_LINE + text[:max(columns - 1, 10)])
        self.stream.flush()
        self._drawn = True
        Progress.current = self

    def _line(self, text: str) -> None:
        if self._drawn:
            self.stream.write(CLEAR_LINE)
        self.stream.write(text + "\n")
        self.stream.flush()
        if self._drawn:
            self._last = 0.0
            self._show()  # the bar again under the line, where it was

    def say(self, text: str) -> None:
        """A line of its own, above the bar: the bar is cleared first, never written over."""
        self._line(text)

    def close(self) -> None:
        if self._drawn:
            self.stream.write(CLEAR_LINE)
            self.stream.flush()
            self._drawn = False
        if Progress.current is self:
            Progress.current = None


def run_target(seq: Sequencer, target: str, out: JsonOut, parallel: int = 1, echo: bool = False) -> int:
    from optseq.state.api import RunnerError

    try:
        seq.lever_runs.runner  # a runner that cannot be set up is bad input, before anything is picked or recorded
    except RunnerError as exc:
        print(f"optseq: {exc}", file=sys.stderr)
        return Exit.BAD_INPUT
    control = RunControl()
    # Ctrl-C, SIGTERM or SIGHUP cancels the run under way (its process group or job stopped with its grace), never
    # optseq itself
    with cancelling(lambda ended: _interrupt(control, ended.name)) as ended:
        code = _run_target(seq, target, out, parallel, control, echo)
    # only those signals cancel this control: the run is recorded cancelled, the summary printed, and the shell told
    return ended.code or code


def _columns(stream) -> int:
    """The width of the terminal the bar is drawn on (stderr), which stdout's redirection does not change."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return shutil.get_terminal_size((80, 24)).columns


def _interrupt(control: RunControl, why: str = "Ctrl-C") -> None:
    bar = Progress.current
    what = f"{bar.lever}: " if bar else ""
    message = f"{what}{why}: cancelling the run (its process group is stopped, then its end recorded)"
    try:
        if bar is not None:
            bar.say(message)
        else:
            print(message, file=sys.stderr, flush=True)
    except OSError:  # stderr gone with its reader: the run is cancelled all the same
        pass
    control.cancel()


def _refused(seq: Sequencer, target: str, message: str, out: JsonOut, code: int) -> int:
    """A run refused before it started: one line on stderr and, with --json, still a JSON object on stdout."""
    print(f"optseq: {message}", file=sys.stderr)
    if out.wanted:
        status = seq.views.status()
        out.emit({"target": target, "runs": [], "refused": message, "next": status.next, "todo": status.todo})
    return code


def _run_target(seq: Sequencer, target: str, out: JsonOut, parallel: int, control: RunControl,
                echo: bool = False) -> int:
    group = target in seq.lever_runs.GROUPS
    reports: list[RunReport] = []
    try:
        seq.lever_runs.testbed  # noqa: B018 -- an OPTSEQ_TESTBED that names no testbed refuses the run before it starts
    except InputError as exc:
        return _refused(seq, target, str(exc), out, Exit.BAD_INPUT)
    # a run whose optseq died goes on on its cluster: picked up first, so its decision is in before the rest
    for detached in seq.views.detached_runs():
        if (group or detached.lever == target) and not control.cancelled:
            print(f"{detached.lever}: re-attaching run {detached.run} (Ray job {detached.submission_id})",
                  file=sys.stderr, flush=True)
            _run_one(seq, str(detached.lever), control, reports, echo)
    if reports and (target == "next" or not group):
        return _summarise(seq, target, reports, out)
    try:
        first = seq.lever_runs.pick(target) if group else target
        if not group:
            seq.lever_runs.check_runnable(target)  # by name it runs even when unavailable or not `next`
    except UnknownLever as exc:
        return _refused(seq, target, str(exc), out, Exit.BAD_INPUT)
    except InputError as exc:  # a lever the plan has that cannot run now, or a group with none to run
        return _refused(seq, target, str(exc), out, Exit.NOTHING)
    if not group:
        try:
            # a branch lever's refs: the plan's input, refused before the run says it starts
            seq.lever_runs.check_refs(target)
        except InputError as exc:
            return _refused(seq, target, str(exc), out, Exit.BAD_INPUT)
    elsewhere = seq.lever_runs.watch_refusals() if target == "watch" else []
    for line in elsewhere[:-1] if first is None and not reports else elsewhere:
        print(f"optseq: {line}", file=sys.stderr, flush=True)
    if first is None and not reports:
        # a watch that leaves every adopted gain to another testbed says so, one line each, and nothing more
        return _refused(seq, target, elsewhere[-1] if elsewhere else
                        f"nothing to run for {target!r}: {_nothing_why(seq, target)}", out, Exit.NOTHING)
    ran: list[str] = [r.lever for r in reports]
    lever_id: str | None = first
    if target == "watch" and first is not None:
        from optseq.state.api import watch_preamble as preamble

        for line in preamble(seq.run_host):
            print(f"optseq: {line}", file=sys.stderr, flush=True)
    if parallel > 1 and group and target != "next" and first is not None:
        _run_parallel(seq, target, parallel, control, reports, echo)
        lever_id = None
    while lever_id is not None and not control.cancelled:
        ran.append(lever_id)
        _run_one(seq, lever_id, control, reports, echo, watch=target == "watch")
        if not group or target == "next":
            break
        # the next target comes from the state this run left (it may have made levers ready or stale), and from
        # the plan as it is now: an edit made while a lever ran is what the next one runs
        try:
            if seq.reload_plan():
                print(f"optseq: {seq.plan.path} changed on disk: read again before the next lever", file=sys.stderr)
        except PlanError as exc:
            print(f"optseq: {exc}", file=sys.stderr)
            return Exit.BAD_INPUT
        lever_id = seq.lever_runs.pick(target, done=ran)
    return _summarise(seq, target, reports, out)


def _run_one(seq: Sequencer, lever_id: str, control: RunControl, reports: list, echo: bool = False,
             watch: bool = False) -> None:
    spec = _lever(seq, lever_id)
    progress = Progress(sys.stderr, lever_id, lever_spec=spec, echo=echo)
    # at once, before the command's start-up (an import of torch, a compile) keeps the terminal silent
    progress.say(f"{lever_id}: starting {'watch' if watch else 'run'} ({asks(spec) if spec is not None else 'one pass'})")
    try:
        report = seq.run_lever(lever_id, on_event=progress.event, on_log=progress.log, control=control, watch=watch)
    except InputError as exc:  # refused at its start (e.g. a lever a reversal closed meanwhile)
        progress.close()
        print(f"optseq: {exc}", file=sys.stderr)
    else:
        progress.close()
        reports.append(report)


def _summarise(seq: Sequencer, target: str, reports: list, out: JsonOut) -> int:
    status = seq.views.status()
    if out.wanted:
        out.emit({"target": target, "runs": [r.to_dict() for r in reports], "next": status.next,
                  "todo": status.todo})
    if not out.stdout:
        for report in reports:
            print(summary_line(report))
        print(f"next: {status.next or 'nothing to run'}")
        if not status.next:
            for item in status.todo:
                print(f"to do: {item}")
    if not reports:
        return Exit.NOTHING
    if any(r.verdict == "eroded" for r in reports):
        return Exit.ERODED
    if any(r.exit_code == Exit.RUN_FAILED for r in reports):
        return Exit.RUN_FAILED
    if all(r.exit_code == Exit.NOTHING for r in reports):
        return Exit.NOTHING
    return Exit.OK


def _run_parallel(seq: Sequencer, target: str, width: int, control: RunControl, reports: list,
                  echo: bool = False) -> None:
    """Up to `width` levers of the group at once (state/runs/parallel.py), each printed as it lands."""
    from optseq.state.api import GroupRun

    def sinks(lever_id: str):
        # several runs: lines, not one bar
        progress = Progress(sys.stderr, lever_id, plain=True, lever_spec=_lever(seq, lever_id), echo=echo)
        return progress.event, progress.log

    def landed(one) -> None:
        print(summary_line(one.report) if one.report else f"optseq: {one.refused}", file=sys.stderr, flush=True)

    group = GroupRun(seq.run_host, target, width, sinks,
                     on_started=lambda lever, n: print(f"{lever}: started ({n} running)", file=sys.stderr, flush=True),
                     on_landed=landed)
    control.attach(group)  # Ctrl-C reaches every run of the group
    reports += group.run()


def summary_line(report: RunReport) -> str:
    stats = report.figures.stats
    figures = ""
    if stats is not None and stats.estimate is not None:
        figures = f"  {ratio_text(stats.estimate, 3)}×"
        if stats.ci_low is not None and stats.ci_high is not None:
            figures += f" [{ratio_text(stats.ci_low, 3)}, {ratio_text(stats.ci_high, 3)}]"
        figures += f" n={stats.n}" + (f" in {stats.launches} launches" if stats.replicate == "launch" else "")
        if stats.p_value is not None:
            figures += f" p={p_text(stats.p_value)}"
    # an undecided run says so in words: "bounds straddle" alone leaves a reader to infer it
    decided = f"  → {report.decision}" if report.decision else (
        f"  → {report.verdict}" if report.verdict in ("inconclusive", "holds", "eroded") else "")
    # with the figures printed, only the rule's conclusion is left to say ("95% CI clears 1.50×; guards hold")
    why = _conclusion(report) if figures else report.message.removeprefix(f"{report.lever}: ")
    noise = (stats.noise if stats is not None else None) or report.figures.noise
    said = f"  ({why})" if why and why != report.status else ""  # not `cancelled  (cancelled)`
    return (f"run {report.run_id} {report.lever}: {report.status}{figures}{decided}{said}"
            + (f"\n  warning: {noise}" if noise else ""))


def _conclusion(report: RunReport) -> str:
    """The rule's conclusion from the verdict's said, with what the run's message adds after the rule's reason (a
    decision refused, another testbed's numbers); the message whole where the verdict kept no said."""
    from optseq.console.words.verdicts import conclusion

    verdict = report.figures.rule_verdict
    said = conclusion(verdict)
    written = f"{report.lever}: {report.verdict} — {verdict.reason}"  # how the run wrote it: run_record.finish
    if said is None or not report.message.startswith(written):
        return report.message.removeprefix(f"{report.lever}: ")
    return said + report.message.removeprefix(written)


def _lever(seq: Sequencer, lever_id: str):
    try:
        return seq.plan.lever(lever_id)
    except Exception:  # an unknown lever: run_lever refuses it with the one-line reason
        return None


def _nothing_why(seq: Sequencer, target: str) -> str:
    status = seq.views.status()
    todo = status.todo
    if target == "watch":
        skipped = [f"{v.id} ({v.branch.text})" for v in status.levers if v.branch and v.branch.state == "landed"]
        return "no adopted lever has a command to watch it with" + (
            f"; merged branches are the baseline now: {', '.join(skipped)}" if skipped else "")
    if target == "stale":
        stale = [v.id for v in status.levers if v.state == "stale"]
        if not stale:
            return "no lever is stale"
        return f"stale but not runnable now: {', '.join(stale)}" + (f"; to do: {'; '.join(todo)}" if todo else "")
    running = [v.id for v in status.levers if v.state == "running"]
    if running:  # what the rest waits on is that run, not the first blocked lever in plan order
        ends = "what it decides opens the next" if not todo else "to do: " + "; ".join(todo)
        return f"no lever can run while {', '.join(running)} runs ({ends})"
    if todo:  # only the user can move the plan on: say what to do
        return "no lever can run; to do: " + "; ".join(todo)
    blocked = [f"{v.id} ({'; '.join(v.why_blocked)})" for v in status.levers if v.why_blocked]
    return "no lever is ready" + (f"; waiting: {blocked[0]}" if blocked else "")
