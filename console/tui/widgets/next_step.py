"""What to press next, per lever and for the whole plan: the console speaks in keys where the CLI speaks in commands.

The state layer's hints (`plan not written (optseq plan option_b PATH)`) are written for a shell and stay so for
the CLI; the console maps them here instead of asking the state layer for a second wording.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from optseq.console.words.branch_words import UNMERGED, code_note, moved_note
from optseq.state.api import gates

if TYPE_CHECKING:
    from optseq.state.api import LeverStatus

CLI_HINT = re.compile(r"\s*\(optseq (?P<cmd>plan|decide|fact|record|--run) (?P<arg>[\w.-]+)[^()]*\)")
KEY_OF = {"plan": "p", "decide": "d", "fact": "f", "record": "c", "--run": "r"}
"""The console key that does what each CLI command does."""


def in_keys(text: str) -> str:
    """`plan not written (optseq plan option_b PATH)` → `plan not written — p on option_b`."""
    def key(match: re.Match) -> str:
        cmd, arg = match["cmd"], match["arg"]
        return f" — press f ({arg})" if cmd == "fact" else f" — {KEY_OF[cmd]} on {arg}"
    return CLI_HINT.sub(key, text)


def todo_hint(item: str) -> str:
    """One `seq.views.todo()` line as the key to press first: `press p on option_b: write its plan`."""
    lever, sep, what = item.partition(": ")
    match = CLI_HINT.search(what)
    if not sep or " " in lever:
        return in_keys(item)
    if match:
        key = KEY_OF[match["cmd"]]
        return f"press {key} on {lever}: {CLI_HINT.sub('', what)}"
    if what.startswith("record criteria"):
        # `record torch_jl c4`: the line is one row of an 80-column terminal, and the pending cells are the point
        pending = re.fullmatch(r"record criteria \((.+) pending\)", what)
        return f"press c on {lever}: " + (f"record {pending[1]}" if pending else what)
    return f"{lever}: {in_keys(what)}"


@dataclass(frozen=True)
class Step:
    key: str | None
    """The key to press, with `target` selected; None when no key helps (a closed branch, a device missing)."""
    target: str
    what: str

    def text(self, lever_id: str, via: gates.Atom | None = None) -> str:
        """`p: write its plan`, `c on julia_port: record criteria (needs NO-GO)`, `… (gate model_size)`."""
        if self.key is None:
            return self.what
        where = f"{self.key}: " if self.target == lever_id else f"{self.key} on {self.target}: "
        if via is None:
            return where + self.what
        if via.lever != self.target:
            return where + self.what + f" (gate {via.lever})"
        return where + self.what + (f" (needs {via.outcome})" if via.outcome != "decided" else "")


def lever_steps(plan, machine, views: list[LeverStatus], running=()) -> dict[str, str]:
    """Every lever's why / next-step cell: a blocked lever names the first thing to do on the way to it."""
    by_id = {v.id: v for v in views}
    ctx = machine.context()

    def step(lever_id: str, seen: frozenset) -> tuple[Step | None, gates.Atom | None]:
        view, lever = by_id[lever_id], plan.lever(lever_id)
        state = view.state
        if lever_id in running:
            return Step("x", lever_id, "cancels the run"), None
        if state == "unplanned":
            return Step("p", lever_id, "write its plan"), None
        if state == "closed":
            return Step(None, lever_id, (view.why_blocked or ["closed"])[0]), None
        if state == "measured":
            return Step("d", lever_id, "decide it"), None
        if state in ("ready", "stale"):
            return _runnable(lever, view, ctx), None
        if state != "blocked":
            # decided: nothing asked of the user, but a re-measure that failed is worth knowing, and an adopted
            # branch says whether it is merged (the merge is git's, no key of the console's)
            if view.last_failure:
                return Step(None, lever_id, view.last_failure), None
            if view.eroded:  # the user decides: again as adopted (or reject), or a re-run that decides
                return Step("d", lever_id, "gain eroded: decide, or r"), None
            code = code_note(view)
            return (Step(None, lever_id, code) if code else None), None
        for atom in gates.atoms(lever.requires):
            if gates.holds(atom, ctx):
                continue
            if atom.fact:
                return Step("f", lever_id, f"set fact {atom.fact} true"), None
            gate = atom.lever
            if gate is None:  # an atom names a fact or a lever: never neither
                continue
            if ctx.pending_of(gate):  # adopted, not merged: the gate's lever row says which commit
                return Step(None, gate, f"gate: {gate} {UNMERGED}"), None
            outcome = ctx.outcome_of(gate)
            if outcome is not None:
                return Step(None, gate, f"gate: {gate} decided {outcome}, needs {atom.outcome}"), None
            if gate in running:  # its gate is being measured: nothing to press but patience
                return Step(None, gate, f"waits on {gate}"), None
            if gate not in seen:
                sub, _ = step(gate, seen | {lever_id})
                if sub is not None:
                    return sub, atom
        if machine.models[lever_id].needs_plan():
            return Step("p", lever_id, "write its plan"), None
        return None, None

    cells = {}
    for view in views:
        found, via = step(view.id, frozenset())
        cells[view.id] = found.text(view.id, via) if found else ""
    return cells


def _runnable(lever, view: LeverStatus, ctx) -> Step:
    if view.unavailable:
        return Step(None, lever.id, f"unavailable: {view.unavailable.reason}")
    if lever.criteria and not lever.run:
        pending = any(v == "pending" for entry in view.candidates.values()
                      if entry.status == "pending" for v in entry.results.values())
        return Step("c", lever.id, "record criteria") if pending else Step("d", lever.id, "decide GO/NO-GO")
    if not lever.run:
        return Step("d", lever.id, "decide it by hand")
    if view.state == "stale":
        if not gates.holds(lever.requires, ctx):
            return Step(None, lever.id, "stale, waits for its gate")
        moved = moved_note(view, brief=True)  # a branch that moved since the run, first: the why of the cell
        what = f"{moved}, re-run" if moved else "re-measure"
    else:
        what = "retry" if view.last_failure else "run it"
    # `r: retry, last run 7 failed: exited 1`, until a run or a decision follows that run
    return Step("r", lever.id, f"{what}, {view.last_failure}" if view.last_failure else what)


def fitted(cell: str, width: int) -> str:
    """A why / next cell cut to `width` where it matters least: first the `(needs …)` / `(gate …)` aside, then
    what the key does, so the key and its lever stay (`c on julia_port`); the detail pane has the whole line. A key
    on the row's own lever keeps what it does, cut by the table with an ellipsis: a bare `r` said nothing."""
    if len(cell) <= width:
        return cell
    bare = re.sub(r" \((needs|gate) [^()]*\)$", "", cell)
    if len(bare) <= width:
        return bare
    head, sep, _ = bare.partition(": ")
    if sep and len(head) <= width and re.fullmatch(r"\w on \S+", head):
        return head
    return cell
