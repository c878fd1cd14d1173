"""The plan's TOML form: parsing and validation into optseq.state.plan.model's typed classes."""
from __future__ import annotations

import datetime as dt
import os
import re
import stat
import tomllib
from pathlib import Path

from optseq.state.plan.arms import parse_workload
from optseq.state.plan.compare import KEYS as COMPARE_KEYS, CompareSettings, ToleranceError, parse_tolerance
from optseq.state.plan.compare import tolerance_of_speedup
from optseq.state.plan.testbed import TestbedSettings, parse as parse_testbed
from optseq.state.plan.checks import cross_check
from optseq.state.plan.fields import Fields, Problems, show
from optseq.state.plan.levers import LeverReader
from optseq.state.plan.model import (
    CODE_CHANGES, LANGS, MARKS, MAX_LEVERS, MAX_PAIRS, MAX_PLAN_BYTES, MAX_TIMEOUT_S, TRIGGERS, DecisionPoint, Fact,
    OrderItem, Plan, PlanError, StatusItem,
)
from optseq.state.plan.runner import parse_runner
from optseq.state.plan.volume import check_volume, parse_volume


def _not_a_file(mode: int) -> str | None:
    """What a path that is not a regular file is, in a word or two; None for a regular file."""
    for test, word in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return word
    return None if stat.S_ISREG(mode) else "not a file"


def load(path: Path | str) -> Plan:
    """Read and validate a plan; raises PlanError with one line naming file, key and problem."""
    return parse(Path(path))


def problems(path: Path | str) -> tuple[Plan | None, list[PlanError]]:
    """`optseq validate`: every problem of a plan, each a PlanError with its line, the first as load() gives it;
    the plan once there are none."""
    try:
        return parse(Path(path), every=True), []
    except PlanProblems as exc:
        return None, exc.errors
    except PlanError as exc:  # the file as a whole: unreadable, not TOML
        return None, [exc]


class PlanProblems(Exception):
    """Every problem validate's reading found, in the order the plan is read."""

    def __init__(self, errors: list[PlanError]):
        super().__init__(str(errors[0]))
        self.errors = errors


def parse(path: Path, every: bool = False) -> Plan:
    try:
        # looked at before it is opened: opening a FIFO with no writer waits forever, a device reads on
        kind = _not_a_file(os.stat(path).st_mode)
        if kind:
            raise PlanError(path, "", f"not a regular file ({kind}): not a plan")
        with open(path, "rb") as f:
            # a bounded read: `validate /dev/zero` or a mistyped path to a huge file must not eat memory
            raw = f.read(MAX_PLAN_BYTES + 1)
    except FileNotFoundError:
        raise PlanError(path, "", "no such plan file") from None
    except OSError as exc:
        raise PlanError(path, "", f"cannot read ({exc.strerror})") from None
    if len(raw) > MAX_PLAN_BYTES:
        raise PlanError(path, "", f"larger than {MAX_PLAN_BYTES // 1024 ** 2} MiB: not a plan")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise PlanError(path, "", "not UTF-8 text") from None
    # tomllib parses nested arrays and inline tables recursively, so whether it gets through a deep nest
    # depends on the interpreter's stack at the call (and on whatever raised the recursion limit before): a text
    # nested past MAX_NESTING is refused however far tomllib got, so every caller gets the same answer. Its brackets
    # nest no deeper than the values it parses to, so the text is counted only where those go past it (or tomllib
    # failed): a sound plan is not scanned twice
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        if nesting(text) > MAX_NESTING:
            raise PlanError(path, "", TOO_DEEP) from None
        raise syntax_error(path, text, exc) from None
    except RecursionError:
        raise PlanError(path, "", TOO_DEEP) from None
    if _deeper(data, MAX_NESTING) and nesting(text) > MAX_NESTING:
        raise PlanError(path, "", TOO_DEEP)
    problems = Problems(path, every)
    try:
        plan = problems.part(lambda: PlanReader(problems).plan(data))
    except PlanError as exc:
        raise placed(exc, text, data) from None
    if plan is None or problems.found:  # None: validate's reading noted what stopped it
        unique = {str(e): e for e in problems.found or ()}.values()  # one problem met by two readings is said once
        raise PlanProblems([placed(e, text, data) for e in unique])
    return plan


def placed(exc: PlanError, text: str, data: dict) -> PlanError:
    """The error with the line its key is written on: an editor (or the console's banner) goes straight to it."""
    if not exc.key or exc.line is not None:
        return exc
    from optseq.state.plan.lines import key_line  # an error's: a sound plan never loads lines.py's patterns

    return PlanError(exc.path, exc.key, exc.problem, line=key_line(text, data, exc.key))


def syntax_error(path: Path, text: str, exc: tomllib.TOMLDecodeError) -> PlanError:
    """tomllib names the line and column; the error quotes that line too (the key written there, most often)."""
    at = re.search(r"at line (\d+), column \d+", str(exc))
    line = int(at.group(1)) if at else None
    lines = text.splitlines()
    written = lines[line - 1].strip() if line and line <= len(lines) else ""
    if len(written) > QUOTED:
        written = written[:QUOTED - 1] + "…"
    error = PlanError(path, "", f"TOML syntax error: {exc}" + (f": {written}" if written else ""))
    error.line = line  # already in tomllib's words
    return error


QUOTED = 60
"""How much of the line a syntax error is on its message quotes."""


MAX_NESTING = 64
"""Arrays and inline tables inside one another; far past any plan (gates stop at MAX_GATE_DEPTH), far below
the depth at which tomllib's recursion can fail."""
TOO_DEEP = f"nested too deeply to read (arrays or inline tables more than {MAX_NESTING} levels inside one another)"


def nesting(text: str) -> int:
    """The deepest nest of brackets and braces outside strings and comments (TOML's four string kinds)."""
    from optseq.state.plan.lines import STRINGS  # counted only for a deep or broken plan (parse)

    deepest = depth = 0
    at = _SPECIAL.search(text)
    while at is not None:
        c, i = at.group(), at.start()
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth = max(depth - 1, 0)
        elif c == "#":
            i = text.find("\n", i)
        else:
            close = STRINGS[c * 3 if text.startswith(c * 3, i) else c].match(text, i)
            i = close.end() - 1 if close else -1
        if i < 0:
            break
        at = _SPECIAL.search(text, i + 1)
    return deepest


_SPECIAL = re.compile(r"[\[\]{}#\"']")


def _deeper(value: object, room: int) -> bool:
    """Whether parsed TOML nests tables and arrays more than `room` deep."""
    if isinstance(value, dict):
        value = value.values()
    elif not isinstance(value, list):
        return False
    return room <= 0 or any(_deeper(v, room - 1) for v in value)


class PlanReader:
    """The plan's sections: the [plan] head, facts, levers, order, status, decision points, runner, volume, compare,
    testbed; each problem said through the one Problems it is given, each [[levers]] table read by a LeverReader."""

    def __init__(self, problems: Problems):
        self.problems = problems
        self.fields = Fields(problems)
        """The fields, in the plan's language once `[plan] lang` is read (`plan` reads it first)."""

    def plan(self, data: dict) -> Plan:
        """The plan; in validate's reading each part is read on its own, a part with a problem left out (and what
        names a lever left out taken as known: `unread`), so one problem does not hide the next."""
        problems, f = self.problems, self.fields
        f.check_keys(data, {"plan", "facts", "levers", "order", "status", "decision_points", "runner",
                            "volume", "workload", "compare", "testbed"}, "")
        head = f.part(lambda: f.get(data, "plan", "", dict, what="a [plan] table"))
        if head is None:  # said: its own keys are not missing as well
            head = {"title": "", "as_of": dt.date.min}
        f.check_keys(head, {"title", "as_of", "lang", "intro", "table", "code_changes"}, "plan")
        # every text field given in several languages must give the plan's: it is read first
        lang = f.part(lambda: f.choice(head, "lang", "plan", LANGS, "en", "unknown language {!r}"), "en")
        f = self.fields = Fields(problems, lang)
        # the levers change the workload: it is read before them
        workload = (f.part(lambda: parse_workload(f, data["workload"], problems.path.parent))
                    if "workload" in data else None)
        lever_reader = LeverReader(f, problems.path.parent, workload, "workload" in data and workload is None)
        code_changes = f.part(lambda: f.choice(head, "code_changes", "plan", CODE_CHANGES, "warn",
                                               "expected one of {1}, got {0!r}"), "warn")
        as_of = f.part(lambda: f.get(head, "as_of", "plan", dt.date, what="a date (YYYY-MM-DD)"), dt.date.min)
        if isinstance(as_of, dt.datetime):
            as_of = as_of.date()
        facts = f.part(lambda: self.facts(f.get(data, "facts", "", dict, {}, "a [facts] table")), ())
        # a plan for `optseq compare` alone (a CI gate) declares its workload and no levers
        has_workload = "workload" in data
        raw_levers = f.part(lambda: f.get(data, "levers", "", list, [] if has_workload else ...,
                                          what="a list of [[levers]]"))
        if raw_levers is not None and not raw_levers and not has_workload:
            raise f.fail("levers", "the plan declares no levers (a plan for `optseq compare` alone declares its "
                                   "[workload])")
        if raw_levers is not None and len(raw_levers) > MAX_LEVERS:
            raise f.fail("levers", f"at most {MAX_LEVERS} levers in one plan, got {len(raw_levers)}")
        levers = []
        for i, raw in enumerate(raw_levers or ()):
            lever = f.part(lambda: lever_reader.lever(raw, i))
            if lever is not None:
                levers.append(lever)
            elif isinstance(raw, dict) and isinstance(raw.get("id"), str):
                problems.unread.add(raw["id"])
        seen: set[str] = set()
        for lever in levers:
            if lever.id in seen:
                f.note(f.fail(f"levers.{lever.id}", "duplicate lever id"))
            seen.add(lever.id)
        plan = Plan(
            path=str(problems.path),
            title=f.part(lambda: f.text(head, "title", "plan"), ""),
            intro=f.part(lambda: f.text(head, "intro", "plan", ""), ""),
            as_of=as_of,
            lang=lang,
            levers=tuple(levers),
            facts=facts,
            table=(f.part(lambda: f.strings(head, "table", "plan"), ()) if "table" in head
                   else tuple(dict.fromkeys(l.id for l in levers))),  # a duplicate id is said once
            order=self.each(data, "order", self.order_item),
            status=self.each(data, "status", self.status_item),
            decision_points=self.each(data, "decision_points", self.decision_point),
            runner=f.part(lambda: parse_runner(f, data["runner"])) if "runner" in data else None,
            volume=f.part(lambda: parse_volume(f, data["volume"])) if "volume" in data else None,
            code_changes=code_changes,
            workload=workload,
            compare=(f.part(lambda: parse_compare(f, data["compare"]), CompareSettings()) if "compare" in data
                     else CompareSettings()),
            testbed=(f.part(lambda: parse_testbed(f, data["testbed"]), TestbedSettings()) if "testbed" in data
                     else TestbedSettings()),
        )
        cross_check(f, plan)
        f.part(lambda: check_volume(f, plan))
        return plan

    def each(self, data: dict, key: str, read) -> tuple:
        """A list of tables, each item read on its own."""
        f = self.fields
        items = f.part(lambda: f.tables(data, key), [])
        return tuple(item for item in (f.part(lambda: read(raw, i)) for i, raw in enumerate(items))
                     if item is not None)

    def facts(self, raw: dict) -> tuple[Fact, ...]:
        f = self.fields
        facts = (f.part(lambda: self.fact(name, spec)) for name, spec in raw.items())
        return tuple(fact for fact in facts if fact is not None)

    def fact(self, name: str, spec) -> Fact:
        f = self.fields
        where = f"facts.{name}"
        if not isinstance(spec, dict):
            raise f.fail(where, f"expected a table with description/value, got {show(spec)}")
        f.check_keys(spec, {"description", "value"}, where)
        return Fact(name, f.text(spec, "description", where, ""), f.get(spec, "value", where, bool, False))

    def order_item(self, raw: dict, i: int) -> OrderItem:
        f = self.fields
        where = f"order[{i}]"
        f.check_keys(raw, {"title", "text", "levers", "now"}, where)
        return OrderItem(f.text(raw, "title", where), f.text(raw, "text", where, ""),
                         f.strings(raw, "levers", where), f.text(raw, "now", where, ""))

    def status_item(self, raw: dict, i: int) -> StatusItem:
        f = self.fields
        where = f"status[{i}]"
        f.check_keys(raw, {"lever", "text", "about"}, where)
        about = f.get(raw, "about", where, str, "state")
        if about not in MARKS:
            raise f.fail(f"{where}.about", f"expected one of {', '.join(MARKS)}, got {about!r}")
        return StatusItem(f.get(raw, "lever", where, str), f.text(raw, "text", where), about)

    def decision_point(self, raw: dict, i: int) -> DecisionPoint:
        f = self.fields
        where = f"decision_points[{i}]"
        f.check_keys(raw, {"id", "lever", "on", "text", "reopens"}, where)
        on = f.get(raw, "on", where, str)
        if on not in TRIGGERS:
            raise f.fail(f"{where}.on", f"unknown trigger {on!r} (one of {', '.join(TRIGGERS)})")
        return DecisionPoint(f.get(raw, "id", where, str), f.get(raw, "lever", where, str), on,
                             f.text(raw, "text", where), f.strings(raw, "reopens", where))


def parse_compare(fields: Fields, raw) -> CompareSettings:
    """The plan's `[compare]` (state/plan/compare.py), every value checked and refused in one line."""
    where = "compare"
    if not isinstance(raw, dict):
        raise fields.fail(where, f"expected a [compare] table, got {type(raw).__name__}")
    fields.check_keys(raw, COMPARE_KEYS, where)
    # each key read on its own: validate says every problem (fields.part)
    tolerance = fields.part(lambda: _tolerance(fields, raw, where)) if "tolerance" in raw else None
    if "min_speedup" in raw:  # the bar as a lever's rule writes it; tolerance is its old spelling
        if "tolerance" in raw:
            fields.note(fields.fail(f"{where}.min_speedup", "says the bar tolerance says: give one (tolerance is "
                                                            "its old spelling)"))
        tolerance = fields.part(lambda: _min_speedup(fields, raw, where))
    repeats = fields.part(lambda: fields.at_most(fields.positive(raw, "repeats", where, int, None), MAX_PAIRS,
                                                 f"{where}.repeats", "pairs"))
    most = fields.part(lambda: fields.at_most(fields.positive(raw, "max_repeats", where, int, None), MAX_PAIRS,
                                              f"{where}.max_repeats", "pairs"))
    if repeats is not None and most is not None and most < repeats:
        fields.note(fields.fail(f"{where}.max_repeats", f"{most} is below repeats ({repeats})"))
    timeout = fields.part(lambda: fields.positive(raw, "timeout_s", where, (int, float), None))
    if timeout is not None:
        timeout = float(fields.at_most(timeout, MAX_TIMEOUT_S, f"{where}.timeout_s", "seconds (7 days)"))
    return CompareSettings(tolerance=tolerance, repeats=repeats, max_repeats=most, timeout_s=timeout)


def _min_speedup(fields: Fields, raw: dict, where: str) -> float:
    try:
        return tolerance_of_speedup(fields.get(raw, "min_speedup", where, (str, int, float)))
    except ToleranceError as exc:
        raise fields.fail(f"{where}.min_speedup", str(exc)) from None


def _tolerance(fields: Fields, raw: dict, where: str) -> float:
    try:
        return parse_tolerance(fields.get(raw, "tolerance", where, (str, int, float)))
    except ToleranceError as exc:
        raise fields.fail(f"{where}.tolerance", str(exc)) from None
