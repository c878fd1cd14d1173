"""A run's summary as a type (issue 41, point 1): what a run's end stored of its figures (its paired statistics, the
rule's verdict, a best-of choice, the error that left it unjudged) reads back from the store as record_types'
Summary and Stats, and every table reads it from there; the older shapes the schema still lets through (a summary
stored as a line of text, a verdict stored as one) read as none, in the types as in `optseq runs`."""
from __future__ import annotations

import json

from optseq.state.record_types import NO_SUMMARY, UNSET, RuleVerdict, Run, Stats, Summary, part
from optseq.state.store.store import Store
from optseq.state.text import ratio_text
from tests.console.test_runs_table import TINY_LEVER, lever, optseq, table, write_plan


def test_a_lever_runs_summary_reads_back_as_its_types(tmp_path, cli_env, db):
    """A real run of the stand-in lever through the CLI: its stored summary, field by field, is the typed run's;
    the runs table's ratio, pairs and arms are made from those fields."""
    plan = write_plan(tmp_path, lever("tiny", ["python", str(TINY_LEVER)]))
    env = {**cli_env, "OPTSEQ_PLAN": str(plan)}
    optseq(env, "--run", "tiny", "--json")
    with Store.open(db, mode="read") as store:
        stored, = store.all("runs")
        run, = store.typed("runs")
    assert isinstance(run, Run) and isinstance(run.summary, Summary) and isinstance(run.stats, Stats)
    summary = stored["summary"]
    assert isinstance(run.figures.verdict, RuleVerdict)
    assert (run.figures.rule_verdict.outcome, run.figures.rule_verdict.reason) == \
        (summary["verdict"]["outcome"], summary["verdict"]["reason"])
    for field in ("metric", "n", "estimate", "ci_low", "ci_high", "replicate", "launches", "noise", "baseline",
                  "candidate"):
        assert getattr(run.stats, field) == summary["stats"][field], field
    assert run.figures.chosen is UNSET and run.figures.error is None  # no best-of choice, judged
    # a reader of dicts handed the typed summary (a merge of a branch from before it) reads its parts, not none
    assert part(run.summary, "stats")["estimate"] == summary["stats"]["estimate"]
    row, = table(optseq(env, "runs").stdout)
    stats = run.stats
    assert stats.estimate is not None and stats.ci_low is not None and stats.ci_high is not None
    assert row["ratio [95% CI]"] == \
        f"{ratio_text(stats.estimate, 3)}× [{ratio_text(stats.ci_low, 3)}, {ratio_text(stats.ci_high, 3)}]"
    assert row["pairs"] == f"{stats.n} pairs" + (f" in {stats.launches} launches" if stats.replicate == "launch" else "")
    assert row["outcome"] == run.verdict == summary["verdict"]["outcome"]


OLD = [  # (the summary an older optseq or a hand stored, the outcome and note `optseq runs` gives it)
    ("2 passes", "succeeded", ""),  # a summary that was a line of text
    ({"verdict": "adopt, by the old rule"}, "succeeded", ""),  # a verdict that was one
    ({"error": "no samples of items_per_s"}, "succeeded", "not judged: no samples of items_per_s"),
    ({"chosen": None, "reason": "no config told apart"}, "succeeded", ""),  # a best-of run that chose none
    ({"chosen": "bf16", "noise": "the machine was busy"}, "bf16", "the machine was busy"),
]


def test_the_older_shapes_of_a_summary_read_as_none(tmp_path, cli_env, db):
    """Runs whose summaries have the shapes the schema lets through, written straight to the store as that optseq
    wrote them: the types read each as none where it is no object, and the runs table says what it always did."""
    plan = write_plan(tmp_path, lever("tiny", ["python", str(TINY_LEVER)]))
    env = {**cli_env, "OPTSEQ_PLAN": str(plan)}
    with Store.open(db, mode="write") as store:
        with store.batch():
            for summary, _, _ in OLD:
                store.append("runs", {"lever": "tiny", "status": "succeeded", "argv": ["true"], "passes": 1,
                                      "summary": summary})
    with Store.open(db, mode="read") as store:
        runs = [r for r in store.typed("runs") if isinstance(r, Run)]
    text, verdict, error, chosen_none, chosen = runs
    assert text.summary == "2 passes" and text.figures is NO_SUMMARY and text.stats == Stats()
    assert verdict.figures.verdict == "adopt, by the old rule" and verdict.figures.rule_verdict == RuleVerdict()
    assert error.figures.error == "no samples of items_per_s"
    # chosen none is told from no choice: a best-of run that chose nothing is inconclusive (lifecycle/moves.py)
    assert chosen_none.figures.chosen is None and chosen_none.figures.reason == "no config told apart"
    assert (chosen.figures.chosen, chosen.figures.noise) == ("bf16", "the machine was busy")
    rows = table(optseq(env, "runs").stdout)
    assert [(r["outcome"], r["note"]) for r in rows] == [(outcome, note) for _, outcome, note in OLD]
    # `--json` passes the stored records on whole: a reader's type keeps no less than the store gave
    assert [r["summary"] for r in json.loads(optseq(env, "runs", "--json").stdout)["runs"]] == \
        [summary for summary, _, _ in OLD]
