"""`optseq compare BASE [HEAD]`: the commit gate. Exit 0 not slower, 1 slower, 3 inconclusive, 4 the run failed,
5 a guard failed, 2 bad input, 130 Ctrl-C (143 SIGTERM, 129 SIGHUP); the verdict line on stdout, progress on
stderr, `--json` for machines and a markdown summary for people (`$GITHUB_STEP_SUMMARY`, `--summary FILE`)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from optseq.state import atomic
from optseq.state.errors import InputError

BAD_INPUT, INTERRUPTED = 2, 130
SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def add_compare_parser(sub, common) -> None:
    s = sub.add_parser("compare", parents=[common],
                       help="the commit gate: is HEAD slower than BASE? (the workload at two commits, paired)",
                       description="Measures the plan's workload (or --lever ID's candidate arm) at two commits as "
                                   "the two arms, counterbalanced and sequential, each commit in a worktree of its "
                                   "own. Exit 0 not slower, 1 slower, 3 inconclusive, 4 the run failed, 5 a guard "
                                   "failed, 2 bad input.")
    s.add_argument("base", metavar="BASE", help="the commit HEAD is held to (a branch, tag or commit: origin/main)")
    s.add_argument("head", metavar="HEAD", nargs="?", default="HEAD", help="the commit measured (default: HEAD)")
    s.add_argument("--lever", metavar="ID", default=None,
                   help="measure this command-pair lever's candidate arm instead of the plan's [workload]")
    s.add_argument("--tolerance", metavar="T", default=None,
                   help="how much slower HEAD may be and pass: 3%% or 0.03 (default: the plan's [compare] "
                        "tolerance, else 5%%)")
    s.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    s.add_argument("--summary", metavar="FILE", type=Path, default=None,
                   help="also write the markdown summary here (it is appended to $GITHUB_STEP_SUMMARY when set)")
    s.add_argument("-v", "--verbose", action="store_true",
                   help="echo every line the arms print (`compare| line`, on stderr)")
    # also after the subcommand, as a CI line reads best (`optseq compare main HEAD --runner ray`); SUPPRESS keeps
    # a value given before it
    s.add_argument("--runner", choices=["local", "ray"], default=argparse.SUPPRESS,
                   help="where the arms run (default: $OPTSEQ_RUNNER, else the plan's [runner], else local)")
    s.add_argument("--ray-address", metavar="ADDR", default=argparse.SUPPRESS,
                   help="the Ray cluster's job API (default: $OPTSEQ_RAY_ADDRESS, else the plan's [runner])")


def run_compare(seq, args) -> int:
    from optseq.console.commands.ending import cancelling
    from optseq.console.commands.run_cmd import Progress
    from optseq.state.runs.commit_gate import ToleranceError, parse_tolerance
    from optseq.state.runs.compare_run import COMPARE_ID, compare, length_line, notices, prepare
    from optseq.state.runs.lever_run import RunControl

    try:
        tolerance = parse_tolerance(args.tolerance) if args.tolerance is not None else None
    except ToleranceError as exc:
        raise InputError(f"--tolerance: {exc}") from None
    # where the verdict goes is checked before the run: a summary that cannot be written must not lose it after
    if args.summary is not None:
        _check_summary(args.summary, "--summary", replace=True)
    if os.environ.get(SUMMARY_ENV):
        _check_summary(Path(os.environ[SUMMARY_ENV]), f"${SUMMARY_ENV}", replace=False)
    # refused in one line, if at all
    found, commits = prepare(seq.run_host, args.base, args.head, args.lever, tolerance)
    # a new store is said as the compare makes it (its first record, before any launch), not after hours
    seq.on_made = getattr(args, "announce_store", None)
    control = RunControl()
    from optseq.state.plan.model import Lever

    spec = Lever(id=COMPARE_ID, title="compare", kind="speedup", index=-1, rule=found.rule, arms=found.arms)
    progress = Progress(sys.stderr, COMPARE_ID, lever_spec=spec, echo=args.verbose)
    progress.say(f"compare: {commits.candidate.text()} against {commits.baseline.text()}, tolerance "
                 f"{found.tolerance * 100:.4g}% ({'the workload' if found.target == 'workload' else found.target})")
    for line in [*notices(commits), length_line(seq.run_host, found)]:
        progress.say(line)
    try:
        with cancelling(lambda ended: _interrupt(progress, control, ended.name)) as ended:
            report = compare(seq.run_host, found, commits, lever_id=args.lever, on_event=progress.event,
                             on_log=progress.log, control=control, plan=getattr(args, "plan", None))
    finally:
        progress.close()
    data = report.to_dict()
    if args.json:  # the verdict first: a summary that fails to write now (a full disk) does not take it along
        print(json.dumps(data, ensure_ascii=False, indent=2), flush=True)
    else:
        print(verdict_line(data), flush=True)
    markdown = None
    if args.summary is not None or os.environ.get(SUMMARY_ENV):
        from optseq.state.report.compare_doc import render

        markdown = render(data)
    # checked before the run; one that fails now all the same (a disk filled meanwhile) is said, and the verdict's
    # exit code stands: it is the gate
    if args.summary is not None:
        _said(lambda: _write(args.summary, markdown))
    if os.environ.get(SUMMARY_ENV):
        _said(lambda: _append(os.environ[SUMMARY_ENV], markdown))
    return ended.code or (INTERRUPTED if control.cancelled else report.exit_code)


def _interrupt(progress, control, why: str) -> None:
    try:
        progress.say(f"compare: {why}: cancelling")
    except OSError:  # stderr gone with its reader: the compare is cancelled all the same
        pass
    control.cancel()


def verdict_line(data: dict) -> str:
    """`compare 3: not slower: fast (41b7152) is not slower than main (974f1b9): 1.011× [0.974, 1.051] n=10,
    tolerance 3% (95% lower bound clears 0.97×: …)`."""
    stats = (data.get("summary") or {}).get("stats") or {}
    reason = str(data.get("reason") or "")
    figures = ""
    if stats.get("estimate") is not None:
        from optseq.state.text import ratio_text

        figures = f": {ratio_text(stats['estimate'], 3)}×"
        if stats.get("ci_low") is not None:
            figures += f" [{ratio_text(stats['ci_low'], 3)}, {ratio_text(stats['ci_high'], 3)}]"
        figures += f" n={stats.get('n')}"
        reason = reason.split(": ", 1)[-1]  # its head repeats the figures
    return (f"compare {data['run_id']}: {data['verdict']}: {data['message']}{figures}, tolerance "
            f"{data['tolerance'] * 100:.4g}% ({reason})")


def _check_summary(path: Path, where: str, replace: bool) -> None:
    """InputError now, before any launch, for a summary path the verdict could not be written to: a folder, no
    folder to hold it, a file or folder this user cannot write. `replace`: written beside and renamed over it
    (--summary), else appended to (GitHub's step summary)."""
    if path.is_dir():
        raise InputError(f"{where} {path}: it is a folder; give a file's path (summary.md)")
    folder = path.parent
    if not folder.is_dir():
        raise InputError(f"{where} {path}: its folder {folder} does not exist")
    if path.exists() and not path.is_file():
        raise InputError(f"{where} {path}: it is not a regular file")
    try:
        if path.exists() and not replace:
            with open(path, "a", encoding="utf-8"):  # opened to append, nothing written
                pass
        else:  # the summary is written beside it first, then renamed: the folder must take a new file
            probe = folder / f".{path.name}.optseq-tmp"
            probe.touch()
            probe.unlink()
    except OSError as exc:
        raise InputError(f"{where} {path}: cannot be written ({exc.strerror or exc})") from None


def _said(write) -> None:
    try:
        write()
    except InputError as exc:
        print(f"optseq: warning: {exc}", file=sys.stderr, flush=True)


def _append(path: str, text: str) -> None:
    try:
        with open(path, "a", encoding="utf-8") as f:  # GitHub appends each step's part
            f.write(text + "\n")
    except OSError as exc:
        raise InputError(f"${SUMMARY_ENV} {path}: {exc.strerror or exc}") from None


def _write(path: Path, text: str) -> None:
    try:
        atomic.replace(path, (text + "\n").encode("utf-8"), keep_mode=False, suffix=".optseq-tmp", fsync=False,
                       sync_dir="no")
    except OSError as exc:
        raise InputError(f"--summary {path}: {exc.strerror or exc}") from None
