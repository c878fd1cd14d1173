"""optseq command line. Imports neither textual nor torch: the console and lever runs load them."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from optseq.console import collector

OK, RUN_FAILED, BAD_INPUT, NOTHING = 0, 1, 2, 3
"""Exit codes: ok, a run failed, bad input, nothing to run or unavailable."""
INTERRUPTED = 130
"""Ctrl-C, as a shell reports a command SIGINT ended (128 + 2); a run it cancelled is still recorded."""


PLAN_FILE = "optseq.toml"
"""The plan `optseq init` writes, and the one optseq opens from the current folder."""
NO_PLAN = ("no plan: $OPTSEQ_PLAN is not set and neither ./optseq.toml nor ./configs/sequencing.toml exists "
           "(optseq init writes a starter plan here, or give --plan FILE)")


def default_plan() -> Path | None:
    """$OPTSEQ_PLAN, else ./optseq.toml, else ./configs/sequencing.toml; None when there is none of them."""
    env = os.environ.get("OPTSEQ_PLAN")
    if env:
        return Path(env)
    for local in (Path(PLAN_FILE), Path("configs/sequencing.toml")):
        if local.exists():
            return local
    return None


def default_db() -> Path:
    return Path(os.environ.get("OPTSEQ_DB") or ".optseq")


class _Parser(argparse.ArgumentParser):
    argv: list[str] = []
    """The arguments being parsed, for the hints an error gives."""

    def error(self, message: str) -> None:  # one line and exit 2, like every other bad input
        from optseq.console.words.choices import choice_hint

        raise SystemExit(_fail(run_hint(self.argv, message) or f"{message}{choice_hint(message)} (see optseq --help)"))


def run_hint(argv: list[str], message: str) -> str | None:
    """`optseq run X` reads as a command; runs are the --run option: say so, with the line that works."""
    if "invalid choice: 'run'" not in message or "run" not in argv:
        return None
    rest = argv[argv.index("run") + 1:]
    target = rest[0] if rest and not rest[0].startswith("-") else "next"
    return f"'run' is not a command: levers run with the --run option, e.g. optseq --run {target}"


def build_parser() -> argparse.ArgumentParser:
    from optseq.console.commands.compare_cmd import add_compare_parser
    from optseq.console.commands.export_cmd import add_export_parser

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--plan", type=Path, default=argparse.SUPPRESS,
                        help="plan TOML (default: $OPTSEQ_PLAN, else ./optseq.toml, else "
                             "./configs/sequencing.toml; `optseq init` writes a starter ./optseq.toml)")
    common.add_argument("--db", type=Path, default=argparse.SUPPRESS,
                        help="state directory (default: $OPTSEQ_DB or .optseq); a read (status, runs, export, "
                             "whatif) of a directory given here or in $OPTSEQ_DB with no store in it is refused, a "
                             "write or the console makes the store")
    p = _Parser(prog="optseq", parents=[common],
                description="A live optimization-sequencing plan: levers, gates, runs and decisions.",
                epilog="New here? `optseq init` writes a starter plan and benchmark into this folder; "
                       "then `optseq --run ready`.")
    p.add_argument("--run", metavar="TARGET", default=None,
                   help="run levers headless: a lever id, next, ready (all ready, in order), stale, or watch "
                        "(re-check every adopted gain on the current code; exit 6 when one eroded)")
    p.add_argument("--json", action="store_true", help="with --run: print the summary as JSON")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="with --run: echo every line the lever's command prints (`lever| line`, on stderr)")
    p.add_argument("--parallel", type=int, default=1, metavar="N",
                   help="with --run ready|stale, or the console's R: measure up to N independent levers at "
                        "once (on a cluster: N nodes; the console's R takes 2 unless told)")
    p.add_argument("--runner", choices=["local", "ray"], default=None,
                   help="where lever runs go (default: $OPTSEQ_RUNNER, else the plan's [runner], else local)")
    p.add_argument("--ray-address", metavar="ADDR", default=None,
                   help="the Ray cluster's job API, e.g. http://head:8265 (default: $OPTSEQ_RAY_ADDRESS, "
                        "else the plan's [runner] address)")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)

    s = sub.add_parser("init", help="write a starter plan (optseq.toml) and benchmark into DIR")
    s.add_argument("dir", nargs="?", type=Path, default=Path("."), metavar="DIR",
                   help="folder to write into (default: here; created if missing, one level)")
    s.add_argument("--force", action="store_true", help="replace optseq.toml / optseq_bench.py if there")

    s = sub.add_parser("status", parents=[common], help="levers, their states and what is next")
    s.add_argument("--json", action="store_true", help="print the status as JSON (the console's and export's data)")

    s = sub.add_parser("whatif", parents=[common], help="hours each pending lever is expected to save, and the "
                                                        "order that saves most")
    s.add_argument("--json", action="store_true", help="print the estimates as JSON")

    s = sub.add_parser("record", parents=[common], help="record a criterion result of a decision lever")
    s.add_argument("lever", metavar="LEVER", help="a decision lever's id (optseq status lists them)")
    s.add_argument("candidate", metavar="CANDIDATE", help="the candidate the result is for, as the plan's criteria name it")
    s.add_argument("criterion", metavar="CRITERION", help="the criterion's id, e.g. c4")
    s.add_argument("outcome", choices=["pass", "fail"], type=str.lower,  # FAIL as fail, as decide takes go
                   help="pass or fail (any case)")
    s.add_argument("--evidence", default="", help="what the result rests on, kept with it (e.g. \"0.8x of PyTorch\")")

    s = sub.add_parser("plan", parents=[common], help="mark a lever's plan as written")
    s.add_argument("lever", metavar="LEVER", help="the lever whose plan is written")
    s.add_argument("path", metavar="PATH", help="the plan doc (from here or from the plan's folder); it must exist unless "
                                "--create or --missing-ok is given")
    missing = s.add_mutually_exclusive_group()
    missing.add_argument("--create", action="store_const", const="create", dest="missing", default="refuse",
                         help="write a short template at PATH first (as the console's p offers), never over a file")
    missing.add_argument("--missing-ok", action="store_const", const="ok", dest="missing",
                         help="record PATH as given though no file is there (a doc in another checkout)")

    s = sub.add_parser("fact", parents=[common], help="set a named fact used by gates")
    s.add_argument("name", help="a fact the plan declares (its [[facts]])")
    s.add_argument("value", choices=["true", "false"], help="true or false")

    s = sub.add_parser("decide", parents=[common], help="decide a lever by hand (rationale required)")
    s.add_argument("lever", help="the lever to decide")
    s.add_argument("outcome", help="adopt, reject or defer (speedup, infra); GO or NO-GO (decision); a config its "
                                   "runs measured, or defer (experiment); any case")
    s.add_argument("--why", default="", help="rationale (required)")
    s.add_argument("--unmeasured", action="store_true", help="an experiment's config no run of it measured here")

    s = sub.add_parser("landed", parents=[common],
                       help="an adopted branch lever whose code reached the baseline as another commit (a squash or "
                            "rebase merge): it lands there")
    s.add_argument("lever", help="the adopted branch lever")
    s.add_argument("commit", help="the baseline's commit that holds the branch's code, e.g. the squash commit")
    s.add_argument("--why", default="", help="rationale (required)")

    s = sub.add_parser("runs", parents=[common], help="runs, decisions and events, newest last")
    s.add_argument("lever", nargs="?", help="only this lever's (with its change points); default: all")
    s.add_argument("--json", action="store_true", help="the whole history as one JSON document, streamed")

    s = sub.add_parser("check", parents=[common],
                       help="run each arm of a lever once on the current stack and show what it got; records nothing")
    s.add_argument("lever", help="the lever whose arms to run")

    s = sub.add_parser("doctor", parents=[common], help="check the store file by file, and list optseq's worktrees; "
                                                        "--rebuild rebuilds a lost or damaged hot file from the "
                                                        "journals (keeping a copy)")
    s.add_argument("--rebuild", action="store_true",
                   help="rebuild the hot file (optseq.json) from the journals, keeping the old one as a copy")
    s.add_argument("--prune", action="store_true",
                   help="remove optseq's worktrees (branch levers, compare) of the plan's repository that no run holds "
                        "now")
    s.add_argument("--all", action="store_true", dest="all_repos",
                   help="with --prune: those of every repository in optseq's shared worktree cache")

    s = sub.add_parser("validate", parents=[common], help="check a plan file")
    s.add_argument("plan_file", nargs="?", type=Path, metavar="PLAN",
                   help="the plan TOML to check (default: the plan optseq would open, as --plan)")

    add_export_parser(sub, common)
    add_compare_parser(sub, common)

    s = sub.add_parser("serve", parents=[common],
                       help="the console in a browser (textual-serve): a token URL, one console per tab")
    s.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: only this machine can reach it)")
    s.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    s.add_argument("--public", action="store_true",
                   help="allow a --host other machines can reach: whoever reaches it and learns the printed "
                        "URL drives the console and can launch runs, over plain http")
    return p


PATH_ARGS = ("output",)
"""str arguments that name files: kept as given (undecodable bytes and all) so the file system finds them."""


def _clean_args(args: argparse.Namespace) -> None:
    """Make every text argument storable: bytes that are not UTF-8 become U+FFFD.

    Python hands such bytes over as lone surrogates (surrogateescape), which no UTF-8 file can hold:
    a criterion's evidence or a rationale carrying one would fail the store's write. File paths
    (--plan, --db and validate's file: Path objects; -o) are left alone, so that they name the file
    the user named; none is stored as text (a --db path that is not UTF-8 is refused in main: runs
    record paths under it).
    """
    from optseq.state.text import clean_text

    for name, value in vars(args).items():
        if isinstance(value, str) and name not in PATH_ARGS:
            setattr(args, name, clean_text(value, undecoded=True))


def _unstorable_path(path: Path) -> bool:
    from optseq.state.text import clean_text

    return clean_text(str(path)) != str(path)


def _safe_output() -> None:
    # a path with undecodable bytes, or old stored text, must print (escaped) rather than crash
    # `status`/`export`; stderr already does this by default
    try:
        sys.stdout.reconfigure(errors="backslashreplace")
    except (AttributeError, ValueError, OSError):
        pass


def _fail(message: str, code: int = BAD_INPUT) -> int:
    print(f"optseq: {message}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    with collector.quiet():  # no cyclic collection while modules load (collector.py); long commands turn it on
        return _command(argv)


def _command(argv: list[str] | None) -> int:
    _safe_output()
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    parser.argv = list(argv)
    args = parser.parse_args(argv)
    _clean_args(args)
    if args.command is None and args.run is None:  # the console: Textual draws its own screen
        return _main(args)
    from optseq.console.commands.safe_stream import installed

    with installed():  # what a lever printed cannot drive the terminal, by whichever road it comes
        return _main(args)


def _main(args) -> int:
    if args.command == "init":  # before plan discovery: init is how a folder gets its plan
        if args.run is not None:
            return _fail("--run takes no subcommand (got 'init')")
        from optseq.console.commands.init_cmd import run_init

        try:
            return run_init(args.dir, force=args.force)
        except BrokenPipeError:  # `optseq init | head`: the files are written; the rest of the advice has no reader
            return OK
    # the runner is chosen per process: the console and --run read it where they build their runner
    if args.runner:
        os.environ["OPTSEQ_RUNNER"] = args.runner
    if args.ray_address:
        os.environ["OPTSEQ_RAY_ADDRESS"] = args.ray_address
    plan_path = getattr(args, "plan", None) or default_plan()
    db = getattr(args, "db", None) or default_db()
    from optseq.state.plan.model import PlanError
    from optseq.state.errors import InputError
    from optseq.state.store.store import StoreError

    try:
        if args.command == "validate":
            path = args.plan_file or plan_path
            from optseq.console.commands.validate_cmd import run_validate

            return run_validate(path) if path is not None else _fail(NO_PLAN)
        if args.command == "doctor":  # the store alone: no plan, and a store that refuses to open is its subject
            from optseq.console.commands.doctor_cmd import run_doctor

            return run_doctor(db, args.rebuild, args.prune, args.all_repos, plan_path)
        if plan_path is None:
            return _fail(NO_PLAN)
        if _unstorable_path(db):
            # the store records paths under its directory (run logs, samples): they must be storable text
            from optseq.state.text import clean_text

            return _fail(f"state directory {clean_text(str(db), undecoded=True)}: its path is not valid UTF-8 "
                         "(runs record paths under it); give --db another directory")
        if getattr(args, "force", False) and args.output is None:
            return _fail("export --force only applies with -o [FILE]")
        if args.parallel < 1 or args.parallel > 64:
            return _fail(f"--parallel {args.parallel}: expected 1 to 64 levers at once")
        console = args.run is None and args.command is None
        if args.parallel > 1 and args.run not in ("ready", "stale", "watch") and not console:
            return _fail(f"--parallel applies to --run ready, stale or watch, or the console's R "
                         f"(got {'--run ' + args.run if args.run else args.command})")
        if args.verbose and args.run is None and args.command != "compare":
            return _fail("--verbose applies to --run (the console shows a run's output in its Run tab)")
        if args.run is not None and args.command is not None:
            return _fail(f"--run takes no subcommand (got {args.command!r})")
        from optseq.console.commands.store_cmd import WRITES, create_store, no_store, where_db
        from optseq.state.store.layout import holds_store

        write = args.run is not None or args.command in WRITES
        new = not holds_store(db)
        where = where_db(args)
        if new and not write and args.command not in ("serve", "check") and not console and where != "default":
            # a path given by hand may be a typo: reading it must not show a fresh plan as if it were the store
            return _fail(no_store(db, where))
        if new and (console or args.command == "serve"):
            create_store(plan_path, db)  # the first use: said before the console takes the screen
        if args.command == "serve":
            from optseq.console.tui.serve import run_serve  # aiohttp and textual-serve; textual only in each tab

            collector.collecting()
            return run_serve(plan_path, db, args.host, args.port, args.public)
        if console:
            from optseq.console.tui.launch import run_tui  # the only path that loads textual

            return run_tui(plan_path, db, parallel=args.parallel)
        # a check records nothing: with no store it reads the plan's fresh state and creates none; a write makes
        # the store at its first write, so one refused for bad input leaves no folder (a typo'd --db stays a typo)
        mode = "create" if write else "read" if new and args.command == "check" else "auto"
        return _dispatch(args, plan_path, db, mode, new)
    except (PlanError, InputError, StoreError) as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        return _fail("interrupted", INTERRUPTED)
    except BrokenPipeError:
        return OK
    except OSError as exc:  # the machine's answer about a path (a permission, a loop): one line naming it
        return _fail(f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else str(exc))


def _dispatch(args, plan_path: Path, db: Path, mode: str, new: bool) -> int:
    from optseq.console.commands.store_cmd import new_store_line
    from optseq.state.sequencer import Sequencer
    from optseq.state.store.layout import holds_store

    def waiting(text: str) -> None:
        print(f"optseq: {text}", file=sys.stderr, flush=True)

    said = []

    def announce_store() -> None:
        if new and not said and holds_store(db):
            said.append(db)
            print(new_store_line(db), file=sys.stderr, flush=True)

    args.announce_store = announce_store  # a compare says it first, once its input is accepted: it may take hours
    with Sequencer.open(plan_path, db, mode=mode, on_wait=waiting) as seq:
        for warning in seq.warnings:
            print(f"optseq: warning: {warning}", file=sys.stderr)
        code = _command_on(seq, args)
    # said once the command has spoken: a refusal stays its one line (the store it opened is empty, a later
    # command's to use), and a --run's own lines come first
    if code != BAD_INPUT:
        announce_store()
    return code


def _command_on(seq, args) -> int:
    if args.run is not None:
        from optseq.console.commands.run_cmd import run_target

        collector.collecting()
        return run_target(seq, args.run, args.json, args.parallel, args.verbose)
    command = args.command or "status"
    if command == "status":
        status = seq.status()
        if getattr(args, "json", False):
            print(json.dumps(status, ensure_ascii=False, indent=2))
        else:
            from optseq.console.commands.fit import terminal_width
            from optseq.console.commands.status_cmd import render_status

            print(render_status(status, terminal_width()))
        return OK
    if command == "whatif":
        from optseq.console.commands.whatif_cmd import run_whatif

        return run_whatif(seq, args.json)
    if command == "record":
        return _say(seq.record_criterion(args.lever, args.candidate, args.criterion, args.outcome,
                                         args.evidence))
    if command == "plan":
        return _say(seq.write_plan(args.lever, args.path, check=True, missing=args.missing))
    if command == "fact":
        return _say(seq.set_fact(args.name, args.value == "true"))
    if command == "decide":
        return _say(seq.decide(args.lever, args.outcome, args.why, unmeasured=args.unmeasured))
    if command == "landed":
        return _say(seq.mark_landed(args.lever, args.commit, args.why))
    if command == "check":
        from optseq.state.runs.check import check

        collector.collecting()
        return check(seq, args.lever, say=lambda line: print(line, flush=True))
    if command == "runs":
        from optseq.console.commands.runs_cmd import print_runs

        if args.json:  # each record's json.dumps(indent=…) leaves a cycle of closures: the collector frees them
            collector.collecting()
        return print_runs(seq, args.lever, args.json)
    if command == "export":
        from optseq.console.commands.export_cmd import run_export

        return run_export(seq, args, _fail)
    if command == "compare":
        from optseq.console.commands.compare_cmd import run_compare

        collector.collecting()
        return run_compare(seq, args)
    raise AssertionError(command)


def _say(lines: list[str]) -> int:
    for line in lines:
        print(line)
    return OK


if __name__ == "__main__":
    sys.exit(main())
