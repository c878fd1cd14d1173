"""optseq command line. Imports neither textual nor torch: the console and lever runs load them."""
from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

from optseq.console import collector
from optseq.console.commands.parser import build_parser, clean_args, screen_levers
from optseq.state.api import Exit


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


def _unstorable_path(path: Path) -> bool:
    from optseq.state.api import clean_text

    return clean_text(str(path)) != str(path)


def _safe_output() -> None:
    # a path with undecodable bytes, or old stored text, must print (escaped) rather than crash
    # `status`/`export`; stderr already does this by default
    if not isinstance(sys.stdout, io.TextIOWrapper):  # replaced (a test's capture): it has its own handling
        return
    try:
        sys.stdout.reconfigure(errors="backslashreplace")
    except (ValueError, OSError):
        pass


def _fail(message: str, code: int = Exit.BAD_INPUT) -> int:
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
    argv, screened = screen_levers(list(argv))
    args = parser.parse_args(argv)
    args.screen = screened
    clean_args(args)
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
            return Exit.OK
    # the runner is chosen per process: the console and --run read it where they build their runner
    if args.runner:
        os.environ["OPTSEQ_RUNNER"] = args.runner
    if args.ray_address:
        os.environ["OPTSEQ_RAY_ADDRESS"] = args.ray_address
    plan_path = getattr(args, "plan", None) or default_plan()
    db = getattr(args, "db", None) or default_db()
    from optseq.state.api import PlanError
    from optseq.state.api import InputError
    from optseq.state.api import StoreError

    try:
        if args.command == "validate":
            path = args.plan_file or plan_path
            from optseq.console.commands.validate_cmd import run_validate

            return run_validate(path) if path is not None else _fail(NO_PLAN)
        if args.command == "doctor":  # the store alone: no plan, and a store that refuses to open is its subject
            from optseq.console.commands.doctor_cmd import run_doctor

            return run_doctor(db, args.rebuild, args.prune, args.all_repos, plan_path)
        if args.command == "sync":  # the store and a remote: the plan only says which repository names REMOTE
            from optseq.console.commands.sync_cmd import run_sync

            return run_sync(db, plan_path, args.remote)
        if plan_path is None:
            return _fail(NO_PLAN)
        if _unstorable_path(db):
            # the store records paths under its directory (run logs, samples): they must be storable text
            from optseq.state.api import clean_text

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
        if args.run_export_json is not None:
            if args.run is None:
                return _fail("--export-json before a command applies to --run (compare takes its own: optseq "
                             "compare BASE --export-json FILE)")
            from optseq.console.commands.outputs import check_target

            check_target(args.run_export_json, "--export-json", replace=True)  # before anything runs, not after
        if args.budget is not None and args.run != "screen":
            return _fail("--budget applies to --run screen (the launches its design may spend)")
        if args.run is not None and args.command is not None:
            return _fail(f"--run takes no subcommand (got {args.command!r})")
        from optseq.console.commands.store_cmd import WRITES, create_store, no_store, where_db
        from optseq.state.api import holds_store

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
        return _fail("interrupted", Exit.INTERRUPTED)
    except BrokenPipeError:
        return Exit.OK
    except OSError as exc:  # the machine's answer about a path (a permission, a loop): one line naming it
        return _fail(f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else str(exc))


def _dispatch(args, plan_path: Path, db: Path, mode: str, new: bool) -> int:
    from optseq.console.commands.store_cmd import new_store_line
    from optseq.state.api import Sequencer
    from optseq.state.api import holds_store

    def waiting(text: str) -> None:
        print(f"optseq: {text}", file=sys.stderr, flush=True)

    said: list[Path] = []

    def announce_store() -> None:
        if new and not said and holds_store(db):
            said.append(db)
            print(new_store_line(db), file=sys.stderr, flush=True)

    args.announce_store = announce_store  # a compare says it first, once its input is accepted: it may take hours
    with Sequencer.open(plan_path, db, mode=mode, on_wait=waiting) as seq:
        for warning in seq.held.warnings:
            print(f"optseq: warning: {warning}", file=sys.stderr)
        code = _command_on(seq, args)
    # said once the command has spoken: a refusal stays its one line (the store it opened is empty, a later
    # command's to use), and a --run's own lines come first
    if code != Exit.BAD_INPUT:
        announce_store()
    return code


def _command_on(seq, args) -> int:
    if args.run == "screen":
        from optseq.console.commands.screen_cmd import run_screen_target

        collector.collecting()
        return run_screen_target(seq, args.screen, args.budget, _json_out(args), args.verbose)
    if args.run is not None:
        from optseq.console.commands.run_cmd import run_target

        collector.collecting()
        return run_target(seq, args.run, _json_out(args), args.parallel, args.verbose)
    command = args.command or "status"
    if command == "status":
        status = seq.views.status()
        from optseq.state.api import conflicts, conflict_lines, since_line, since_sync

        found, synced = conflicts(seq.store), since_sync(seq.store)
        # decisions of two writers that neither had seen (optseq sync): said, never resolved silently
        status = status.with_sync(found, synced)
        if getattr(args, "json", False):
            from optseq.state.api import as_json

            print(json.dumps(as_json(status), ensure_ascii=False, indent=2))
        else:
            from optseq.console.commands.fit import terminal_width
            from optseq.console.commands.status_cmd import render_status

            print(render_status(status, terminal_width()))
            for line in conflict_lines(found) + ([since_line(synced)] if synced else []):
                print(line)
        return Exit.OK
    if command == "whatif":
        from optseq.console.commands.whatif_cmd import run_whatif

        return run_whatif(seq, args.json)
    if command == "record":
        return _say(seq.actions.record_criterion(args.lever, args.candidate, args.criterion, args.outcome,
                                         args.evidence))
    if command == "plan":
        return _say(seq.actions.write_plan(args.lever, args.path, check=True, missing=args.missing))
    if command == "fact":
        return _say(seq.actions.set_fact(args.name, args.value == "true"))
    if command == "decide":
        return _say(seq.actions.decide(args.lever, args.outcome, args.why, unmeasured=args.unmeasured))
    if command == "landed":
        return _say(seq.actions.mark_landed(args.lever, args.commit, args.why))
    if command == "check":
        from optseq.state.api import check_lever as check

        collector.collecting()
        return check(seq.run_host, args.lever, say=lambda line: print(line, flush=True))
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


def _json_out(args):
    from optseq.console.commands.outputs import JsonOut

    return JsonOut(args.json, args.run_export_json)


def _say(lines: list[str]) -> int:
    for line in lines:
        print(line)
    return Exit.OK


if __name__ == "__main__":
    sys.exit(main())
