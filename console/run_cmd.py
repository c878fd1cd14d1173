"""`optseq --run TARGET`: headless lever runs with progress and a summary (no textual import)."""
from __future__ import annotations

import json
import signal
import sys
import time

from optseq.state.runs.lever_run import RunControl, RunReport
from optseq.state.sequencer import InputError, Sequencer

OK, RUN_FAILED, BAD_INPUT, NOTHING = 0, 1, 2, 3


class Progress:
    """A one-line bar redrawn in place on a terminal; plain lines otherwise (logs, CI)."""

    def __init__(self, stream, lever: str, plain: bool = False):
        self.stream = stream
        self.tty = stream.isatty() and not plain  # several runs at once: lines, not bars overwriting each other
        self.lever = lever
        self.done = self.total = 0
        self.msg = ""
        self.estimate = ""
        self._last = 0.0

    def event(self, ev: dict) -> None:
        kind = ev.get("event")
        if kind == "progress":
            self.done, self.total, self.msg = ev.get("done", 0), ev.get("total", 0), ev.get("msg", "")
            self._show(force=not self.tty)
        elif kind == "estimate":
            ci = f" [{ev['ci_low']:.3f}, {ev['ci_high']:.3f}]" if ev.get("ci_low") is not None else ""
            self.estimate = f"{ev['estimate']:.3f}×{ci} (n={ev['n']})"
            if not self.tty:
                self._line(f"{self.lever}: running estimate {self.estimate}")
            self._show()
        elif kind == "unavailable":
            self._line(f"{self.lever}: unavailable: {ev.get('reason', '')}")

    def log(self, line: str) -> None:
        if line.startswith("[optseq]"):
            self._line(f"{self.lever}: {line[9:]}")

    def _show(self, force: bool = False) -> None:
        if not self.tty:
            if force and self.total:
                self._line(f"{self.lever}: {self.done}/{self.total} {self.msg}".rstrip())
            return
        now = time.monotonic()
        if now - self._last < 0.05 and self.done != self.total:
            return
        self._last = now
        width = 24
        filled = int(width * self.done / self.total) if self.total else 0
        bar = "#" * filled + "-" * (width - filled)
        text = f"\r{self.lever} [{bar}] {self.done}/{self.total} {self.msg} {self.estimate}"
        self.stream.write(text[:200].ljust(80))
        self.stream.flush()

    def _line(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r" + " " * 80 + "\r")
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def run_target(seq: Sequencer, target: str, as_json: bool, parallel: int = 1) -> int:
    from optseq.state.runners import RunnerError

    try:
        seq.runner  # a runner that cannot be set up is bad input, before anything is picked or recorded
    except RunnerError as exc:
        print(f"optseq: {exc}", file=sys.stderr)
        return BAD_INPUT
    control = RunControl()
    # Ctrl-C cancels the run under way (its process group or job stopped with its grace), never optseq itself
    previous = signal.signal(signal.SIGINT, lambda *_: control.cancel())
    try:
        return _run_target(seq, target, as_json, parallel, control)
    finally:
        signal.signal(signal.SIGINT, previous)


def _run_target(seq: Sequencer, target: str, as_json: bool, parallel: int, control: RunControl) -> int:
    group = target in seq.GROUPS
    reports: list[RunReport] = []
    # a run whose optseq died goes on on its cluster: picked up first, so its decision is in before the rest
    for detached in seq.detached_runs():
        if (group or detached["lever"] == target) and not control.cancelled:
            print(f"{detached['lever']}: re-attaching run {detached['run']} (Ray job {detached.get('submission_id')})",
                  file=sys.stderr, flush=True)
            _run_one(seq, detached["lever"], control, reports)
    if reports and (target == "next" or not group):
        return _summarise(seq, target, reports, as_json)
    try:
        first = seq.pick(target) if group else target
        if not group:
            seq.check_runnable(target)  # by name it runs even when unavailable or not `next`
    except InputError as exc:
        print(f"optseq: {exc}", file=sys.stderr)
        return NOTHING if "unknown lever" not in str(exc) else BAD_INPUT
    if first is None and not reports:
        print(f"optseq: nothing to run for {target!r}: {_nothing_why(seq, target)}", file=sys.stderr)
        return NOTHING
    ran: list[str] = [r.lever for r in reports]
    lever_id: str | None = first
    if parallel > 1 and group and target != "next" and first is not None:
        _run_parallel(seq, target, parallel, control, reports)
        lever_id = None
    while lever_id is not None and not control.cancelled:
        ran.append(lever_id)
        _run_one(seq, lever_id, control, reports)
        # the next target comes from the state this run left: it may have made levers ready or stale
        lever_id = seq.pick(target, done=ran) if group and target != "next" else None
    return _summarise(seq, target, reports, as_json)


def _run_one(seq: Sequencer, lever_id: str, control: RunControl, reports: list) -> None:
    progress = Progress(sys.stderr, lever_id)
    try:
        report = seq.run_lever(lever_id, on_event=progress.event, on_log=progress.log, control=control)
    except InputError as exc:  # refused at its start (e.g. a lever a reversal closed meanwhile)
        progress.close()
        print(f"optseq: {exc}", file=sys.stderr)
    else:
        progress.close()
        reports.append(report)


def _summarise(seq: Sequencer, target: str, reports: list, as_json: bool) -> int:
    status = seq.status()
    if as_json:
        print(json.dumps({"target": target, "runs": [r.to_dict() for r in reports],
                          "next": status["next"], "todo": status["todo"]}, ensure_ascii=False, indent=2))
    else:
        for report in reports:
            print(summary_line(report))
        print(f"next: {status['next'] or 'nothing to run'}")
        if not status["next"]:
            for item in status["todo"]:
                print(f"to do: {item}")
    if not reports:
        return NOTHING
    if any(r.exit_code == RUN_FAILED for r in reports):
        return RUN_FAILED
    if all(r.exit_code == NOTHING for r in reports):
        return NOTHING
    return OK


def _run_parallel(seq: Sequencer, target: str, width: int, control: RunControl, reports: list) -> None:
    """Up to `width` levers of the group at once (state/runs/parallel.py), each printed as it lands."""
    from optseq.state.runs.parallel import GroupRun

    def sinks(lever_id: str):
        progress = Progress(sys.stderr, lever_id, plain=True)  # several runs: lines, not one bar
        return progress.event, progress.log

    def landed(one) -> None:
        print(summary_line(one.report) if one.report else f"optseq: {one.refused}", file=sys.stderr, flush=True)

    group = GroupRun(seq, target, width, sinks,
                     on_started=lambda lever, n: print(f"{lever}: started ({n} running)", file=sys.stderr, flush=True),
                     on_landed=landed)
    control.attach(group)  # Ctrl-C reaches every run of the group
    reports += group.run()


def summary_line(report: RunReport) -> str:
    stats = (report.summary or {}).get("stats") or {}
    figures = ""
    if stats.get("estimate") is not None:
        figures = f"  {stats['estimate']:.3f}×"
        if stats.get("ci_low") is not None:
            figures += f" [{stats['ci_low']:.3f}, {stats['ci_high']:.3f}]"
        figures += f" n={stats['n']}"
        if stats.get("p_value") is not None:
            figures += f" p={stats['p_value']:.2g}"
    decided = f"  → {report.decision}" if report.decision else ""
    # with the figures printed, only the rule's conclusion is left to say ("95% CI clears 1.50×; guards hold")
    why = report.message.rsplit(": ", 1)[-1] if figures else report.message.removeprefix(f"{report.lever}: ")
    return f"run {report.run_id} {report.lever}: {report.status}{figures}{decided}  ({why})"


def _nothing_why(seq: Sequencer, target: str) -> str:
    status = seq.status()
    todo = status["todo"]
    if target == "stale":
        stale = [v["id"] for v in status["levers"] if v["state"] == "stale"]
        if not stale:
            return "no lever is stale"
        return f"stale but not runnable now: {', '.join(stale)}" + (f"; to do: {'; '.join(todo)}" if todo else "")
    if todo:  # only the user can move the plan on: say what to do
        return "no lever can run; to do: " + "; ".join(todo)
    blocked = [f"{v['id']} ({'; '.join(v['why_blocked'])})" for v in status["levers"] if v["why_blocked"]]
    return "no lever is ready" + (f"; waiting: {blocked[0]}" if blocked else "")
