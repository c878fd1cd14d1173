"""Watched, the lever machine's part that applies a watch (`optseq --run watch`) to its adopted lever: fast, on a
real plan and the machine's own records, no store and no runs launched (tests/state/lifecycle/test_watch.py runs them)."""
from __future__ import annotations

from optseq.state.kinds import WatchVerdict
from optseq.state.lifecycle.board import Board, Effects
from optseq.state.lifecycle.lever_records import Watch
from optseq.state.lifecycle.machine import PlanMachine
from optseq.state.lifecycle.staleness import Staleness
from optseq.state.lifecycle.standing import Standing
from optseq.state.lifecycle.watched import Watched, commit_of
from optseq.state.plan import loader
from optseq.state.record_types import Decision

RULE = 'rule = { metric = "items_per_s", min_speedup = 1.1 }'
AT = "2026-11-02T10:00:00+00:00"


def plan_of(tmp_path, *extra: str):
    """`fast` and `slow` (both measured levers) and `planned` (adopted by the plan at 2.5×)."""
    levers = "".join(f"""
[[levers]]
id = "{lid}"
title = "{lid}"
kind = "speedup"
plan_doc = "docs/{lid}.md"
run = ["true"]
{RULE}
{more}
""" for lid, more in (("fast", ""), ("slow", ""), ("planned", 'prior = { outcome = "adopt", estimate = 2.5 }'),
                      *extra))
    path = tmp_path / "plan.toml"
    path.write_text(f'[plan]\ntitle = "Watched"\nas_of = 2026-11-01\nlang = "en"\n{levers}', encoding="utf-8")
    return loader.load(path)


class Replay:
    """Records applied in order, as the store replays them."""

    def __init__(self, plan):
        self.machine, self.seq = PlanMachine(plan), 0

    def add(self, table: str, **fields) -> list[dict]:
        self.seq += 1
        return self.machine.apply(table, {"id": self.seq, "seq": self.seq, "at": AT, **fields})

    def run(self, lever: str, *, adopted=(), head="a1b2c3d4", estimate=1.3, **fields) -> int:
        """A lever run measured on a stack of `adopted`, at commit `head`: its id."""
        self.add("runs", lever=lever, status="succeeded", verdict="adopt", infra={"adopted": list(adopted)},
                 fingerprint={"repo": {"head": head}}, summary={"stats": {"estimate": estimate}}, **fields)
        return self.seq

    def adopt(self, lever: str, run: int | None, estimate: float | None = 1.3) -> None:
        self.add("decisions", lever=lever, outcome="adopt", runs=[run] if run else [],
                 stats={"estimate": estimate} if estimate is not None else {})

    def watch(self, lever: str, verdict: str, *, status="succeeded", head="d4e5f6a7", low=0.98, high=1.09,
              estimate=1.04) -> list[dict]:
        """A finished watch's record, applied: the events it derived."""
        return self.add("runs", lever=lever, status=status, verdict=verdict, watch=True, ended="2026-11-03",
                        infra={"adopted": []}, fingerprint={"repo": {"head": head}},
                        summary={"stats": {"estimate": estimate, "ci_low": low, "ci_high": high}})


def test_commit_of_says_the_commit_a_run_measured():
    assert commit_of({"repo": {"head": "abc"}}) == "abc"
    # a branch lever's run measures the baseline's commit, not the working tree's HEAD
    assert commit_of({"code": {"baseline": {"commit": "base"}, "candidate": {"commit": "cand"}},
                      "repo": {"head": "abc"}}) == "base"
    assert commit_of({"code": "not an object", "repo": {"head": "abc"}}) == "abc"
    assert commit_of(None) is None and commit_of({}) is None and commit_of({"repo": "?"}) is None


def test_a_watch_that_holds_is_kept_and_moves_no_state(tmp_path):
    replay = Replay(plan_of(tmp_path))
    replay.adopt("fast", replay.run("fast"))
    assert replay.watch("fast", "holds") == []
    model = replay.machine.models["fast"]
    assert model.state == "adopted" and model.outcome == "adopt"
    assert model.watch == Watch(run=replay.seq, verdict=WatchVerdict.HOLDS, estimate=1.04, ci_low=0.98, ci_high=1.09,
                                commit="d4e5f6a7", at="2026-11-03")
    assert replay.machine.eroded_text("fast") is None and replay.machine.eroded_said("fast") is None


def test_what_a_watch_cannot_say_leaves_the_gain_unwatched(tmp_path):
    replay = Replay(plan_of(tmp_path))
    replay.adopt("fast", replay.run("fast"))
    replay.watch("fast", "eroded", status="failed")  # a watch that failed says nothing of the gain
    replay.watch("fast", "adopt")  # the rule's word, not a watch's
    assert replay.machine.models["fast"].watch is None
    replay.add("decisions", lever="slow", outcome="reject", runs=[])
    replay.watch("slow", "eroded")  # no standing adopt to check
    assert replay.machine.models["slow"].watch is None


def test_an_eroded_gain_stales_what_was_measured_on_it_once(tmp_path):
    replay = Replay(plan_of(tmp_path))
    replay.adopt("fast", replay.run("fast"))
    adopted_at = replay.seq - 1
    replay.adopt("slow", replay.run("slow", adopted=["fast"]))
    on_top = replay.seq - 1
    events = replay.watch("fast", WatchVerdict.ERODED)
    eroded = (f"eroded: 1.04× [0.98, 1.09] at run {replay.seq} (commit d4e5f6a) against 1.30× when adopted at run "
              f"{adopted_at} (a1b2c3d)")
    assert replay.machine.eroded_text("fast") == eroded
    assert [(e["type"], e["lever"], e["reason"]) for e in events] == [
        ("stale", "slow", f"fast's gain eroded ({eroded}) after slow was measured on top of it in run {on_top}")]
    assert replay.machine.state("slow") == "stale" and replay.machine.state("fast") == "adopted"
    # a second eroded watch marks the gain again, and stales nothing more
    assert replay.watch("fast", "eroded", estimate=1.02) == []
    watch = replay.machine.models["fast"].watch
    assert watch is not None and watch.estimate == 1.02


def test_what_the_adopt_claimed(tmp_path):
    replay = Replay(plan_of(tmp_path))
    run = replay.run("fast", head="a1b2c3d4")
    replay.adopt("fast", run, estimate=1.3)
    watches = replay.machine.watches
    assert watches.adopted_figure("fast") == (1.3, run, "a1b2c3d4")
    assert watches.adopted_figure("planned") == (2.5, None, None)  # the plan's figure, no run
    replay.adopt("slow", None, estimate=None)
    assert watches.adopted_figure("slow") == (None, None, None)
    replay.watch("planned", "eroded", low=None, high=None)
    assert replay.machine.eroded_text("planned") == (f"eroded: 1.04× at run {replay.seq} (commit d4e5f6a) against "
                                                     "2.50× when adopted (the plan's figure)")
    replay.watch("slow", "eroded", head="")
    assert replay.machine.eroded_text("slow") == (f"eroded: 1.04× [0.98, 1.09] at run {replay.seq} against no "
                                                  "figure when adopted (decided by hand, with no run)")


def test_watched_works_on_the_board_it_is_given(tmp_path):
    """Watched's collaborators are explicit: a board, and the staleness that marks levers on it."""
    board = Board.of(plan_of(tmp_path))
    effects = Effects()
    watched = Watched(board, Staleness(board, Standing(board), effects))
    model = board.models["fast"]
    model.outcome, model.decision = "adopt", Decision(id=1, runs=[])
    watched.watched(model, {"id": 7, "status": "succeeded", "verdict": "eroded",
                            "summary": {"stats": {"estimate": 0.9}}})
    assert watched.eroded_text("fast") == ("eroded: 0.90× at run 7 against no figure when adopted (decided by hand, "
                                           "with no run)")
    assert effects.take() == []  # nothing measured on top of it
