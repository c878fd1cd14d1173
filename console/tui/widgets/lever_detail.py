"""The selected lever in full: why it is blocked, criteria results, runs, decisions with rationale, staleness."""
from __future__ import annotations

from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.measure import Measurement
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from optseq.console.words.branch_words import UNMERGED, branch_state, moved_note, short
from optseq.console.words.figures import estimate_text, plain_title, ratio, run_line, saved_line, state_text
from optseq.console.tui.widgets.next_step import in_keys
from optseq.console.words.writers import came_from, origin_text
from optseq.state.api import testbed_label as label

if TYPE_CHECKING:
    from optseq.state.api import CandidateStatus, KeptRun, LeverStatus, MarkedDecision

MAX_RUNS = 20
"""Newest runs listed; older ones stay in `optseq runs LEVER`."""


class LeverDetail(VerticalScroll, can_focus=True):
    """A scrollable text view of one lever; `plain` holds what it shows, without styles."""

    def compose(self):
        yield Static(id="detail-body")

    @property
    def plain(self) -> str:
        return self._text.plain if hasattr(self, "_text") else ""

    lever: str | None = None
    """The lever shown; another one starts at the top, not at the last one's scroll."""

    def show(self, view: LeverStatus, history: dict, lever, step: str = "") -> None:
        """`step` is the table's why / next cell for the lever, here in full (the table may cut it)."""
        if view.id != self.lever:
            self.lever = view.id
            self.scroll_home(animate=False, immediate=True)
        text = Text()

        def head(label: str) -> None:
            text.append(f"\n{label}\n", style="bold")

        text.append(f"{view.id}", style="bold")
        unmerged = branch_state(view) == UNMERGED
        text.append(f"  {plain_title(view.title)}  [{view.kind}]  {state_text(view)}"
                    + (f", {UNMERGED}" if unmerged else "") + "\n")
        branch = view.branch
        if step:
            text.append(f"next: {step}\n")
        runs: list[KeptRun] = history["runs"]  # the run index's copies, typed as it kept them
        saved = saved_line(view, runs)
        if saved:
            text.append(saved + "\n")
        declared = _declared(view, lever)
        if branch:
            # a line of its own: what was measured, and (unmerged, landed) the state layer's sentence whole
            if declared:
                text.append(declared + "\n")
            text.append(f"code: branch {branch.ref} against {branch.baseline_ref}"
                        + (f", measured at {short(branch.commit)}" if branch.commit else "") + "\n")
            if branch.text:
                text.append(f"  {branch.text}\n", style="bold" if unmerged else "")
        elif declared:
            text.append(declared + "\n")
        if view.eroded:
            text.append(f"watch: {view.eroded}\n", style="bold")
        elif view.watch and view.watch.verdict:
            text.append(f"watch: {view.watch.verdict} at run {view.watch.run}\n")
        if view.elsewhere:  # the latest run is another testbed's: it decided nothing here
            text.append(f"testbed: {view.elsewhere}\n", style="bold")
        elif view.testbeds_shown and view.testbed:
            text.append(f"testbed: measured on {view.testbed}\n")
        if view.requires:
            text.append(f"requires: {view.requires}\n")
        if lever.rule is not None:
            rule = lever.rule
            goal = rule.choose or f"{rule.metric} ≥ {rule.min_speedup:g}×"
            margin = f", margin {rule.margin:.0%}" if rule.choose and rule.margin else ""
            # an experiment repeats blocks of every config; an A/B lever counts launches, or pairs of processes
            from optseq.state.api import asks  # the pass planner: only for a lever with a rule

            text.append(f"rule: {goal}, {asks(lever)}{margin}\n")
            split = _latest_split(runs)
            if split:
                text.append(f"last run: {split}\n")
        if lever.arms is not None:
            text.append(f"arms: {lever.arms.summary()}\n")
        if view.why_blocked:
            head("why blocked")
            for reason in view.why_blocked:
                text.append(f"  - {in_keys(reason)}\n")
        if view.stale:
            head("stale")
            text.append(f"  {view.stale_reason or 'invalidated'}\n")
        if view.warnings:  # what `optseq status` notes: a baseline moved since the run, code changed…
            head("warnings")
            for warning in view.warnings:
                text.append(f"  {in_keys(warning)}\n")
        screened = view.screen
        if screened:  # what the latest screens measured of it (state/lifecycle/screened.py)
            head("screened")
            for line in [screened.main_text] + [i.text for i in screened.interactions]:
                if line:
                    text.append(f"  {line}\n")
        if view.candidates:
            head("criteria")
            self._criteria(text, view.candidates, lever)
        head("runs")
        if not runs:
            text.append("  none yet\n")
        evidence = _evidence_run(view)
        for run in runs[-MAX_RUNS:][::-1]:
            # the store holds several testbeds' runs: each names its own (in the words `optseq runs` says them
            # with, which read a record as stored)
            where = f"  on {label(run.stored)}" if view.testbeds_shown else ""
            came = origin_text(run.stored, "run")  # imported by optseq sync: its writer and its id there
            text.append(f"  {run_line(run)}{where}{f'  ({came})' if came else ''}\n")
            if run.id == evidence:
                text.append(f"      {_measured_code(view)}\n")
        head("decisions")
        self._decisions(text, view, history, lever)
        self._text = text
        self.query_one("#detail-body", Static).update(Hanging(text))

    @staticmethod
    def _criteria(text: Text, criteria: dict[str, CandidateStatus], lever) -> None:
        crit_ids = [c.id for c in lever.criteria.criteria]
        titles = {c.id: c.title or c.id for c in lever.criteria.candidates}
        width = max(len("candidate") + 1, *(len(t) + 2 for t in titles.values()))
        # a column as wide as its id (a plan's `same_result`), never less than "pending" and a space
        cols = {c: max(len(c) + 1, 8) for c in crit_ids}
        text.append("  " + "candidate".ljust(width) + "".join(c.ljust(cols[c]) for c in crit_ids) + "status\n")
        for cand, entry in criteria.items():
            per = entry.results
            whole = entry.status == "fail" and all(per.get(c, "pending") == "pending" for c in crit_ids)
            # A candidate the plan fails as a whole was never tried per criterion: dashes, not a row of pending.
            cells = "".join(("—" if whole else per.get(c, "pending")).ljust(cols[c]) for c in crit_ids)
            status = "FAIL as a whole" if whole else entry.status.upper() if entry.status != "pending" else "pending"
            text.append("  " + titles.get(cand, cand).ljust(width) + cells + status + "\n")
        plan_evidence = {c.id: c.evidence for c in lever.criteria.candidates if c.evidence}
        for cand, entry in criteria.items():  # what each result rests on, as recorded (or as the plan says)
            name = titles.get(cand, cand)
            if cand in plan_evidence and all(v == "pending" for v in entry.results.values()):
                text.append(f"    {name}: {plan_evidence[cand]}\n")
            grouped: dict[str, list[str]] = {}  # "c1, c2, c3: recorded in the plan" on one line
            for crit, why in entry.evidence.items():
                grouped.setdefault(why, []).append(crit)
            for why, crits in grouped.items():
                text.append(f"    {name} {', '.join(crits)}: {why}\n")

    @staticmethod
    def _decisions(text: Text, view: LeverStatus, history: dict, lever) -> None:
        decisions: list[MarkedDecision] = history.get("decisions", [])  # decoded once, by the views
        current = view.standing
        if current is not None and current.source == "plan":
            figure = f" {ratio(lever.prior.estimate)}×" if lever.prior and lever.prior.estimate is not None else ""
            text.append(f"  {current.outcome or view.outcome}{figure} (from the plan)"
                        f"{': ' + current.why if current.why else ''}\n")
        elif not decisions:
            text.append("  none yet\n")
        from optseq.state.api import stats_from

        by_id = {r.id: r for r in history["runs"]}  # the run index's copies, typed
        for d in decisions[::-1]:
            how = "auto" if d.auto else "manual"
            when = (d.at or "")[:16].replace("T", " ")
            figure = estimate_text(stats_from(d.stats), wide=True) if d.stats else ""
            # its figure's testbed (its run's), where the store holds several, as each run line says its own
            evidence = next((by_id[r] for r in d.runs or () if r in by_id), None)
            if figure and evidence is not None and view.testbeds_shown:
                figure += f" on {label(evidence.stored)}"
            mark = " (superseded)" if d.superseded else ""
            came = came_from(d.origin, "decision")
            parts = [d.outcome, figure, how, when + mark, f"({came})" if came else ""]
            text.append("  " + "  ".join(p for p in parts if p) + "\n")
            if d.why:
                text.append(f"    why: {d.why}\n")


class Hanging:
    """The detail as drawn: a long line wrapped under its own indent (a bullet's under its text), where a wrapped
    line started again at the left edge and read as a line of its own."""

    def __init__(self, text: Text) -> None:
        self.text = text

    def __rich_measure__(self, console, options) -> Measurement:
        return Measurement.get(console, options, self.text)

    def __rich_console__(self, console, options):
        width = options.max_width
        for line in self.text.split("\n", allow_blank=True):
            plain = line.plain
            indent = len(plain) - len(plain.lstrip(" "))
            indent += 2 if plain[indent:].startswith("- ") else 0
            if not indent or cell_len(plain) <= width or width - indent < MIN_HANG:
                yield line
                continue
            first = line.wrap(console, width)[0]
            rest = line[len(first.plain):]
            rest = rest[len(rest.plain) - len(rest.plain.lstrip(" ")):]
            yield first
            for part in rest.wrap(console, width - indent):
                yield Text(" " * indent) + part


MIN_HANG = 20
"""Columns a wrapped line keeps beside its indent; narrower, it wraps from the edge as before."""


def _declared(view: LeverStatus, lever) -> str:
    """`plan doc: docs/x.md   code: enabled`: what the plan declares of the lever's doc and code, `not written`
    for a doc the lever waits for; nothing for what it neither declares nor needs (a command-pair lever's code
    is the command it runs, its doc optional)."""
    doc = view.plan_doc
    parts = [f"plan doc: {doc}" if doc else "plan doc: not written" if lever.needs_plan else ""]
    if lever.code_declared and not view.branch:
        parts.append(f"code: {view.code}")
    return "   ".join(p for p in parts if p)


def _evidence_run(view: LeverStatus) -> int | None:
    """The run a branch lever's commit was measured in (its standing decision's, or its last while measured):
    its line in the runs list says what became of that commit. None for other levers."""
    if not (view.branch and view.branch.commit):
        return None
    runs: list[int | None] = list(view.decision_runs)
    if not runs and view.state == "measured":
        runs = [view.last_run.id if view.last_run else None]
    return runs[0] if runs else None


def _measured_code(view: LeverStatus) -> str:
    """`measured fast at bf379ab: adopted, not merged yet` / `…: merged, in the code since 2744101` /
    `…: same moved 1 commit since`."""
    branch = view.branch
    assert branch is not None  # _evidence_run found its commit
    said = f"measured {branch.ref} at {short(branch.commit)}"
    moved = moved_note(view)
    if moved:  # first: numbers of a commit the branch has left say nothing of the branch now, merged or not
        return f"{said}: {moved} since"
    state = branch_state(view)
    if state == UNMERGED:
        return f"{said}: adopted, not merged yet"
    if state == "landed":
        return f"{said}: merged, {branch.text or 'in the code'}"
    return said


def _latest_split(runs: list[KeptRun]) -> str:
    """How the newest run with a variance split divided its variance and what it chose: `variance 40% between
    launches, 60% within; ... → 3 pairs a launch`. The split is a free-form part of the summary (no Struct types
    it), read as stored."""
    for run in reversed(runs):
        split = run.split
        if isinstance(split.get("share_between"), (int, float)):
            between = split["share_between"]
            costs = ""
            if isinstance(split.get("launch_s"), (int, float)) and isinstance(split.get("pair_s"), (int, float)):
                costs = f"; a launch {split['launch_s']:.2g} s, a pair {split['pair_s']:.2g} s"
            return (f"variance {100 * between:.0f}% between launches, {100 * (1 - between):.0f}% within{costs} "
                    f"(run {run.id})")
    return ""
