"""The one API the CLI and the console call: plan + store + machine, every action recorded."""
from __future__ import annotations

import datetime as dt
import os
import threading
from contextlib import contextmanager
from pathlib import Path

from optseq.state.plan import gates
from optseq.state.errors import InputError
from optseq.state.plan import loader as plan_loader
from optseq.state.lifecycle import snapshot
from optseq.state.lifecycle.machine import DECIDED, PlanMachine, TransitionRefused
from optseq.state.plan.model import Plan
from optseq.state.lifecycle.run_index import workload
from optseq.state.store.store import Store
from optseq.state.store.store import FINAL

REPLAYED = ("facts", "criteria", "decisions", "runs", "events")
"""Tables whose records drive the machine, replayed together in `seq` order."""


class Sequencer:
    """The plan, the store and the lever machine, kept in step.

    The machine starts from the store's snapshot and replays only what was committed after it (the
    whole history only when there is no snapshot of this plan). Every write is one short store
    transaction that first catches up with what other processes committed, so a console, a shell's
    `record` and lever runs in other shells all work on one store at once.
    """

    def __init__(self, plan: Plan, store: Store):
        self.plan = plan
        self.store = store
        self.lock = threading.RLock()
        """Held around every store access: the console reads on its UI thread while a run writes."""
        self.warnings: list[str] = []
        self._depth = 0
        self._synced: dict[str, int] = {}
        """The journals' ends the machine reflects."""
        self._replayed = False
        self.machine = self._load()
        if not self.readonly:
            self._recover()
            if self._replayed:
                with self.writing():
                    pass  # keep a snapshot, so the next command need not replay the whole history again

    @classmethod
    def open(cls, plan_path: Path | str, db_dir: Path | str, mode: str = "auto", on_wait=None) -> "Sequencer":
        plan = plan_loader.load(plan_path)
        store = Store.open(Path(db_dir), mode=mode, on_wait=on_wait)
        try:
            return cls(plan, store)
        except BaseException:
            store.close()
            raise

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "Sequencer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def readonly(self) -> bool:
        return bool(getattr(self.store, "readonly", False))

    # -- replay ----------------------------------------------------------------------------
    def records(self) -> dict[str, list[dict]]:
        """Every stored record of the tables that drive the machine (reads the whole history)."""
        return {table: self.store.all(table) for table in REPLAYED}

    def _load(self) -> PlanMachine:
        saved = self.store.snapshot()
        machine = snapshot.load(self.plan, (saved or {}).get("data"))
        if machine is None:
            self._synced, self._replayed = self.store.ends(), True
            return self._replay()
        self.machine, self._synced = machine, dict(saved.get("ends") or {})
        self._catch_up()
        return machine

    def _replay(self) -> PlanMachine:
        machine = PlanMachine(self.plan)
        rows = [(r["seq"], table, r) for table, recs in self.records().items() for r in recs]
        for _, table, record in sorted(rows, key=lambda row: row[0]):
            if self._known(table, record):
                self._apply_quietly(machine, table, record)
        return machine

    def _known(self, table: str, record: dict) -> bool:
        lever = record.get("lever")
        if lever is not None and not self.plan.has_lever(lever):
            self.warnings.append(f"{table} record {record.get('id')} names lever {lever!r}, "
                                 f"which the plan no longer has; kept in history, ignored")
            return False
        if table == "facts" and not any(f.id == record.get("name") for f in self.plan.facts):
            self.warnings.append(f"fact {record.get('name')!r} is not in the plan; ignored")
            return False
        return True

    def _apply_quietly(self, machine: PlanMachine, table: str, record: dict) -> None:
        try:
            machine.apply(table, record)
        except Exception as exc:  # a record the current plan cannot replay must not lose the rest
            self.warnings.append(f"{table} record {record.get('id')} could not be replayed: {exc}")

    def _catch_up(self) -> None:
        """Apply what was committed after the ends the machine reflects, line by line as it happened.

        Their derived events are already stored by whoever wrote them, so what this derives is dropped.
        """
        for table, line in self.store.since(self._synced):
            fields = line.get("r") or {}
            if line["op"] == "u":
                lever = self.machine.runs.lever_of(line["id"]) if table == "runs" else None
                if lever is not None and fields.get("status") in FINAL:
                    self.machine.run_ended(lever, fields["status"], fields.get("verdict"),
                                           {"id": line["id"], **fields})
                continue
            record = {"id": line["id"], **fields, "seq": line.get("seq"), "at": line.get("at")}
            if self._known(table, record):
                self._apply_quietly(self.machine, table, record)
        self._synced = self.store.ends()

    def reload(self) -> bool:
        """Follow other processes: catch up with what they committed. True when something had changed."""
        with self.lock:
            # any read of the hot file (a status listing runs in flight) may have taken the new commit in
            # already: the journals' ends, not the file's signature, say whether the machine is behind
            if not self.store.refresh() and self.store.ends() == self._synced:
                return False
            self._catch_up()
            return True

    refresh = reload

    # -- writes ------------------------------------------------------------------------------
    def _recover(self) -> None:
        """Runs the store found in flight with their process gone are `interrupted` now (their records came in
        with the catch-up): end whatever their groups left running. A run on a cluster goes on there,
        `detached`, until a run of its lever re-attaches to it."""
        from optseq.state.runners import groups

        for run in self.store.recovered:
            pgid = run.get("pgid")
            # the run id check keeps a recycled pgid of someone else's safe
            if run["status"] == "interrupted" and pgid and groups.group_alive(pgid, run_id=str(run["id"])):
                groups.kill_group(pgid, run_id=str(run["id"]))

    def detached_runs(self) -> list[dict]:
        """Runs on a cluster whose optseq is gone: {run, lever, submission_id}; `run_lever` re-attaches to them."""
        return self.store.detached_runs()

    @contextmanager
    def writing(self):
        """One store transaction for everything inside: catch up, write, then keep the machine's snapshot."""
        if self.readonly:
            raise InputError(f"the store {self.store.directory} is read-only here (opened to read, or the "
                             "directory is not writable)")
        with self.lock:
            outer = self._depth == 0
            try:
                with self.store.batch():
                    if outer:
                        self._catch_up()
                    self._depth += 1
                    try:
                        yield
                    finally:
                        self._depth -= 1
                    if outer:
                        self._keep_snapshot()
            except BaseException:
                if outer:
                    # the store rolled back: so must the machine, which took the records as they came
                    self.store.reload()
                    self.machine = self._load()
                raise
            if outer:
                self._synced = self.store.ends()

    def append(self, table: str, record: dict) -> dict:
        stored = self.store.append(table, record)
        derived = self.machine.apply(table, stored)
        self.fire_points(table, stored)
        self._keep(derived)
        return stored

    def _keep(self, derived: list[dict]) -> None:
        """Store the events the machine derived (stale, superseded): history, not new moves on replay."""
        for event in derived:
            self.store.append("events", event)

    def run_ended(self, lever_id: str, status: str, verdict: str | None = None, record: dict | None = None) -> None:
        """A live run's final record (`record`, with its id) is written: move the lever as it does on replay."""
        self._keep(self.machine.run_ended(lever_id, status, verdict, record))

    def fire_points(self, table: str, record: dict) -> None:
        trigger = {"decisions": "decided", "events": "planned" if record.get("type") == "plan" else None,
                   "runs": "measured" if record.get("status") == "succeeded" else None}.get(table)
        if trigger is None:
            return
        for point in self.plan.decision_points:
            if point.lever == record.get("lever") and point.on == trigger:
                fired = self.store.append("events", {"type": "decision_point", "point": point.id,
                                                     "lever": point.lever, "reopens": list(point.reopens),
                                                     "text": point.text})
                self.machine.fired[point.id] = fired["at"]

    def _keep_snapshot(self) -> None:
        for view in self.lever_views():
            self.store.upsert("levers", "lever", {"lever": view["id"], **{k: view[k] for k in
                                                  ("state", "outcome", "stale", "why_blocked")}})
        self.store.put_snapshot(snapshot.dump(self.machine, self.plan))

    def lever(self, lever_id: str):
        try:
            return self.plan.lever(lever_id)
        except KeyError:
            known = ", ".join(l.id for l in self.plan.levers)
            raise InputError(f"unknown lever {lever_id!r} (plan {self.plan.path} has: {known})") from None

    def record_criterion(self, lever_id: str, candidate: str, criterion: str, outcome: str,
                         evidence: str = "") -> list[str]:
        with self.writing():
            return self.record_criterion_in_batch(lever_id, candidate, criterion, outcome, evidence)

    def record_criterion_in_batch(self, lever_id: str, candidate: str, criterion: str, outcome: str,
                                  evidence: str = "") -> list[str]:
        lever = self.lever(lever_id)
        if lever.criteria is None:
            raise InputError(f"{lever_id} is a {lever.kind} lever; only decision levers have criteria")
        cands = [c.id for c in lever.criteria.candidates]
        crits = [c.id for c in lever.criteria.criteria]
        if candidate not in cands:
            raise InputError(f"{lever_id}: unknown candidate {candidate!r} (one of {', '.join(cands)})")
        if criterion not in crits:
            raise InputError(f"{lever_id}: unknown criterion {criterion!r} (one of {', '.join(crits)})")
        if outcome not in ("pass", "fail"):
            raise InputError(f"criterion outcome must be pass or fail, got {outcome!r}")
        model = self.machine.models[lever_id]
        if model.state in DECIDED or model.state == "closed":
            raise InputError(f"{lever_id} is already decided {model.outcome}; "
                             f"record nothing more, or decide again with optseq decide")
        if model.state == "blocked":
            raise InputError(f"{lever_id} is blocked: {'; '.join(self.machine.why_blocked(lever_id))}")
        messages = [f"recorded {lever_id} {candidate} {criterion} {outcome}"]
        self.append("criteria", {"lever": lever_id, "candidate": candidate, "criterion": criterion,
                                 "outcome": outcome, "evidence": evidence})
        verdict = self.machine.criteria_verdict(lever_id)
        if verdict:
            why = self._verdict_reason(lever_id)
            self.decide_in_batch(lever_id, verdict, why=why, auto=True, rule="criteria")
            messages.append(f"{lever_id} decided {verdict} automatically: {why}")
        return messages

    def _verdict_reason(self, lever_id: str) -> str:
        lever = self.plan.lever(lever_id)
        parts = []
        for cand in lever.criteria.candidates:
            status = self.machine.candidate_status(lever_id, cand)
            failed = [c.id for c in lever.criteria.criteria
                      if self.machine.models[lever_id].results.get((cand.id, c.id), ("",))[0] == "fail"]
            detail = f" ({', '.join(failed)} fail)" if failed else ""
            parts.append(f"{cand.title or cand.id} {status}{detail}")
        return "; ".join(parts)

    def write_plan(self, lever_id: str, path: str, *, check: bool = False) -> list[str]:
        """Mark a lever's plan written. The CLI and the console `check` the path: a name no file can have, or a
        directory, is refused; a doc not found from here is recorded as given, and the reply says so (it may
        live in another checkout). The console's dialog asks for an existing file before it gets here."""
        self.lever(lever_id)
        if not path.strip():
            raise InputError("plan path is empty")
        model = self.machine.models[lever_id]
        if model.state == "closed":
            raise InputError(f"{lever_id} is closed ({model.closed_by})")
        found = self.check_plan_doc(path, must_exist=False) if check else True
        with self.writing():
            self.append("events", {"type": "plan", "lever": lever_id, "path": path})
        lines = [f"{lever_id}: plan {path} recorded; {lever_id} is {self.machine.state(lever_id)}"]
        if found is None:
            lines.append(f"note: {path} is not there from here or from the plan's folder; recorded as given")
        return lines

    def check_plan_doc(self, path: str, must_exist: bool = True) -> Path | None:
        """The file a plan doc path names; None when there is none and `must_exist` is off. InputError naming
        the path for a name no file can have, a directory, or (with `must_exist`) a missing file. The path
        is kept as given; a relative one may name a file from the working directory or the plan's folder."""
        shown = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in path)
        if any(not c.isprintable() for c in path):
            raise InputError(f"plan doc {shown}: not a usable path (it holds control characters)")
        given = Path(os.path.expanduser(path))
        where = [given] if given.is_absolute() else [Path.cwd() / given, Path(self.plan.path).parent / given]
        for candidate in where:
            try:
                if candidate.is_file():
                    return candidate
                if candidate.is_dir():
                    raise InputError(f"plan doc {shown} is a directory; give the doc's file")
            except OSError:  # a name too long, or a folder we may not enter: not a doc anyone can open
                continue
        if not must_exist:
            return None
        raise InputError(f"plan doc {shown} does not exist; write it first, then mark it"
                         + ("" if given.is_absolute() else " (looked for from here and from the plan's folder)"))

    def set_fact(self, name: str, value: bool) -> list[str]:
        if not any(f.id == name for f in self.plan.facts):
            known = ", ".join(f.id for f in self.plan.facts) or "none"
            raise InputError(f"unknown fact {name!r} (plan {self.plan.path} declares: {known})")
        with self.writing():
            self.append("facts", {"name": name, "value": bool(value)})
        return [f"fact {name} = {'true' if value else 'false'}"]

    def decide(self, lever_id: str, outcome: str, why: str) -> list[str]:
        """A manual decision: the rationale is required."""
        self.lever(lever_id)
        if not (why or "").strip():
            raise InputError("a manual decision needs a rationale (--why TEXT)")
        with self.writing():
            self.decide_in_batch(lever_id, outcome, why=why, auto=False, rule="manual")
        return [f"{lever_id} decided {outcome} (manual)"]

    def decide_in_batch(self, lever_id, outcome, *, why, auto, rule, runs=(), stats=None, config=None) -> dict:
        try:
            self.machine.check_decidable(lever_id, outcome)
        except TransitionRefused as exc:
            raise InputError(str(exc)) from None
        previous = self.machine.models[lever_id].last_decision
        record = {"lever": lever_id, "outcome": outcome, "auto": auto, "rule": rule, "why": why,
                  "runs": list(runs), "stats": stats, "config": config,
                  "supersedes": previous.get("id") if previous and previous.get("source") != "plan" else None}
        return self.append("decisions", record)

    # -- runs --------------------------------------------------------------------------------
    def hold_lever(self, lever_id: str):
        """The lever's run lock, taken for this process; InputError naming the run that holds it elsewhere."""
        from optseq.state.store.locks import LeverLock
        from optseq.state.store.store import RUNS_DIR

        if self.readonly:
            raise InputError(f"the store {self.store.directory} is read-only here; nothing can run from it")
        lock = LeverLock(self.store.directory / RUNS_DIR, lever_id)
        held = lock.try_acquire({"lever": lever_id})
        if held is not None:
            raise InputError(f"{lever_id} is running in optseq pid {held.get('pid', '?')}; wait for it to end, "
                             "or cancel it there")
        return lock

    def check_runnable(self, lever_id: str) -> None:
        self.lever(lever_id)
        if self.machine.state(lever_id) == "running":
            run = next((a for a in self.store.active_runs() if a.get("lever") == lever_id), {})
            if run.get("detached"):
                return  # its run goes on on the cluster: running the lever re-attaches to it
            where = f" in optseq pid {run['pid']}" if run.get("pid") else ""
            raise InputError(f"{lever_id} is running{where} (run {run.get('run', '?')}); wait for it to end, "
                             "or cancel it there")
        try:
            self.machine.check_runnable(lever_id)
        except TransitionRefused as exc:
            raise InputError(str(exc)) from None

    def run_lever(self, lever_id: str, *, on_event=None, on_log=None, control=None):
        """Blocking: launch, stream, judge and decide; returns a lever_run.RunReport."""
        from optseq.state.runs import lever_run

        return lever_run.run_lever(self, lever_id, on_event=on_event, on_log=on_log, control=control)

    @property
    def runner(self):
        """Where this process sends lever runs: the command line's or environment's choice, else the plan's."""
        if getattr(self, "_runner", None) is None:
            from optseq.state.runners.interface import configure, make

            self._runner = make(configure(self.plan.runner))
        return self._runner

    @runner.setter
    def runner(self, value) -> None:
        self._runner = value

    GROUPS = ("next", "ready", "stale")

    def targets(self, target: str) -> list[str]:
        """Lever ids for `--run TARGET` as things stand now: an id, `next`, `ready` (ready and stale, in
        dependency order) or `stale`. A group run re-reads the state after each run: see `pick`."""
        if target == "next":
            nxt = self.machine.next_run()
            return [nxt] if nxt else []
        if target in ("ready", "stale"):
            return self.machine.runnable(("stale",) if target == "stale" else ("ready", "stale"))
        self.lever(target)
        return [target]

    def pick(self, target: str, done=()) -> str | None:
        """The next lever of group `target` from the current state, skipping those in `done`: a run may
        make others ready or stale, and no lever runs twice in one invocation."""
        return next((lid for lid in self.targets(target) if lid not in done), None)

    def mark_stack_changes(self, run_id: int, fp: dict) -> None:
        """A number measured on another device or torch is stale; a code change only warns (status)."""
        for lever_id, model in self.machine.models.items():
            if model.state not in DECIDED or not model.decision:
                continue
            for evidence in model.decision.get("runs") or []:
                old = self.machine.runs.fingerprint(evidence)
                reason = _stack_change(old, fp)
                if reason and evidence != run_id:
                    self.append("events", {"type": "stale", "lever": lever_id, "reason": reason,
                                           "run": run_id})
                    break

    # -- reads -------------------------------------------------------------------------------
    def lever_views(self) -> list[dict]:
        """Every lever as status, the console and the snapshot show it; from the machine alone, never the history."""
        views = []
        for lever in self.plan.levers:
            model = self.machine.models[lever.id]
            view = {
                "id": lever.id,
                "title": lever.title,
                "kind": lever.kind,
                "state": model.state,
                "outcome": model.outcome,
                "stale": model.state == "stale",
                "stale_reason": model.stale_reason or None,
                "why_blocked": self.machine.why_blocked(lever.id),
                "plan_doc": model.plan_doc,
                "code": lever.code,
                "requires": _gate_text(lever.requires),
                "decision": _public(model.decision),
                "warnings": _code_warnings(model.decision, self.machine.runs),
                "unavailable": ({"reason": model.unavailable["reason"], "run": model.unavailable["run"]}
                                if model.unavailable else None),
                "remeasured": _remeasured(model),
            }
            view["note"] = _note(view)
            if lever.criteria:
                view["criteria"] = {
                    cand.id: {
                        "status": self.machine.candidate_status(lever.id, cand),
                        "results": {c.id: model.results.get((cand.id, c.id), ("pending", ""))[0]
                                    for c in lever.criteria.criteria},
                        "evidence": {c.id: model.results[(cand.id, c.id)][1] for c in lever.criteria.criteria
                                     if model.results.get((cand.id, c.id), ("", ""))[1]},
                    }
                    for cand in lever.criteria.candidates
                }
            views.append(view)
        return views

    def status(self) -> dict:
        with self.lock:
            return self._status()

    def _status(self) -> dict:
        from optseq.state.calculus import whatif

        fired = self.machine.fired
        levers = self.lever_views()
        hours = whatif.hours_by_lever(self)  # the plan's order only, no search: cheap enough for every status
        for view in levers:
            view["hours_saved"] = hours.get(view["id"])
        return {
            "plan": self.plan.path,
            "as_of": self.plan.as_of.isoformat(),
            "store": str(getattr(self.store, "directory", "")),
            "readonly": self.readonly,
            "next": self.machine.next_run(),
            "todo": self.todo(),
            "levers": levers,
            "facts": dict(self.machine.facts),
            "infra": self.machine.infra(),
            "decision_points": [{"id": p.id, "lever": p.lever, "on": p.on, "text": p.text,
                                 "reopens": list(p.reopens), "fired": fired.get(p.id)}
                                for p in self.plan.decision_points],
            "warnings": list(self.warnings),
        }

    def whatif(self, search: bool = True) -> dict:
        """The hours-saved calculus on the current state (optseq.state.calculus.whatif.compute)."""
        from optseq.state.calculus import whatif

        with self.lock:
            return whatif.compute(self.plan, self.machine, search=search)

    def history(self, lever_id: str | None = None) -> dict:
        with self.lock:
            return self._history(lever_id)

    def _history(self, lever_id: str | None) -> dict:
        if lever_id is not None:
            self.lever(lever_id)

        def mine(records):
            return [r for r in records if lever_id is None or r.get("lever") == lever_id]

        decisions = self._marked(self.store.all("decisions"), self.store.all("events"))
        return {
            "runs": mine(self.store.all("runs")),
            "decisions": mine(decisions),
            "criteria": mine(self.store.all("criteria")),
            "events": mine(self.store.all("events")),
        }

    @staticmethod
    def _marked(decisions: list[dict], events: list[dict]) -> list[dict]:
        """Decisions with `superseded` (bool) and `superseded_by`: a later decision of the same lever
        (its `supersedes`), or a derived `superseded` event (a reversal closed its branch, or a re-measure
        came back inconclusive) with that event's reason."""
        by: dict = {}
        for d in decisions:
            if d.get("supersedes") is not None:
                by.setdefault(d["supersedes"], f"decision {d['id']}: {d['lever']} decided {d['outcome']}")
        for e in events:
            if e.get("type") == "superseded" and e.get("decision") is not None:
                what = f"decision {e['by']}" if e.get("by") is not None else f"run {e.get('run')}"
                by[e["decision"]] = f"{what}: {e.get('reason', '')}"
        return [dict(d, superseded=d["id"] in by, superseded_by=by.get(d["id"])) for d in decisions]

    def todo(self) -> list[str]:
        """What only the user can do next, with the command: criteria to record, plans to write, measured
        levers to decide, unavailable levers, stale levers waiting on a gate."""
        with self.lock:
            machine, ctx = self.machine, self.machine.context()
            items = [f"{d['lever']}: run {d['run']} goes on as Ray job {d.get('submission_id')} with no optseq "
                     f"following it (optseq --run {d['lever']} re-attaches)" for d in self.detached_runs()]
            for lever in self.plan.levers:
                model = machine.models[lever.id]
                state, lid = model.state, lever.id
                if state == "unplanned":
                    items.append(f"{lid}: write its plan (optseq plan {lid} PATH)")
                elif state == "measured":
                    why = _remeasured(model) or _last_verdict(model)
                    items.append(f"{lid}: decide it{f' ({why})' if why else ''} "
                                 f"(optseq decide {lid} {_outcomes(lever)} --why …)")
                elif state not in ("ready", "stale"):
                    continue
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
                    items.append(f"{lid}: unavailable: {u['reason']} (run {u['run']}); skipped until the "
                                 f"device changes (optseq --run {lid} tries again)")
                elif not gates.holds(lever.requires, ctx):
                    items.append(f"{lid}: stale, waits for: {'; '.join(gates.unmet(lever.requires, ctx))}")
            return items

    def lever_history(self, lever_id: str) -> dict:
        """What the console's detail pane shows of one lever: its newest runs (from the machine, never the runs
        journal) and its decisions, superseded ones marked."""
        with self.lock:
            self.lever(lever_id)
            decisions = self._marked(self.store.all("decisions"), self.store.all("events"))
            return {"runs": [dict(r) for r in self.machine.runs.recent.get(lever_id, [])],
                    "decisions": [d for d in decisions if d.get("lever") == lever_id]}

    def export(self, lang: str | None = None, today: dt.date | None = None) -> str:
        from optseq.state.report import markdown as export

        with self.lock:
            return export.render(self.plan, self.machine, self.export_records(), lang=lang, today=today)

    def export_records(self) -> dict[str, list[dict]]:
        """What the export reads: the decisions and events in full, each lever's latest runs from the machine
        (the runs journal, the bulk of the history, is never read)."""
        return {"decisions": self.store.all("decisions"), "events": self.store.all("events"),
                "criteria": self.store.all("criteria"), "facts": self.store.all("facts"),
                "runs": self.latest_runs()}

    def latest_runs(self) -> list[dict]:
        """Each lever's run in flight or latest run, and its latest run with statistics, in id order."""
        runs = {}
        for lever in self.plan.levers:
            for record in (self.machine.runs.last_stats.get(lever.id), self.machine.runs.latest(lever.id)):
                if record and record.get("id") is not None:
                    runs[record["id"]] = record
        return [runs[k] for k in sorted(runs)]

def _stack_change(old: dict, new: dict) -> str | None:
    if old.get("device") and new.get("device") and old["device"] != new["device"]:
        return f"device changed: measured on {old['device']}, now {new['device']}"
    a, b = (old.get("versions") or {}).get("torch"), (new.get("versions") or {}).get("torch")
    if a and b and a != b:
        return f"torch changed: measured on {a}, now {b}"
    return None


def _outcomes(lever) -> str:
    if lever.kind == "experiment":
        return "CONFIG"
    return "|".join(o for o in lever.outcomes if o != "defer") or "OUTCOME"


def _remeasured(model) -> str | None:
    """`re-measured inconclusive in run 12: CI straddles 1.10×; was adopt` while that leaves it measured."""
    cleared = model.cleared or {}
    if model.state != "measured" or cleared.get("run") is None:
        return None
    return f"{cleared['why']}; was {cleared['outcome']}"


def _last_verdict(model) -> str | None:
    run = model.last_run or {}
    if run.get("verdict") != "inconclusive":
        return None
    return f"inconclusive in run {run['id']}" + (f": {run['reason']}" if run.get("reason") else "")


def _note(view: dict) -> str:
    """The one-line why / note of `optseq status`."""
    if view["why_blocked"]:
        return "; ".join(view["why_blocked"])
    if view["stale_reason"]:
        return view["stale_reason"]
    if view["unavailable"]:
        return f"unavailable: {view['unavailable']['reason']} (run {view['unavailable']['run']})"
    if view["remeasured"]:
        return view["remeasured"]
    return "; ".join(view["warnings"])


def _code_warnings(decision: dict | None, runs) -> list[str]:
    """A workload whose code changed since the evidence run is worth a look, not a re-measure."""
    for run_id in (decision or {}).get("runs") or []:
        fingerprint = runs.fingerprint(run_id)
        measured, latest_code = fingerprint.get("code_hash"), runs.latest_code.get(workload(fingerprint))
        if measured and latest_code and measured != latest_code:
            return [f"workload code changed since run {run_id} (code hash {measured} → {latest_code})"]
    return []


def _public(decision: dict | None) -> dict | None:
    if decision is None:
        return None
    return {k: v for k, v in decision.items() if k not in ("doc_id",)}


def _gate_text(expr) -> str | None:
    from optseq.state.plan.gates import Atom

    if expr is None:
        return None
    if isinstance(expr, Atom):
        return expr.text()
    inner = ", ".join(_gate_text(item) for item in expr.items)
    return f"{expr.op}({inner})"


def default_db() -> Path:
    return Path(os.environ.get("OPTSEQ_DB") or ".optseq")
