"""The read side of the Sequencer: levers as status and the console show them, the to-do list, history, export.

`ReadViews` reads the plan, the machine and the store one open holds (state/held.py); nothing here writes, and git
is asked once per process and store change (the cache a reload drops).
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from optseq.state import branch_views, testbed_views
from optseq.state.held import Held
from optseq.state.lever_note import last_failure, last_verdict, note, remeasured
from optseq.state.lever_warnings import code_warnings, left_running, outside_stack, size_warnings
from optseq.state.code import repo
from optseq.state.lifecycle import lever_records, screened
from optseq.state.lifecycle.run_index import KeptRun
from optseq.state.lifecycle.states import LeverModel
from optseq.state.lifecycle.words import say, text
from optseq.state.plan import gates
from optseq.state.plan.model import Lever
from optseq.state.store.rows import Active
from optseq.state.supersession import Marks
from optseq.state.view_types import (UNSET, BranchStatus, CandidateStatus, Claim, DecisionPoint, Interaction,
                                     LeverStatus, MarkedDecision, RunBrief, ScreenFact, Status, Unavailable,
                                     WatchStatus)


class ReadViews:
    """Everything the CLI and the console read, from the machine and the store, never writing either."""

    def __init__(self, held: Held):
        self.held = held

    def lever_views(self) -> list[LeverStatus]:
        """Every lever as status, the console and the snapshot show it; from the machine alone, never the history."""
        views = []
        measured = screened.lever_facts(self.held.machine.runs.screen_runs())  # interactions are derived, never stored
        machine = self.held.machine
        for lever in self.held.plan.levers:
            model = machine.models[lever.id]
            state, why_blocked = model.state, machine.why_blocked(lever.id)
            if state in ("ready", "stale") and lever.run and (why := self.cannot_run(lever.id)):
                state, why_blocked = "blocked", [why]  # `next` skips it too
            bed = testbed_views.testbed_view(self.held.plan, machine, model)
            view = LeverStatus(
                id=lever.id, title=lever.title, kind=lever.kind, state=state, outcome=model.outcome,
                stale=model.state == "stale", stale_reason=model.stale_reason or None, why_blocked=why_blocked,
                plan_doc=model.plan_doc, code=lever.code, requires=_gate_text(lever.requires),
                decision=_public(model.decision_stored),
                warnings=code_warnings(model.decision, machine.runs) + self.repo_warnings(model)
                + self.branch_warnings(model) + outside_stack(model) + size_warnings(model)
                + left_running(machine.runs.last.get(lever.id)),
                branch=self.branch_view(lever.id), watch=_watch(model.watch), eroded=machine.eroded_text(lever.id),
                unavailable=_unavailable(model.unavailable), remeasured=remeasured(model),
                last_run=_run_brief(machine.runs.latest(lever.id)),
                last_failure=last_failure(model, machine.runs.last.get(lever.id),
                                          machine.runs.run_of(lever.id) is not None),
                screen=_screen_fact(measured.get(lever.id)), testbed=bed["testbed"], elsewhere=bed["elsewhere"],
                testbeds_shown=bed["testbeds_shown"], testbed_note=bed["testbed_note"],
                criteria=self._criteria(lever, model) if lever.criteria else UNSET)
            views.append(msgspec.structs.replace(view, note=note(view)))
        return views

    def _criteria(self, lever: Lever, model: LeverModel) -> dict[str, CandidateStatus]:
        """Each candidate of a criteria lever: its status, each criterion's result, what each recorded one rests on."""
        assert lever.criteria is not None
        criteria = lever.criteria.criteria
        return {
            cand.id: CandidateStatus(
                status=self.held.machine.candidate_status(lever.id, cand),
                results={c.id: model.results.get((cand.id, c.id), ("pending", ""))[0] for c in criteria},
                evidence={c.id: said for c in criteria if (said := model.results.get((cand.id, c.id), ("", ""))[1])})
            for cand in lever.criteria.candidates
        }

    def repo_warnings(self, model: LeverModel) -> list[str]:
        """`workload code changed since run 12: measured 14 commits ago (3f2a9c1d)`, from the repository each
        evidence run recorded and the repository as it is now."""
        for run_id in evidence_runs(model):
            was = self.held.machine.runs.fingerprint(run_id).get("repo")
            moved = code_moved(was, self.repo_now(was["root"]) if isinstance(was, dict) else None)
            if moved:
                return [text(say("code_changed", run=run_id, how=moved))]  # the words a stale reason keeps
        return []

    def cannot_run(self, lever_id: str) -> str | None:
        """Why a lever otherwise ready cannot run (a branch merged before it ran: branch_views.py), git asked once per
        process and store change; None for one that can. The machine's `next` asks it too."""
        return branch_views.cannot_run(self.held.plan, self.held.machine, lever_id, self.held.git)

    def detached_runs(self) -> list[Active]:
        """Runs on a cluster whose optseq is gone (a lever and a submission id each); `run_lever` re-attaches to
        them."""
        return self.held.store.detached_runs()

    def branch_view(self, lever_id: str) -> BranchStatus | None:
        """A branch lever's code as it stands (state/branch_views.py); None for any other lever."""
        found = branch_views.branch_view(self.held.plan, self.held.machine, lever_id)
        return None if found is None else BranchStatus(**found)

    def branch_warnings(self, model: LeverModel) -> list[str]:
        """A branch lever measured against a baseline that has moved since, asked of git once per process and
        store change (the cache is the one reload() drops)."""
        cache = self.held.git
        return branch_views.branch_warnings(self.held.plan, self.held.machine, model, cache)

    def repo_now(self, root: str) -> dict[str, Any] | None:
        """The repository's state now, asked of git once per process and store change (the cache is the
        sequencer's: reload() drops it when another process wrote)."""
        cache = self.held.git
        if root not in cache:
            cache[root] = repo.state(root)
        return cache[root]

    def status(self, hours: bool = True) -> Status:
        """The plan's levers, what is next and the facts. `hours=False` leaves each lever's `hours_saved`
        out (the calculus not imported nor run): the console's first screen paints before it fills that column."""
        with self.held.lock:
            return self._status(hours)

    def _status(self, hours: bool = True) -> Status:
        fired = self.held.machine.fired
        levers = self.lever_views()
        if hours:
            from optseq.state.calculus import whatif

            saved = whatif.hours_by_lever(self.held)  # the plan's order only, no search: cheap enough for every status
            levers = [msgspec.structs.replace(view, hours_saved=saved.get(view.id)) for view in levers]
        screen, claims = self.screen_status()
        return Status(
            plan=self.held.plan.path,
            as_of=self.held.plan.as_of.isoformat(),
            store=str(getattr(self.held.store, "directory", "")),
            readonly=self.held.readonly,
            next=self.held.machine.next(),
            todo=self.todo(),
            levers=levers,
            facts=dict(self.held.machine.facts),
            infra=self.held.machine.infra(),
            decision_points=[DecisionPoint(id=p.id, lever=p.lever, on=p.on, text=p.text, reopens=list(p.reopens),
                                           fired=fired.get(p.id))
                             for p in self.held.plan.decision_points],
            warnings=list(self.held.warnings),
            testbed=testbed_views.testbeds(self.held.plan, self.held.machine),
            screen=screen, screen_claims=claims)

    def screen_status(self) -> tuple[dict[str, Any] | None, list[Claim]]:
        """The newest screen (in flight or ended) as status says it; and where the screens' data contradicts the
        plan's `requires` / `remeasure_when` between two screened levers, one sentence each."""
        screens = self.held.machine.runs.screen_runs()
        newest = max(screens, key=lambda r: r.id or 0, default=None)
        return (screened.summary(newest) if newest else None,
                [Claim(levers=c["levers"], run=c["run"], said=c["said"], text=screened.text(c["said"]))
                 for c in screened.claims_beside_data(self.held.plan, screens)])

    def whatif(self, search: bool = True) -> dict[str, Any]:
        """The hours-saved calculus on the current state (optseq.state.calculus.whatif.compute)."""
        from optseq.state.calculus import whatif

        with self.held.lock:
            return whatif.compute(self.held.plan, self.held.machine, search=search)

    def history(self, lever_id: str | None = None) -> dict[str, Any]:
        with self.held.lock:
            return self._history(lever_id)

    def _history(self, lever_id: str | None) -> dict[str, Any]:
        if lever_id is not None:
            self.held.lever(lever_id)

        def mine(records):
            return [r for r in records if lever_id is None or r.get("lever") == lever_id]

        decisions = self._marked(self.held.store.all("decisions"), self.held.store.all("events"))
        return {"runs": mine(self.held.store.all("runs")), "decisions": mine(decisions),
                "criteria": mine(self.held.store.all("criteria")), "events": mine(self.held.store.all("events"))}

    def history_stream(self, lever_id: str | None = None) -> list[tuple[str, Iterator[dict[str, Any]]]]:
        """`history` as it is read: its keys in order, each with its records as the store gives them out
        (Store.stream), so a caller can write the first run before the last is read."""
        if lever_id is not None:
            self.held.lever(lever_id)
            tables = ("runs", "decisions", "criteria", "events")
            read = {t: self.held.store.lever_records(t, lever_id) for t in tables}
            chains = {t: records for t, records in read.items() if records is not None}
            if len(chains) == len(tables):
                # the lever's own lines alone; what superseded its decisions is its own (a later decision of it,
                # a derived event naming it)
                marks = Marks(chains["decisions"], chains["events"])
                chains["decisions"] = [marks.mark(d) for d in chains["decisions"]]
                return [(t, iter(chains[t])) for t in tables]

        def mine(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
            return (r for r in records if lever_id is None or r.get("lever") == lever_id)

        def decisions() -> Iterator[dict[str, Any]]:  # a generator: nothing is read before the runs are written
            # compact, its events' texts in a temporary file: memory bounded at any history's length
            marks = Marks(self.held.store.stream("decisions"), self.held.store.stream("events"), spill=True)
            yield from (marks.mark(d) for d in mine(self.held.store.stream("decisions")))

        store = self.held.store
        return [("runs", mine(store.stream("runs"))), ("decisions", decisions()),
                ("criteria", mine(store.stream("criteria"))), ("events", mine(store.stream("events")))]

    @staticmethod
    def _marked(decisions: list[dict[str, Any]], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Decisions with `superseded` (bool) and `superseded_by` (what superseded it: state/supersession.py)."""
        marks = Marks(decisions, events)
        return [marks.mark(d) for d in decisions]

    def todo(self) -> list[str]:
        """What only the user can do next, with the command: criteria to record, plans to write, measured
        levers to decide, unavailable levers, stale levers waiting on a gate."""
        with self.held.lock:
            machine, ctx = self.held.machine, self.held.machine.context()
            items = [f"{d.lever}: run {d.run} goes on as Ray job {d.submission_id} with no optseq "
                     f"following it (optseq --run {d.lever} re-attaches)" for d in self.detached_runs()]
            for lever in self.held.plan.levers:
                model = machine.models[lever.id]
                state, lid = model.state, lever.id
                if machine.eroded_text(lid):
                    items.append(f"{lid}: its gain {machine.eroded_text(lid)}: decide it again (optseq decide {lid} "
                                 f"adopt|reject --why …) or re-measure it (optseq --run {lid})")
                if found := machine.unmerged(lid):
                    items.append(f"{lid}: merge {found['ref']}" + (f" ({str(found['commit'])[:7]})" if found["commit"]
                                                                    else "") + " to put it in the stack")
                elif state == "unplanned":
                    items.append(f"{lid}: write its plan (optseq plan {lid} PATH)")
                elif state == "measured":
                    why = remeasured(model) or last_verdict(model)
                    items.append(f"{lid}: decide it{f' ({why})' if why else ''} "
                                 f"(optseq decide {lid} {_outcomes(lever)} --why …)")
                elif state not in ("ready", "stale"):
                    continue
                elif lever.run and (stuck := self.cannot_run(lid)):
                    items.append(branch_views.cannot_run_todo(lid, stuck, _outcomes(lever)))
                elif lever.criteria and not lever.run:
                    pending = [f"{c.id} {k.id}" for c in lever.criteria.candidates
                               if machine.candidate_status(lid, c) == "pending"
                               for k in lever.criteria.criteria
                               if model.results.get((c.id, k.id), ("pending",))[0] == "pending"]
                    items.append(f"{lid}: record criteria ({', '.join(pending)} pending)" if pending else
                                 f"{lid}: decide it (optseq decide {lid} GO|NO-GO --why …)")
                elif not lever.run:
                    items.append(f"{lid}: decide it by hand, it has no run command "
                                 f"(optseq decide {lid} {_outcomes(lever)} --why …)")
                elif model.unavailable:
                    u = model.unavailable
                    items.append(f"{lid}: unavailable: {u.reason} (run {u.run}); skipped until the "
                                 f"device changes (optseq --run {lid} tries again)")
                elif not gates.holds(lever.requires, ctx):
                    items.append(f"{lid}: stale, waits for: {'; '.join(gates.unmet(lever.requires, ctx))}")
            return items

    def lever_history(self, lever_id: str) -> dict[str, Any]:
        """What the console's detail pane shows of one lever: its newest runs (from the machine, never the runs
        journal) and its decisions, superseded ones marked, each decoded once (view_types.MarkedDecision)."""
        with self.held.lock:
            self.held.lever(lever_id)
            every = self.held.store.all("decisions")
            marks = Marks(every, self.held.store.all("events"))
            return {"runs": list(self.held.machine.runs.recent.get(lever_id, [])),
                    "decisions": [msgspec.convert(marks.mark(d), MarkedDecision) for d in every
                                  if d["lever"] == lever_id]}  # a whole decision always names its lever

    def export(self, lang: str | None = None, today: dt.date | None = None) -> str:
        from optseq.state.report import markdown as export

        with self.held.lock:
            return export.render(self.held.plan, self.held.machine, self.export_records(), lang=lang, today=today)

    def export_records(self) -> dict[str, list[KeptRun] | list[dict[str, Any]]]:
        """What the export reads: each lever's latest runs from the machine, and of the other tables the newest
        records of each lever, type and name that the store keeps in its hot file (state/store/digest.py), with
        each lever's standing decision and how many older decisions are left out (`decisions_hidden`): no
        journal is read, however long the history. A table the store keeps no digest of is read whole."""
        out: dict[str, list[KeptRun] | list[dict[str, Any]]] = {"runs": self.latest_runs()}
        for table in ("decisions", "events", "criteria", "facts"):
            groups = self.held.store.recent(table)
            if groups is None:
                out[table] = self.held.store.all(table)
                continue
            kept = {r["id"]: r for group in groups.values() for r in group["last"]}
            if table == "decisions":
                hidden: dict[str | None, int] = {}
                for group in groups.values():
                    lever = group["last"][-1].get("lever") if group["last"] else None
                    hidden[lever] = hidden.get(lever, 0) + group["n"] - len(group["last"])
                for model in self.held.machine.models.values():
                    standing, stored = model.decision, model.decision_stored
                    if standing and stored and standing.id is not None and standing.id not in kept:
                        kept[standing.id] = stored  # older than its lever's newest: still the standing one
                        hidden[model.lever.id] = hidden.get(model.lever.id, 1) - 1
                out["decisions_hidden"] = [{"lever": k, "count": n} for k, n in hidden.items() if n > 0]
            out[table] = [kept[k] for k in sorted(kept)]
        from optseq.state.sync.conflicts import conflicts  # decisions two writers made concurrently (optseq sync)
        return {**out, "conflicts": conflicts(self.held.store)}

    def latest_runs(self) -> list[KeptRun]:
        """Each lever's run in flight or latest run, and its latest run with statistics, in id order."""
        runs = {}
        for lever in self.held.plan.levers:
            for record in (self.held.machine.runs.last_stats.get(lever.id), self.held.machine.runs.latest(lever.id)):
                if record is not None and record.id is not None:
                    runs[record.id] = record
        return [runs[k] for k in sorted(runs)]


def _outcomes(lever: Lever) -> str:
    if lever.kind == "experiment":
        return "CONFIG"
    return "|".join(o for o in lever.outcomes if o != "defer") or "OUTCOME"


LONG_STATS = ("ratios", "units", "looks")
"""Per-pair and per-look lists, left out of a view: the run's record has them."""


def _run_brief(run: KeptRun | None) -> RunBrief | None:
    """The lever's latest run as status shows it: how it ended, its figures (per-arm ones included), its noise."""
    if run is None:
        return None
    stats = run.stored_stats  # handed out whole, every key the run stored but the per-pair lists
    return RunBrief(id=run.id, status=run.status, verdict=None if run.verdict is UNSET else run.verdict,
                    started=run.started, ended=run.ended, detail=run.detail,
                    stats={k: v for k, v in stats.items() if k not in LONG_STATS} if stats else None,
                    noise=run.stats.noise or run.figures.noise)


def _screen_fact(fact: dict[str, Any] | None) -> ScreenFact | None:
    """A lever's measured facts from the screens (lifecycle/screened.py), each sentence said in English beside
    its said (the export says it in its own language)."""
    if fact is None:
        return None
    return ScreenFact(run=fact["run"], main=fact["main"], call=fact["call"], main_said=fact["main_said"],
                      main_text=screened.text(fact["main_said"]) if fact.get("main_said") else None,
                      interactions=[Interaction(with_=i["with"], effect=i["effect"], run=i["run"],
                                                significant=i["significant"], off=i["off"], on=i["on"],
                                                said=i["said"], text=screened.text(i["said"]))
                                    for i in fact["interactions"]])


# The model's fields as the views read them: the one place each is read (state/lifecycle/states.py LeverModel).
def _public(decision: dict[str, Any] | None) -> dict[str, Any] | None:
    if decision is None:
        return None
    return {k: v for k, v in decision.items() if k not in ("doc_id",)}


def _watch(watch: lever_records.Watch | None) -> WatchStatus | None:
    if watch is None:
        return None
    return WatchStatus(run=watch.run, verdict=watch.verdict, estimate=watch.estimate, ci_low=watch.ci_low,
                       ci_high=watch.ci_high, commit=watch.commit, at=watch.at)


def _unavailable(unavailable: lever_records.Unavailable | None) -> Unavailable | None:
    return Unavailable(reason=unavailable.reason, run=unavailable.run) if unavailable else None


def _gate_text(expr: gates.Expr | None) -> str | None:
    return None if expr is None else _expr_text(expr)


def _expr_text(expr: gates.Expr) -> str:
    if isinstance(expr, gates.Atom):
        return expr.text()
    inner = ", ".join(_expr_text(item) for item in expr.items)
    return f"{expr.op}({inner})"


def evidence_runs(model: LeverModel) -> list[int]:
    """The runs a lever's numbers stand on: its decision's, or a measured lever's last run."""
    if model.decision:
        return list(model.decision.runs or [])
    if model.state == "measured" and model.last_run and model.last_run.id is not None:
        return [model.last_run.id]
    return []


def code_moved(was: dict[str, Any] | None, now: dict[str, Any] | None) -> dict[str, Any] | None:
    """How the workload's repository moved since a run, as lifecycle/words says it: `measured 14 commits ago
    (3f2a9c1d)`, `the uncommitted changes differ from the ones it was measured with`; None when it did not, or
    either side is unknown."""
    if not isinstance(was, dict) or not isinstance(now, dict) or was.get("root") != now.get("root"):
        return None
    if was.get("head") != now.get("head"):
        count = repo.commits_between(now["root"], was["head"], now["head"])
        head = str(was["head"])[:8]
        return (say("code_not_held", head=head) if count is None
                else say("code_commits_ago", count=count, s="s" * (count != 1), head=head))
    if was.get("diff") != now.get("diff"):
        return say("code_diff")
    return None
