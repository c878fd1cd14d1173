"""`optseq --run screen [LEVER …]`: several levers decided together by a two-level design, headless, with its
progress on stderr and its design, blocks, calls and interactions on stdout (no textual import)."""
from __future__ import annotations

import sys

from optseq.console.commands.ending import cancelling
from optseq.console.commands.outputs import JsonOut
from optseq.console.commands.run_cmd import Progress, _interrupt, _refused
from optseq.state.api import InputError
from optseq.state.api import RunControl
from optseq.state.api import ratio_text
from optseq.state.api import Exit


def run_screen_target(seq, named: list[str], budget: int | None, out: JsonOut, echo: bool = False) -> int:
    from optseq.state.api import RunnerError
    from optseq.state.api import screen_run

    try:
        seq.lever_runs.runner  # noqa: B018 -- a runner that cannot be set up is bad input, before anything is recorded
        seq.lever_runs.testbed  # noqa: B018 -- as is an OPTSEQ_TESTBED that names no testbed
        screen = screen_run.prepare(seq.run_host, named, budget)
    except (InputError, RunnerError) as exc:
        return _refused(seq, "screen", str(exc), out, Exit.BAD_INPUT)
    for line in screen.screened.left_out:
        print(f"optseq: {line}", file=sys.stderr, flush=True)
    control = RunControl()
    progress = Progress(sys.stderr, screen_run.SCREEN_ID, echo=echo)
    progress.say(f"screen: starting {', '.join(screen.screened.ids)}: {screen.design.text()}; {screen.asks()}")
    with cancelling(lambda ended: _interrupt(control, ended.name)) as ended:
        try:
            report = screen_run.run_screen(seq.run_host, screen, on_event=progress.event, on_log=progress.log,
                                           control=control)
        except InputError as exc:  # refused at its start (a lever taken by another run meanwhile)
            progress.close()
            return _refused(seq, "screen", str(exc), out, Exit.BAD_INPUT)
        progress.close()
    status = seq.views.status()
    if out.wanted:
        out.emit({"target": "screen", "runs": [report.to_dict()], "next": status.next, "todo": status.todo})
    if not out.stdout:
        print("\n".join(summary_lines(report)))
        print(f"next: {status.next or 'nothing to run'}")
    return ended.code or (Exit.OK if report.status == "succeeded" else report.exit_code)


def summary_lines(report) -> list[str]:
    """The screen in lines: its run and design, a line per block, each lever's call, each interaction's sentence,
    the confirmation."""
    lines = [f"run {report.run_id} screen: {report.status}  {report.design}"]
    for number, order in enumerate(report.blocks, 1):
        lines.append(f"  block {number}: runs {' '.join(str(i) for i in order)}")
    for lever_id, call in report.calls.items():
        bounds = (f" [{ratio_text(call.low, 3)}, {ratio_text(call.high, 3)}]"
                  if call.low is not None and call.high is not None else "")
        decided = report.decisions.get(lever_id) or (
            "inconclusive" if report.status == "succeeded" else "undecided")
        lines.append(f"  {lever_id}: {decided}{bounds}  ({call.why or call.reason})")
    for said in report.said:
        lines.append(f"  {said}")
    confirmed = report.confirmed
    if confirmed:
        # a screen of branch levers confirms their combined code: its commit, named
        code = f", their code at {confirmed.commit[:7]}" if isinstance(confirmed.commit, str) else ""
        lines.append(f"  confirmed {' + '.join(confirmed.levers)} against the stack (run {confirmed.run}{code}): "
                     f"{confirmed.outcome} ({confirmed.reason})")
    if report.status != "succeeded":
        lines.append(f"  {report.message}")
    return lines
