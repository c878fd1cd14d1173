"""The `optseq` command line's grammar: its options and subcommands, the one-line error argparse gives (exit 2,
like every other bad input), and the text arguments made storable. cli.py parses with it, then dispatches."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn
from optseq.state.api import Exit


def _fail(message: str) -> int:
    print(f"optseq: {message}", file=sys.stderr)
    return Exit.BAD_INPUT

class _Formatter(argparse.HelpFormatter):
    """argparse's, asking the terminal's width when text is laid out, not when it is made: argparse makes one for
    every add_argument (to check its metavar), and each asked the terminal and imported shutil (with bz2, lzma and
    zlib) for a width that no command but a help or an error reads."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        self._columns, self._most = width, max_help_position
        super().__init__(prog, indent_increment, max_help_position, width=0)  # ignored: the properties below say

    @property
    def _width(self) -> int:
        if self._columns is None:
            import shutil

            self._columns = shutil.get_terminal_size().columns - 2  # argparse's own default
        return self._columns

    @_width.setter
    def _width(self, _: int) -> None:  # argparse's __init__ sets it: the width is this class's to ask
        pass

    @property
    def _max_help_position(self) -> int:  # argparse's, made of the width when it is read
        return min(self._most, max(self._width - 20, self._indent_increment * 2))

    @_max_help_position.setter
    def _max_help_position(self, _: int) -> None:
        pass


class _Parser(argparse.ArgumentParser):
    argv: list[str] = []
    """The arguments being parsed, for the hints an error gives."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # one line and exit 2, like every other bad input
        from optseq.console.words.choices import choice_hint

        raise SystemExit(_fail(run_hint(self.argv, message) or f"{message}{choice_hint(message)} (see optseq --help)"))

def run_hint(argv: list[str], message: str) -> str | None:
    """`optseq run X` reads as a command; runs are the --run option: say so, with the line that works."""
    if "invalid choice: 'run'" not in message or "run" not in argv:
        return None
    rest = argv[argv.index("run") + 1:]
    target = rest[0] if rest and not rest[0].startswith("-") else "next"
    return f"'run' is not a command: levers run with the --run option, e.g. optseq --run {target}"

Build = Callable[["_Commands", _Parser], None]
"""Adds one command's parser to the subcommands (their `add_parser`), given the options every command shares."""


class _Commands(argparse._SubParsersAction):
    """The subcommands, each one's parser built only when it is chosen: `optseq status` builds status's alone, not
    the sixteen (a gettext lookup per help string, the compare's module). The names are known up front, so the
    usage, an invalid choice and its hint read as argparse's; the help's list of commands builds them all."""

    _common: _Parser
    """The parent parser of the options every command shares (given with the commands)."""
    choices: Mapping[str, _Parser]  # type: ignore[assignment]  # argparse's dict of parsers, as a lazy Mapping

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._builders: dict[str, Build] = {}
        self._lines: dict[str, argparse.Action] = {}
        self.choices = _Parsers(self)

    def commands(self, builders: tuple[tuple[str, Build], ...], common: _Parser) -> None:
        """The commands by name, in the help's order, and the parent parser of the options they share."""
        self._builders, self._common = dict(builders), common

    def parser(self, name: str) -> _Parser:
        """The parser of `name`, built the first time it is asked for; KeyError if there is no such command."""
        if name not in self._name_parser_map:
            self._builders[name](self, self._common)
        return self._name_parser_map[name]

    def add_parser(self, name: str, **kwargs: Any) -> _Parser:
        # argparse's, with the help line kept by name: the list shows the commands in their order, whichever was
        # built first
        kwargs.setdefault("prog", f"{self._prog_prefix} {name}")
        if "help" in kwargs:
            self._lines[name] = self._ChoicesPseudoAction(name, (), kwargs.pop("help"))
        parser: _Parser = self._parser_class(**kwargs)
        self._name_parser_map[name] = parser
        return parser

    @property  # argparse's list, read by the help: made of every command's line
    def _choices_actions(self) -> list[argparse.Action]:
        for name in self._builders:
            self.parser(name)
        return [self._lines[name] for name in self._builders if name in self._lines]

    @_choices_actions.setter
    def _choices_actions(self, _: list[argparse.Action]) -> None:  # argparse's __init__ sets it empty
        pass

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if values and values[0] in self._builders:
            self.parser(values[0])
        super().__call__(parser, namespace, values, option_string)


class _Parsers(Mapping[str, _Parser]):
    """The commands' names (iterated and tested as argparse's choices are) and their parsers, each built when read."""

    def __init__(self, commands: _Commands) -> None:
        self._commands = commands

    def __getitem__(self, name: str) -> _Parser:
        return self._commands.parser(name)

    def __contains__(self, name: object) -> bool:
        return name in self._commands._builders

    def __iter__(self) -> Iterator[str]:
        return iter(self._commands._builders)

    def __len__(self) -> int:
        return len(self._commands._builders)


def build_parser() -> _Parser:
    common = _Parser(add_help=False)
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
                   help="run levers headless: a lever id, next, ready (all ready, in order), stale, watch "
                        "(re-check every adopted gain on the current code; exit 6 when one eroded), or screen "
                        "[LEVER …] (several levers decided together by a two-level design)")
    p.add_argument("--budget", type=int, default=None, metavar="LAUNCHES",
                   help="with --run screen: the launches its design may spend (default: what its levers' own runs "
                        "could spend one at a time)")
    p.add_argument("--json", action="store_true", help="with --run: print the summary as JSON")
    p.add_argument("--export-json", dest="run_export_json", type=Path, default=None, metavar="FILE",
                   help="with --run: also write the summary as JSON to FILE (hyperfine's name)")
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
    sub = p.add_subparsers(dest="command", parser_class=_Parser, action=_Commands)
    assert isinstance(sub, _Commands)
    sub.commands(COMMANDS, common)
    return p


def _init(sub: _Commands, common: _Parser) -> None:
    s = sub.add_parser("init", help="write a starter plan (optseq.toml) and benchmark into DIR")
    s.add_argument("dir", nargs="?", type=Path, default=Path("."), metavar="DIR",
                   help="folder to write into (default: here; created if missing, one level)")
    s.add_argument("--force", action="store_true", help="replace optseq.toml / optseq_bench.py if there")


def _status(sub: _Commands, common: _Parser) -> None:
    s = sub.add_parser("status", parents=[common], help="levers, their states and what is next")
    s.add_argument("--json", action="store_true", help="print the status as JSON (the console's and export's data)")


def _whatif(sub: _Commands, common: _Parser) -> None:
    s = sub.add_parser("whatif", parents=[common], help="hours each pending lever is expected to save, and the "
                                                        "order that saves most")
    s.add_argument("--json", action="store_true", help="print the estimates as JSON")


def _record(sub: _Commands, common: _Parser) -> None:
    s = sub.add_parser("record", parents=[common], help="record a criterion result of a decision lever")
    s.add_argument("lever", metavar="LEVER", help="a decision lever's id (optseq status lists them)")
    s.add_argument("candidate", metavar="CANDIDATE", help="the candidate the result is for, as the plan's criteria name it")
    s.add_argument("criterion", metavar="CRITERION", help="the criterion's id, e.g. c4")
    s.add_argument("outcome", choices=["pass", "fail"], type=str.lower,  # FAIL as fail, as decide takes go
                   help="pass or fail (any case)")
    s.add_argument("--evidence", default="", help="what the result rests on, kept with it (e.g. \"0.8x of PyTorch\")")


def _plan(sub: _Commands, common: _Parser) -> None:
    s = sub.add_parser("plan", parents=[common], help="mark a lever's plan as written")
    s.add_argument("lever", metavar="LEVER", help="the lever whose plan is written")
    s.add_argument("path", metavar="PATH", help="the plan doc (from here or from the plan's folder); it must exist unless "
                                "--create or --missing-ok is given")
    missing = s.add_mutually_exclusive_group()
    missing.add_argument("--create", action="store_const", const="create", dest="missing", default="refuse",
                         help="write a short template at PATH first (as the console's p offers), never over a file")
    missing.add_argument("--missing-ok", action="store_const", const="ok", dest="missing",
                         help="record PATH as given though no file is there (a doc in another checkout)")


def _fact(sub: _Commands, common: _Parser) -> None:
    s = sub.add_parser("fact", parents=[common], help="set a named fact used by gates")
    s.add_argument("name", help="a fact the plan declares (its [[facts]])")
    s.add_argument("value", choices=["true", "false"], help="true or false")


def _decide(sub: _Commands, common: _Parser) -> None:
    s = sub.add_parser("decide", parents=[common], help="decide a lever by hand (rationale required)")
    s.add_argument("lever", help="the lever to decide")
    s.add_argument("outcome", help="adopt, reject or defer (speedup, infra); GO or NO-GO (decision); a config its "
                                   "runs measured, or defer (experiment); any case")
    s.add_argument("--why", default="", help="rationale (required)")
    s.add_argument("--unmeasured", action="store_true", help="an experiment's config no run of it measured here")


def _landed(sub: _Commands, common: _Parser) -> None:
    s = sub.add_parser("landed", parents=[common],
                       help="an adopted branch lever whose code reached the baseline as another commit (a squash or "
                            "rebase merge): it lands there")
    s.add_argument("lever", help="the adopted branch lever")
    s.add_argument("commit", help="the baseline's commit that holds the branch's code, e.g. the squash commit")
    s.add_argument("--why", default="", help="rationale (required)")


def _runs(sub: _Commands, common: _Parser) -> None:
    s = sub.add_parser("runs", parents=[common], help="runs, decisions and events, newest last")
    s.add_argument("lever", nargs="?", help="only this lever's (with its change points); default: all")
    s.add_argument("--json", action="store_true", help="the whole history as one JSON document, streamed")


def _check(sub: _Commands, common: _Parser) -> None:
    s = sub.add_parser("check", parents=[common],
                       help="run each arm of a lever once on the current stack and show what it got; records nothing")
    s.add_argument("lever", help="the lever whose arms to run")


def _doctor(sub: _Commands, common: _Parser) -> None:
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


def _sync(sub: _Commands, common: _Parser) -> None:
    s = sub.add_parser("sync", parents=[common],
                       help="share the store through the plan repository's remote: push this store's new records "
                            "on its own ref, merge every other writer's (refs/optseq/writers/*)")
    s.add_argument("remote", nargs="?", default="origin", metavar="REMOTE",
                   help="a remote of the plan's repository (default origin), or a URL or path of a git repository")


def _validate(sub: _Commands, common: _Parser) -> None:
    s = sub.add_parser("validate", parents=[common], help="check a plan file")
    s.add_argument("plan_file", nargs="?", type=Path, metavar="PLAN",
                   help="the plan TOML to check (default: the plan optseq would open, as --plan)")


def _serve(sub: _Commands, common: _Parser) -> None:
    s = sub.add_parser("serve", parents=[common],
                       help="the console in a browser (textual-serve): a token URL, one console per tab")
    s.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: only this machine can reach it)")
    s.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    s.add_argument("--public", action="store_true",
                   help="allow a --host other machines can reach: whoever reaches it and learns the printed "
                        "URL drives the console and can launch runs, over plain http")


def _export(sub: _Commands, common: _Parser) -> None:
    from optseq.console.commands.export_cmd import add_export_parser

    add_export_parser(sub, common)


def _compare(sub: _Commands, common: _Parser) -> None:
    from optseq.console.commands.compare_cmd import add_compare_parser  # and its outputs' module: compare's alone

    add_compare_parser(sub, common)


COMMANDS: tuple[tuple[str, Build], ...] = (
    ('init', _init),
    ('status', _status),
    ('whatif', _whatif),
    ('record', _record),
    ('plan', _plan),
    ('fact', _fact),
    ('decide', _decide),
    ('landed', _landed),
    ('runs', _runs),
    ('check', _check),
    ('doctor', _doctor),
    ('sync', _sync),
    ('validate', _validate),
    ('export', _export),
    ('compare', _compare),
    ('serve', _serve),
)
"""Every command in the order the help lists them, with what builds its parser."""


def screen_levers(argv: list[str]) -> tuple[list[str], list[str]]:
    """`--run screen A B …`: the levers named after `screen` taken out of argv (argparse gives an option one
    value), returned beside what is left to parse."""
    for i, token in enumerate(argv):
        if token == "--":
            break
        if (token == "--run" and argv[i + 1:i + 2] == ["screen"]) or token == "--run=screen":
            start = i + (2 if token == "--run" else 1)
            end = start
            while end < len(argv) and not argv[end].startswith("-"):
                end += 1
            return argv[:start] + argv[end:], argv[start:end]
    return argv, []


PATH_ARGS = ("output",)
"""str arguments that name files: kept as given (undecodable bytes and all) so the file system finds them."""

def clean_args(args: argparse.Namespace) -> None:
    """Make every text argument storable: bytes that are not UTF-8 become U+FFFD.

    Python hands such bytes over as lone surrogates (surrogateescape), which no UTF-8 file can hold:
    a criterion's evidence or a rationale carrying one would fail the store's write. File paths
    (--plan, --db and validate's file: Path objects; -o) are left alone, so that they name the file
    the user named; none is stored as text (a --db path that is not UTF-8 is refused in main: runs
    record paths under it).
    """
    from optseq.state.api import clean_text

    for name, value in vars(args).items():
        if isinstance(value, str) and name not in PATH_ARGS:
            setattr(args, name, clean_text(value, undecoded=True))
