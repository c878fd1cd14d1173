"""What users and runs do to the plan's state: record criteria, mark plans written, set facts, decide, run.

`Actions` is mixed into `Sequencer` (state/sequencer.py), which gives it `plan`, `machine`, `store`, `readonly`,
`lever()`, `writing()` (one store transaction) and `append()`; every action here writes through those.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from optseq.state import testbed_views
from optseq.state.errors import InputError
from optseq.state.lifecycle.states import DECIDED, TransitionRefused
from optseq.state.lifecycle.words import say, text
from optseq.state.plan.testbed import decides, same
from optseq.state.plan.workload import conflict
from optseq.state.runs.configs import measured_configs, spelled

CONFIG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""What a config measured elsewhere may be called (the bench's names are h<hidden>x<layers>)."""


class Actions:
    """Every write the CLI and the console make, each validated first and refused with an InputError line."""

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
        if spelled(outcome, ("pass", "fail")) is None:
            raise InputError(f"criterion outcome must be pass or fail, got {outcome!r}")
        outcome = spelled(outcome, ("pass", "fail"))
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

    def write_plan(self, lever_id: str, path: str, *, check: bool = False, missing: str = "refuse") -> list[str]:
        """Mark a lever's plan written. The CLI and the console `check` the path: a name no file can have, or a
        directory, is refused; so is a doc not found from here, unless `missing` is "create" (a template is
        written there first, as the console's dialog offers) or "ok" (recorded as given: it may live in another
        checkout, and the reply says so). The console's dialog asks about a missing file before it gets here."""
        if missing not in ("refuse", "create", "ok"):
            raise ValueError(f"missing must be refuse, create or ok, not {missing!r}")
        self.lever(lever_id)
        if not path.strip():
            raise InputError("plan path is empty")
        model = self.machine.models[lever_id]
        if model.state == "closed":
            raise InputError(f"{lever_id} is closed ({model.closed_by})")
        found = self.check_plan_doc(path, must_exist=False) if check else True
        lines = []
        if found is None and missing == "refuse":
            shown = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in path)
            raise InputError(f"plan doc {shown} does not exist (looked for from here and from the plan's folder); "
                             "write it first, or give --create to write a template there, or --missing-ok to "
                             "record the path as given")
        if found is None and missing == "create":
            lines += self.create_plan_doc(lever_id, path)
        with self.writing():
            self.append("events", {"type": "plan", "lever": lever_id, "path": path})
        lines.append(f"{lever_id}: plan {path} recorded; {lever_id} is {self.machine.state(lever_id)}")
        if found is None and missing == "ok":
            lines.append(f"note: {path} is not there from here or from the plan's folder; recorded as given")
        return lines

    def create_plan_doc(self, lever_id: str, path: str) -> list[str]:
        """Write a short plan doc for the lever at `path` (from here, as the console's dialog looks first), its
        folders too; never over a file. InputError naming the path when it cannot be written."""
        lever = self.lever(lever_id)
        target = Path(os.path.expanduser(path))
        target = target if target.is_absolute() else Path.cwd() / target
        rule = lever.rule
        measured = (f"`{rule.metric}`, adopted at {rule.min_speedup:g}× or better" if rule and rule.min_speedup
                    else f"`{rule.metric}`" if rule else "by hand")
        text = (f"# {lever.title or lever.id}: plan\n\nLever `{lever.id}` ({lever.kind}) of {self.plan.title}.\n\n"
                f"## What it changes\n\n\n## How it is measured\n\n{measured}.\n\n"
                "## Risks, and how to back out\n\n\n## Decision\n\noptseq records the decision and its figures; "
                "this doc keeps the reasoning.\n")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "x", encoding="utf-8") as f:
                f.write(text)
        except FileExistsError:
            raise InputError(f"plan doc {path} exists already: mark it instead") from None
        except OSError as e:
            raise InputError(f"cannot create plan doc {path}: {e.strerror or e}") from None
        return [f"wrote {path} from a template: fill it in"]

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

    def decide(self, lever_id: str, outcome: str, why: str, unmeasured: bool = False) -> list[str]:
        """A manual decision: the rationale is required; the outcome is one the lever has, in any case. An
        experiment's config is one its runs measured, unless `unmeasured` says it was measured elsewhere."""
        lever = self.lever(lever_id)
        allowed = self.outcomes_of(lever)
        found = spelled(outcome, allowed)
        if found is None and unmeasured and lever.kind == "experiment" and not lever.outcomes[:-1]:
            if not CONFIG_NAME.fullmatch(outcome) or outcome in ("decided", "defer"):
                raise InputError(f"{lever_id}: {outcome!r} cannot name a config (letters, digits, '.', '_', '-')")
            found = outcome
        if found is None:
            if lever.kind == "experiment" and not lever.outcomes[:-1]:
                measured = allowed[:-1]
                raise InputError(f"{lever_id}: unknown config {outcome!r} (" + (
                    f"its runs measured {', '.join(measured)}; or defer" if measured else
                    f"no run of {lever_id} has measured a config yet: run it to choose one, or defer") +
                    "; --unmeasured takes a config measured elsewhere)")
            raise InputError(f"{lever_id}: unknown outcome {outcome!r} for a {lever.kind} lever "
                             f"(one of {', '.join(allowed)})")
        outcome = found
        if not (why or "").strip():
            raise InputError("a manual decision needs a rationale (--why TEXT)")
        with self.writing():
            self.decide_in_batch(lever_id, outcome, why=why, auto=False, rule="manual")
        return [f"{lever_id} decided {outcome} (manual)"]

    def outcomes_of(self, lever) -> list[str]:
        """What `lever` can be decided to now: the plan's outcomes, or for an experiment whose configs the plan
        leaves to its bench (their names change with the bench's size), the configs its runs measured."""
        if lever.kind == "experiment" and not lever.outcomes[:-1]:
            return [*measured_configs(list(self.machine.runs.recent.get(lever.id, []))), "defer"]
        return list(lever.outcomes)

    def decide_in_batch(self, lever_id, outcome, *, why, auto, rule, runs=(), stats=None, config=None,
                        why_said=None, source: str | None = None) -> dict:
        try:
            self.machine.check_decidable(lever_id, outcome)
        except TransitionRefused as exc:
            raise InputError(str(exc)) from None
        if outcome == "adopt":
            self.check_stack(lever_id)
        previous = self.machine.models[lever_id].last_decision
        record = {"lever": lever_id, "outcome": outcome, "auto": auto, "rule": rule, "why": why,
                  "runs": list(runs), "stats": stats, "config": config,
                  "supersedes": previous.get("id") if previous and previous.get("source") != "plan" else None}
        if why_said:  # an automatic decision's reason as its rule said it, for the export's language
            record["why_said"] = why_said
        if source:  # what decided it, where not a run of the lever itself (a screen)
            record["source"] = source
        return self.append("decisions", record)

    def check_stack(self, lever_id: str) -> None:
        """A lever whose change sets a key an adopted lever set otherwise cannot join the stack: InputError."""
        arms = self.plan.lever(lever_id).arms
        if arms is None or not arms.composes:
            return
        adopted = [(lid, self.plan.lever(lid).arms) for lid in self.machine.adoption_order()
                   if self.plan.has_lever(lid)]
        why = conflict(lever_id, arms, adopted)
        if why:
            raise InputError(f"{lever_id}: {why}")

    # -- runs --------------------------------------------------------------------------------
    def hold_lever(self, lever_id: str):
        """The lever's run lock, taken for this process; InputError naming the run that holds it elsewhere."""
        from optseq.state.store.locks import LeverLock
        from optseq.state.store.layout import RUNS_DIR

        self._first_write()  # the run's lock is in the store: a run writes it
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
        landed = self.machine.models[lever_id].landed
        if landed:
            since = str(landed.get("since"))[:7]
            raise InputError(f"{lever_id} is in the code since {since}: its branch is in the baseline's history now, "
                             f"so nothing of it is left to measure against the baseline (optseq compare {since}^ "
                             f"{since} measures what the merge did)")
        held = self.cannot_run(lever_id)
        if held:
            raise InputError(f"{lever_id} cannot run: {held}")

    def mark_landed(self, lever_id: str, ref: str, why: str) -> list[str]:
        """An adopted branch lever whose code reached the baseline as another commit (a squash or rebase merge,
        which git's history cannot tie to the branch): it lands at `ref`, which must be in the baseline's history.
        The rationale is required, as for any decision by hand."""
        from optseq.state.code import branch, git

        lever = self.lever(lever_id)
        arms, model = lever.arms, self.machine.models[lever_id]
        if arms is None or not arms.branch:
            raise InputError(f"{lever_id} is not a branch lever (no candidate_ref): an adopt of it is in effect "
                             "already")
        if model.outcome != "adopt":
            raise InputError(f"{lever_id} is {model.state}: only an adopted branch lever lands")
        if model.landed:
            raise InputError(f"{lever_id} is in the code since {git.short(model.landed.get('since'))} already")
        if not (why or "").strip():
            raise InputError("a landing by hand needs a rationale (--why TEXT), e.g. \"squash-merged in #123\"")
        root = branch.repository(arms.cwd, lever_id)
        base_ref = arms.baseline_ref or "HEAD"
        commit, base = git.resolve(root, ref), git.resolve(root, base_ref)
        if commit is None:
            raise InputError(f"{lever_id}: {ref!r} names no commit in {root}")
        if base is None or not git.is_ancestor(root, commit, base):
            raise InputError(f"{lever_id}: {git.short(commit)} is not in {base_ref}'s history ({git.short(base)}): "
                             "it lands where the baseline holds it")
        code = self.machine.branch_code(lever_id) or {}
        with self.writing():
            self.append("events", {"type": "landed", "lever": lever_id, "since": commit, "base": base_ref,
                                   "commit": (code.get("candidate") or {}).get("commit"), "manual": True,
                                   "why": why})
        return [f"{lever_id}: in the code since {git.short(commit)} (by hand: {why})"]

    def check_refs(self, lever_id: str) -> None:
        """A branch lever's refs name commits of a repository, apart from each other: InputError naming the ref, in
        one line, before a run says it starts."""
        arms = self.lever(lever_id).arms
        if arms is None or not arms.branch:
            return
        from optseq.state.code import branch

        branch.check_apart(branch.resolve(arms.cwd, arms.baseline_ref, arms.candidate_ref, lever_id), lever_id)

    def run_lever(self, lever_id: str, *, on_event=None, on_log=None, control=None, watch: bool = False):
        """Blocking: launch, stream, judge and decide (a watch: judge whether the adopted gain holds, deciding
        nothing); returns a lever_run.RunReport."""
        from optseq.state.runs import lever_run

        return lever_run.run_lever(self.run_host, lever_id, on_event=on_event, on_log=on_log, control=control,
                                   watch=watch)

    def check_watchable(self, lever_id: str) -> None:
        """A watch checks an adopted lever in the stack on the current code: InputError (one line) for any other."""
        model = self.machine.models[lever_id]
        if model.outcome != "adopt":
            raise InputError(f"{lever_id} is {model.state}, not adopted: a watch re-checks an adopted gain "
                             f"(optseq --run {lever_id} measures it)")
        if not model.lever.run:
            raise InputError(f"{lever_id} was adopted by hand and has no command to measure it with")
        refused = self.watch_refusal(lever_id)
        if refused:
            raise InputError(refused)
        if model.landed:
            since = str(model.landed.get("since"))[:7]
            raise InputError(f"{lever_id} is in the code since {since}: its branch is the baseline now (optseq "
                             f"compare {since}^ {since} measures what the merge did)")

    watch_refusal = testbed_views.watch_refusal  # why a watch of a lever is left to another testbed, or None
    watch_refusals = testbed_views.watch_refusals  # one line per adopted lever left to another testbed

    testbed = property(testbed_views.here)  # {id, name, parts} of the machine this process measures on

    @property
    def runner(self):
        """Where this process sends lever runs: the command line's or environment's choice, else the plan's."""
        if getattr(self, "_runner", None) is None:
            from optseq.state.runners.choose import configure, make

            self._runner = make(configure(self.plan.runner))
        return self._runner

    @runner.setter
    def runner(self, value) -> None:
        self._runner = value

    GROUPS = ("next", "ready", "stale", "watch")

    def targets(self, target: str) -> list[str]:
        """Lever ids for `--run TARGET` as things stand now: an id, `next`, `ready` (ready and stale, in
        dependency order) or `stale`. A group run re-reads the state after each run: see `pick`."""
        if target == "next":
            nxt = self.machine.next()
            return [nxt] if nxt else []
        if target in ("ready", "stale"):
            return self.machine.runnable(("stale",) if target == "stale" else ("ready", "stale"))
        if target == "watch":
            return self.watchable()
        self.lever(target)
        return [target]

    def watchable(self) -> list[str]:
        """What `--run watch` re-checks, in dependency order: every adopted lever with a command, not unavailable
        on this device, whose code is not the baseline's already (a merged branch), adopted on this testbed
        (watch_refusals says the others)."""
        machine = self.machine
        return machine.in_order(lid for lid, m in machine.models.items() if m.outcome == "adopt" and m.lever.run
                                and not m.landed and m.unavailable is None and m.state != "running"
                                and self.watch_refusal(lid) is None)

    def pick(self, target: str, done=()) -> str | None:
        """The next lever of group `target` from the current state, skipping those in `done`: a run may
        make others ready or stale, and no lever runs twice in one invocation."""
        return next((lid for lid in self.targets(target) if lid not in done), None)

    def mark_stack_changes(self, run_id: int, fp: dict, testbed: dict | None = None) -> None:
        """A number measured on another device or torch is stale; a code change only warns (status). Only on
        one testbed: a run elsewhere (another OPTSEQ_TESTBED, or not the plan's deciding one) stales nothing."""
        if not decides({"testbed": testbed}, self.plan.testbed):
            return
        for lever_id, model in self.machine.models.items():
            if model.state in DECIDED and model.decision:
                evidence_runs = model.decision.get("runs") or []
            elif model.state == "measured" and model.last_run:
                evidence_runs = [model.last_run["id"]]  # inconclusive numbers go stale as decided ones do
            else:
                continue
            for evidence in evidence_runs:
                if not same(self.machine.runs.testbed(evidence), testbed):
                    continue  # another machine's numbers: a device that differs there is no change here
                old = self.machine.runs.fingerprint(evidence)
                said = _stack_change(old, fp)
                if said and evidence != run_id:
                    self.append("events", {"type": "stale", "lever": lever_id, "reason": text(said), "said": said,
                                           "run": run_id})
                    break


def _stack_change(old: dict, new: dict) -> dict | None:
    """Why a number measured on `old`'s stack is stale on `new`'s, as lifecycle/words says it."""
    if old.get("device") and new.get("device") and old["device"] != new["device"]:
        return say("device_changed", was=old["device"], now=new["device"])
    a, b = (old.get("versions") or {}).get("torch"), (new.get("versions") or {}).get("torch")
    if a and b and a != b:
        return say("torch_changed", was=a, now=b)
    return None
