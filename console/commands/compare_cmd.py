"""`optseq compare BASE [HEAD]`: the commit gate. Exit 0 not slower, 7 slower, 8 inconclusive, 1 the run failed,
5 a guard failed, 2 bad input, 130 Ctrl-C (143 SIGTERM, 129 SIGHUP), numbered for every command in state/exits.py;
the verdict line on stdout, progress on stderr, `--json` for machines and a markdown summary for people (`$GITHUB_STEP_SUMMARY`, `--summary FILE`)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from optseq.state.api import InputError
from optseq.console.commands.outputs import append_file, check_target, emit_json, warned, write_file
from optseq.state.api import Exit

if TYPE_CHECKING:
    from optseq.state.api import CompareReport

SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def add_compare_parser(sub, common) -> None:
    s = sub.add_parser("compare", parents=[common],
                       help="the commit gate, a regression check: is HEAD slower than BASE? (the workload at two commits, "
                            "paired)",
                       description="Measures the plan's workload (or --lever ID's candidate arm) at two commits as "
                                   "the two arms, counterbalanced and sequential, each commit in a worktree of its "
                                   "own. Exit 0 not slower, 7 slower, 8 inconclusive, 1 the run failed, 5 a guard "
                                   "failed, 2 bad input (docs/exit-codes.md).")
    s.add_argument("base", metavar="BASE", help="the commit HEAD is held to (a branch, tag or commit: origin/main)")
    s.add_argument("head", metavar="HEAD", nargs="?", default="HEAD", help="the commit measured (default: HEAD)")
    s.add_argument("--lever", metavar="ID", default=None,
                   help="measure this command-pair lever's candidate arm instead of the plan's [workload]")
    s.add_argument("--min-speedup", metavar="R", default=None,
                   help="the speed HEAD must keep, over BASE's, as a lever's rule says it: 0.97 lets HEAD be 3%% "
                        "slower and pass (default: the plan's [compare] min_speedup, else 5%% slower: 0.952)")
    s.add_argument("--tolerance", metavar="T", default=None,
                   help="the same bar in its old spelling, how much slower HEAD may be: 3%% or 0.03")
    s.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    s.add_argument("--export-json", metavar="FILE", type=Path, default=None,
                   help="also write the JSON result to FILE (hyperfine's name)")
    s.add_argument("--export-markdown", metavar="FILE", type=Path, default=None,
                   help="also write the markdown summary to FILE (it is appended to $GITHUB_STEP_SUMMARY when set)")
    s.add_argument("--summary", metavar="FILE", type=Path, default=None,
                   help="the old name of --export-markdown")
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
    from optseq.state.api import ToleranceError, parse_tolerance, tolerance_of_speedup
    from optseq.state.api import COMPARE_ID, compare, length_line, notices, prepare_compare as prepare
    from optseq.state.api import RunControl

    if args.min_speedup is not None and args.tolerance is not None:
        raise InputError("--min-speedup and --tolerance say one bar two ways: give one (--tolerance 3% is "
                         "--min-speedup 0.971)")
    try:
        tolerance = parse_tolerance(args.tolerance) if args.tolerance is not None else None
    except ToleranceError as exc:
        raise InputError(f"--tolerance: {exc}") from None
    try:
        if args.min_speedup is not None:
            tolerance = tolerance_of_speedup(args.min_speedup)
    except ToleranceError as exc:
        raise InputError(f"--min-speedup: {exc}") from None
    # where the verdict goes is checked before the run: a summary that cannot be written must not lose it after
    exports = _exports(args)
    for flag, path in exports.items():
        check_target(path, flag, replace=True)
    if os.environ.get(SUMMARY_ENV):
        check_target(Path(os.environ[SUMMARY_ENV]), f"${SUMMARY_ENV}", replace=False)
    # refused in one line, if at all
    found, commits = prepare(seq.run_host, args.base, args.head, args.lever, tolerance)
    # a new store is said as the compare makes it (its first record, before any launch), not after hours
    seq.writer.on_made = getattr(args, "announce_store", None)
    control = RunControl()
    from optseq.state.api import Lever

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
    # the verdict first: a file that fails to write now (a full disk) does not take it along; one that fails now all
    # the same was checked before the run, so it is said, and the verdict's exit code stands: it is the gate
    if not args.json:
        print(verdict_line(report), flush=True)
    emit_json(data, args.json, exports.get("--export-json"))
    step_summary = os.environ.get(SUMMARY_ENV)
    markdown_to = next(((flag, path) for flag, path in exports.items() if flag != "--export-json"), None)
    if markdown_to is not None or step_summary:
        from optseq.state.api import compare_doc as render

        markdown = render(report)
        if markdown_to is not None:
            warned(lambda: write_file(markdown_to[1], markdown, markdown_to[0]))
        if step_summary:
            warned(lambda: append_file(step_summary, markdown, f"${SUMMARY_ENV}"))
    return ended.code or (Exit.INTERRUPTED if control.cancelled else report.exit_code)


def _interrupt(progress, control, why: str) -> None:
    try:
        progress.say(f"compare: {why}: cancelling")
    except OSError:  # stderr gone with its reader: the compare is cancelled all the same
        pass
    control.cancel()


def verdict_line(report: CompareReport) -> str:
    """`compare 3: not slower: fast (41b7152) is not slower than main (974f1b9): 1.011× [0.974, 1.051] n=10,
    tolerance 3% (95% lower bound clears 0.97×: …)`."""
    summary = report.figures
    stats = summary.stats
    reason = str(report.reason or "")
    figures = ""
    if stats is not None and stats.estimate is not None:
        from optseq.console.words.verdicts import conclusion
        from optseq.state.api import ratio_text

        figures = f": {ratio_text(stats.estimate, 3)}×"
        if stats.ci_low is not None and stats.ci_high is not None:
            figures += f" [{ratio_text(stats.ci_low, 3)}, {ratio_text(stats.ci_high, 3)}]"
        figures += f" n={stats.n}"
        reason = conclusion(summary.rule_verdict) or reason  # said without the figures printed before it
    return (f"compare {report.run_id}: {report.verdict}: {report.message}{figures}, tolerance "
            f"{report.tolerance * 100:.4g}% ({reason})")


def _exports(args) -> dict[str, Path]:
    """The files the result is written to, by the flag that named each: --export-json, and --export-markdown or its
    old name --summary (one of the two). InputError for one file named twice."""
    if args.export_markdown is not None and args.summary is not None:
        raise InputError("--export-markdown and --summary name one output two ways: give one (--summary is its "
                         "old name)")
    exports = {flag: path for flag, path in (("--export-json", args.export_json),
                                             ("--export-markdown", args.export_markdown),
                                             ("--summary", args.summary)) if path is not None}
    if len({path.resolve() for path in exports.values()}) < len(exports):
        raise InputError(f"{' and '.join(exports)} name one file: the JSON and the markdown need one each")
    return exports
