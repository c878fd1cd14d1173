"""`optseq export [--lang ko|en] [-o [FILE] [--force]]`: the doc to stdout, to FILE, or to its default file."""
from __future__ import annotations

import sys
from optseq.state.api import Exit



class _DefaultTarget:
    """`-o` given without a FILE: the default target (report/target.default_target)."""

    def __repr__(self) -> str:
        return "the default target"


DEFAULT_TARGET = _DefaultTarget()


def add_export_parser(sub, common) -> None:
    s = sub.add_parser("export", parents=[common], help="write the plan and its state as markdown")
    s.add_argument("--lang", choices=["ko", "en"], default=None,
                   help="the doc's language: ko or en (default: the plan's lang)")
    # a str, not a Path: Path("") is ".", and an empty -o must be refused as empty
    s.add_argument("-o", "--output", nargs="?", const=DEFAULT_TARGET, default=None, metavar="FILE",
                   help="write to FILE (its directory must exist, outside the state directory); -o alone writes "
                        "docs/<plan title>.md beside the state directory (.optseq/ -> ./docs/), creating docs/")
    s.add_argument("--force", action="store_true",
                   help="with -o: replace the file even if an optseq export did not write it")


def run_export(seq, args, fail) -> int:
    """Write the export where `args` says; `fail(message)` is the CLI's one-line refusal (exit 2)."""
    if args.output is None:
        # stdout has nowhere beside it for charts: that doc links none
        sys.stdout.write(seq.views.export(args.lang))
        return Exit.OK
    from optseq.state.api import ExportTargetError, default_target, export_doc

    default = args.output is DEFAULT_TARGET
    path = default_target(seq.store.directory, seq.plan.title) if default else args.output
    try:
        # the doc and, beside it, a chart per measured lever (the doc links them)
        written, _ = export_doc(seq, path, args.lang, force=args.force, make_dir=default)
    except ExportTargetError as exc:
        return fail(str(exc))
    print(f"wrote {written}")
    return Exit.OK
