"""What users and runs do to the plan's state: record criteria, mark plans written, set facts, decide, land a branch
lever, stale what a run's stack changed.

`Actions` reads the plan and the machine one open holds (state/held.py) and writes through its Writer
(state/writes.py: `writing()`, one store transaction, and `append()`); each action is validated first and refused
with an InputError line.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from optseq.state.errors import InputError
from optseq.state.held import Held
from optseq.state.lifecycle.states import DECIDED, TransitionRefused
from optseq.state.lifecycle.words import say, text
from optseq.state.plan.model import Lever
from optseq.state.plan.testbed import decides, same
from optseq.state.plan.workload import conflict
from optseq.state.runs.configs import measured_configs, spelled
from optseq.state.writes import Writer

CONFIG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""What a config measured elsewhere may be called (the bench's names are h<hidden>x<layers>)."""


class Actions:
    """Every write the CLI and the console make, each validated first and refused with an InputError line."""

    def __init__(self, held: Held, writer: Writer):
        self.held = held
        self.writer = writer

    def record_criterion(self, lever_id: str, candidate: str, criterion: str, outcome: str,
                         evidence: str = "") -> list[str]:
        with self.writer.writing():
            return self.record_criterion_in_batch(lever_id, candidate, criterion, outcome, evidence)

    def record_criterion_in_batch(self, lever_id: str, candidate: str, criterion: str, outcome: str,
                                  evidence: str = "") -> list[str]:
        lever = self.held.lever(lever_id)
        if lever.criteria is None:
            raise InputError(f"{lever_id} is a {lever.kind} lever; only decision levers have criteria")
        cands = [c.id for c in lever.criteria.candidates]
        crits = [c.id for c in lever.criteria.criteria]
        if candidate not in cands:
            raise InputError(f"{lever_id}: unknown candidate {candidate!r} (one of {', '.join(cands)})")
        if criterion not in crits:
            raise InputError(f"{lever_id}: unknown criterion {criterion!r} (one of {', '.join(crits)})")
        found = spelled(outcome, ("pass", "fail"))
        if found is None:
            raise InputError(f"criterion outcome must be pass or fail, got {outcome!r}")
        outcome = found
        model = self.held.machine.models[lever_id]
        if model.state in DECIDED or model.state == "closed":
            raise InputError(f"{lever_id} is already decided {model.outcome}; "
                             f"record nothing more, or decide again with optseq decide")
        if model.state == "blocked":
            raise InputError(f"{lever_id} is blocked: {'; '.join(self.held.machine.why_blocked(lever_id))}")
        messages = [f"recorded {lever_id} {candidate} {criterion} {outcome}"]
        self.writer.append("criteria", {"lever": lever_id, "candidate": candidate, "criterion": criterion,
                                        "outcome": outcome, "evidence": evidence})
        verdict = self.held.machine.criteria_verdict(lever_id)
        if verdict:
            why = self._verdict_reason(lever_id)
            self.decide_in_batch(lever_id, verdict, why=why, auto=True, rule="criteria")
            messages.append(f"{lever_id} decided {verdict} automatically: {why}")
        return messages

    def _verdict_reason(self, lever_id: str) -> str:
        gate = self.held.plan.lever(lever_id).criteria
        if gate is None:  # only a decision lever has criteria to give a verdict
            return ""
        parts = []
        for cand in gate.candidates:
            status = self.held.machine.candidate_status(lever_id, cand)
            failed = [c.id for c in gate.criteria
                      if self.held.machine.models[lever_id].results.get((cand.id, c.id), ("",))[0] == "fail"]
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
        self.held.lever(lever_id)
        if not path.strip():
            raise InputError("plan path is empty")
        model = self.held.machine.models[lever_id]
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
        with self.writer.writing():
            self.writer.append("events", {"type": "plan", "lever": lever_id, "path": path})
        lines.append(f"{lever_id}: plan {path} recorded; {lever_id} is {self.held.machine.state(lever_id)}")
        if found is None and missing == "ok":
            lines.append(f"note: {path} is not there from here or from the plan's folder; recorded as given")
        return lines

    def create_plan_doc(self, lever_id: str, path: str) -> list[str]:
        """Write a short plan doc for the lever at `path` (from here, as the console's dialog looks first), its
        folders too; never over a file. InputError naming the path when it cannot be written."""
        lever = self.held.lever(lever_id)
        target = Path(os.path.expanduser(path))
        target = target if target.is_absolute() else Path.cwd() / target
        rule = lever.rule
        measured = (f"`{rule.metric}`, adopted at {rule.min_speedup:g}× or better" if rule and rule.min_speedup
                    else f"`{rule.metric}`" if rule else "by hand")
        text = (f"# {lever.title or lever.id}: plan\n\nLever `{lever.id}` ({lever.kind}) of {self.held.plan.title}.\n\n"
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
        where = [given] if given.is_absolute() else [Path.cwd() / given, Path(self.held.plan.path).parent / given]
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
        if not any(f.id == name for f in self.held.plan.facts):
            known = ", ".join(f.id for f in self.held.plan.facts) or "none"
            raise InputError(f"unknown fact {name!r} (plan {self.held.plan.path} declares: {known})")
        with self.writer.writing():
            self.writer.append("facts", {"name": name, "value": bool(value)})
        return [f"fact {name} = {'true' if value else 'false'}"]

    def decide(self, lever_id: str, outcome: str, why: str, unmeasured: bool = False) -> list[str]:
        """A manual decision: the rationale is required; the outcome is one the lever has, in any case. An
        experiment's config is one its runs measured, unless `unmeasured` says it was measured elsewhere."""
        lever = self.held.lever(lever_id)
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
        with self.writer.writing():
            self.decide_in_batch(lever_id, outcome, why=why, auto=False, rule="manual")
        return [f"{lever_id} decided {outcome} (manual)"]

    def outcomes_of(self, lever: Lever) -> list[str]:
        """What `lever` can be decided to now: the plan's outcomes, or for an experiment whose configs the plan
        leaves to its bench (their names change with the bench's size), the configs its runs measured."""
        if lever.kind == "experiment" and not lever.outcomes[:-1]:
            return [*measured_configs(self.held.machine.runs.recent.get(lever.id, [])), "defer"]
        return list(lever.outcomes)

    def decide_in_batch(self, lever_id: str, outcome: str, *, why: str, auto: bool, rule: str,
                        runs: Iterable[int] = (), stats: dict[str, Any] | None = None,
                        config: dict[str, Any] | None = None,
                        why_said: dict[str, Any] | None = None, source: str | None = None) -> dict[str, Any]:
        try:
            self.held.machine.check_decidable(lever_id, outcome)
        except TransitionRefused as exc:
            raise InputError(str(exc)) from None
        if outcome == "adopt":
            self.check_stack(lever_id)
        previous = self.held.machine.models[lever_id].last_decision
        record = {"lever": lever_id, "outcome": outcome, "auto": auto, "rule": rule, "why": why,
                  "runs": list(runs), "stats": stats, "config": config,
                  "supersedes": previous.id if previous and previous.source != "plan" else None}
        if why_said:  # an automatic decision's reason as its rule said it, for the export's language
            record["why_said"] = why_said
        if source:  # what decided it, where not a run of the lever itself (a screen)
            record["source"] = source
        return self.writer.append("decisions", record)

    def check_stack(self, lever_id: str) -> None:
        """A lever whose change sets a key an adopted lever set otherwise cannot join the stack: InputError."""
        arms = self.held.plan.lever(lever_id).arms
        if arms is None or not arms.composes:
            return
        adopted = [(lid, self.held.plan.lever(lid).arms) for lid in self.held.machine.adoption_order()
                   if self.held.plan.has_lever(lid)]
        why = conflict(lever_id, arms, adopted)
        if why:
            raise InputError(f"{lever_id}: {why}")

    def mark_landed(self, lever_id: str, ref: str, why: str) -> list[str]:
        """An adopted branch lever whose code reached the baseline as another commit (a squash or rebase merge,
        which git's history cannot tie to the branch): it lands at `ref`, which must be in the baseline's history.
        The rationale is required, as for any decision by hand."""
        from optseq.state.code import branch, git

        lever = self.held.lever(lever_id)
        arms, model = lever.arms, self.held.machine.models[lever_id]
        if arms is None or not arms.branch:
            raise InputError(f"{lever_id} is not a branch lever (no candidate_ref): an adopt of it is in effect "
                             "already")
        if model.outcome != "adopt":
            raise InputError(f"{lever_id} is {model.state}: only an adopted branch lever lands")
        if model.landed:
            raise InputError(f"{lever_id} is in the code since {git.short(model.landed.since)} already")
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
        code = self.held.machine.branch_code(lever_id) or {}
        with self.writer.writing():
            self.writer.append("events", {"type": "landed", "lever": lever_id, "since": commit, "base": base_ref,
                                          "commit": (code.get("candidate") or {}).get("commit"), "manual": True,
                                          "why": why})
        return [f"{lever_id}: in the code since {git.short(commit)} (by hand: {why})"]

    def mark_stack_changes(self, run_id: int, fp: dict[str, Any], testbed: dict[str, Any] | None = None) -> None:
        """A number measured on another device or torch is stale; a code change only warns (status). Only on
        one testbed: a run elsewhere (another OPTSEQ_TESTBED, or not the plan's deciding one) stales nothing."""
        if not decides({"testbed": testbed}, self.held.plan.testbed):
            return
        for lever_id, model in self.held.machine.models.items():
            if model.state in DECIDED and model.decision:
                evidence_runs = model.decision.runs or []
            elif model.state == "measured" and model.last_run and model.last_run.id is not None:
                evidence_runs = [model.last_run.id]  # inconclusive numbers go stale as decided ones do
            else:
                continue
            for evidence in evidence_runs:
                if not same(self.held.machine.runs.testbed(evidence), testbed):
                    continue  # another machine's numbers: a device that differs there is no change here
                old = self.held.machine.runs.fingerprint(evidence)
                said = _stack_change(old, fp)
                if said and evidence != run_id:
                    self.writer.append("events", {"type": "stale", "lever": lever_id, "reason": text(said),
                                                  "said": said, "run": run_id})
                    break


def _stack_change(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any] | None:
    """Why a number measured on `old`'s stack is stale on `new`'s, as lifecycle/words says it."""
    if old.get("device") and new.get("device") and old["device"] != new["device"]:
        return say("device_changed", was=old["device"], now=new["device"])
    a, b = (old.get("versions") or {}).get("torch"), (new.get("versions") or {}).get("torch")
    if a and b and a != b:
        return say("torch_changed", was=a, now=b)
    return None
