"""Typed reading of the plan's TOML tables: the Fields every section parser is given, over the one Problems that
collects a plan file's problems; each problem is one PlanError naming the file, the key and what is wrong."""
from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar, overload

from optseq.state.plan.model import LANGS, PlanError
from optseq.state.plan.prose import Prose

T = TypeVar("T")
F = TypeVar("F")


class Problems:
    """One plan file's problems, the one collector every reader of that file is given: `fail` makes the PlanError
    to raise, `note` and `part` raise it or (validate's reading) note it and go on."""

    def __init__(self, path: Path, every: bool = False):
        self.path = path
        self.found: list[PlanError] | None = [] if every else None
        """`optseq validate`'s reading: every problem noted here and the reading gone on past it (a command that
        loads a plan stops at the first: None)."""
        self.unread: set[str] = set()
        """Ids of the levers whose table had a problem, in validate's reading: what names them is not checked."""
        self.meant: set[str] = set()
        """Keys a misspelled one was taken for (`did you mean`): their being missing is that same problem."""

    def fail(self, key: str, problem: str) -> PlanError:
        # a key missing because it was misspelled is that one problem, said on the misspelling's line
        return (Said if problem.startswith("missing") and key in self.meant else PlanError)(self.path, key, problem)

    def note(self, error: PlanError) -> None:
        """A problem that leaves the rest of its table readable: raised, or noted in validate's reading."""
        if self.found is None:
            raise error
        self.found.append(error)

    @overload
    def part(self, read: Callable[[], T]) -> T | None: ...

    @overload
    def part(self, read: Callable[[], T], fallback: F) -> T | F: ...

    def part(self, read: Callable[[], T], fallback: F | None = None) -> T | F | None:
        """`read()`, one part of the plan read on its own: its first problem raised, or in validate's reading noted,
        and `fallback` returned for the rest of the reading to go on with."""
        try:
            return read()
        except PlanError as exc:
            if self.found is None:
                raise
            if not isinstance(exc, Said):
                self.found.append(exc)
            return fallback


class Fields:
    """Typed fields of one plan file's tables, read in the plan's language; each problem made by the Problems it is
    given (`fail`, `note` and `part` are that collector's, for the section readers that hold a Fields)."""

    def __init__(self, problems: Problems, lang: str = "en"):
        self.problems = problems
        self.lang = lang
        """The plan's language (`[plan] lang`): the text a Prose field must give, the one it reads as."""
        # the collector's own methods: a section reader given a Fields says its problems through the one collector
        self.fail, self.note, self.part = problems.fail, problems.note, problems.part

    # -- typed field access ----------------------------------------------------------
    def get(self, table: dict, key: str, where: str, kind: type | tuple, default: Any = ..., what: str = "") -> Any:
        """`table[key]` of `kind` (what the TOML gave: any of its values), `default` when it is not there (none:
        missing is a problem)."""
        if key not in table:
            if default is ...:
                raise self.fail(f"{where}.{key}" if where else key, "missing")
            return default
        value = table[key]
        ok = isinstance(value, kind) and not (kind in (int, float, (int, float)) and isinstance(value, bool))
        if not ok:
            raise self.fail(f"{where}.{key}" if where else key,
                            f"expected {what or _type_name(kind)}, got {show(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(f"{where}.{key}" if where else key, f"must be a finite number, got {value}")
        # TOML integers are 64-bit; tomllib reads any size, which later overflows float() and time arithmetic
        if isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**63:
            raise self.fail(f"{where}.{key}" if where else key,
                            f"integer out of range (TOML integers are 64-bit), got {show(value)}")
        return value

    def text(self, table: dict, key: str, where: str, default: Any = ...) -> str:
        """A prose field: a string, or a table of it in several languages (`{ ko = "…", en = "…" }`) that
        gives the plan's own language; read as a Prose."""
        value = self.get(table, key, where, (str, dict), default, TEXT)
        if not isinstance(value, dict):
            return value
        name = f"{where}.{key}" if where else key
        for lang, text in value.items():
            if lang not in LANGS:
                raise self.fail(f"{name}.{lang}", f"unknown language {lang!r} (one of {', '.join(LANGS)})")
            if not isinstance(text, str):
                raise self.fail(f"{name}.{lang}", f"expected a string, got {show(text)}")
        if self.lang not in value:
            raise self.fail(name, f"no {self.lang!r} text, the plan's language (plan.lang), in {show(value)}")
        return Prose(value, self.lang)

    def strings(self, table: dict, key: str, where: str) -> tuple[str, ...]:
        items = self.get(table, key, where, list, [], "a list of strings")
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise self.fail(f"{where}.{key}[{i}]", f"expected a string, got {show(item)}")
        return tuple(items)

    def check_keys(self, table: dict, allowed: set[str], where: str) -> None:
        for key in table:
            if key not in allowed:
                meant = closest(key, allowed)
                if meant:
                    self.problems.meant.add(f"{where}.{meant}" if where else meant)
                self.note(self.fail(f"{where}.{key}" if where else key, "unknown key" + did_you_mean(key, allowed)))

    def positive(self, table: dict, key: str, where: str, kind: type | tuple, default: Any) -> Any:
        value = self.get(table, key, where, kind, default)
        if value is not None and value <= 0:
            raise self.fail(f"{where}.{key}", f"must be positive, got {show(value)}")
        return value

    def at_most(self, value: Any, limit: float, key: str, what: str) -> Any:
        if value is not None and value > limit:
            raise self.fail(key, f"at most {limit:,} {what}, got {show(value)}")
        return value

    def choice(self, table: dict, key: str, where: str, allowed: Sequence[str], default: str, problem: str) -> str:
        """A string that must be one of `allowed`; `problem` formats the value and the allowed, joined."""
        value = self.get(table, key, where, str, default)
        if value not in allowed:
            raise self.fail(f"{where}.{key}", problem.format(value, ", ".join(allowed))
                            + (f" (one of {', '.join(allowed)})" if "{1}" not in problem else ""))
        return value

    def tables(self, data: dict, key: str) -> list[dict]:
        items = self.get(data, key, "", list, [], f"a list of [[{key}]] tables")
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise self.fail(f"{key}[{i}]", f"expected a table, got {show(item)}")
        return items


def closest(name: str, known) -> str | None:
    """The name among `known` that `name` is most likely a misspelling of, if any is close (difflib's ratio 0.6)."""
    from difflib import get_close_matches  # only a misspelt plan asks: not every plan load pays its import

    close = get_close_matches(name, sorted(known), n=1) if isinstance(name, str) else []
    return close[0] if close else None


def did_you_mean(name: str, known) -> str:
    """` (did you mean 'title'?)` for a misspelled name among `known`; empty when none is close."""
    meant = closest(name, known)
    return f" (did you mean {meant!r}?)" if meant else ""


class Said(PlanError):
    """A required key missing because it was misspelled: the misspelling's line says it (validate's reading)."""


TEXT = 'a string or a table of languages such as { ko = "…", en = "…" }'


def _type_name(kind) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list",
             dict: "a table", dt.date: "a date"}
    if isinstance(kind, tuple):
        return "a number" if set(kind) == {int, float} else " or ".join(names.get(k, k.__name__) for k in kind)
    return names.get(kind, kind.__name__)


def show(value) -> str:
    if isinstance(value, (dt.date, dt.time)):
        return f"{type(value).__name__} {value.isoformat()}"
    text = repr(value)
    kind = {str: "string", int: "integer", float: "number", bool: "boolean", list: "list", dict: "table"}.get(
        type(value), type(value).__name__)
    return f"{kind} {text if len(text) <= 40 else text[:37] + '...'}"
