"""One answer to "what is next" (issue 32, point 1) and a pending table of pending levers alone (point 8): the
seed story walked through the real CLI, and at every state `status --json`, `status`, and the export in both
languages name the same lever; the console's status line too, where the doc and the console used to disagree."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from optseq.state.plan import loader as plan_loader
from optseq.state.plan.prose import localized
from optseq.state.store.store import Store
from tests.conftest import DEFAULT_PLAN, OPTSEQ

STORY = [
    ("fresh", []),
    ("julia NO-GO", [["record", "julia_port", "torch_jl", "c4", "fail", "--evidence", "0.8x of PyTorch"]]),
    ("option_b planned", [["plan", "option_b", "docs/plans/option_b.md", "--missing-ok"]]),
    ("option_b adopted", [["decide", "option_b", "adopt", "--why", "5.3x"]]),
    ("model size chosen", [["decide", "model_size", "h64x3", "--why", "chosen", "--unmeasured"]]),
    ("option_a rejected", [["decide", "option_a", "reject", "--why", "no gain", "--unmeasured"]]),
    ("amp adopted", [["decide", "amp", "adopt", "--why", "1.2x", "--unmeasured"]]),
    ("model size again: stale levers", [["decide", "model_size", "h32x2", "--why", "smaller", "--unmeasured"]]),
    ("tensorrt opened", [["fact", "eval_dense", "true"], ["plan", "tensorrt", "docs/plans/tensorrt.md", "--missing-ok"]]),
]
"""The seed story by decisions (the engine's runs take minutes here; a decision moves the machine the same way)."""


def cli(env, *args) -> str:
    proc = subprocess.run([*OPTSEQ, *args], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def section(doc: str, title: str) -> list[str]:
    """The lines of the `## title` section, its heading and blank lines left out."""
    out, inside = [], False
    for line in doc.splitlines():
        if line.startswith("## "):
            inside = line[3:].startswith(title)
            continue
        if inside and line.strip():
            out.append(line)
    return out


def pending_rows(doc: str, titles: dict[str, str]) -> dict[str, str]:
    """lever id -> its state cell in the Pending levers table (rows are `| title | plan | state |`)."""
    rows = {}
    for line in section(doc, "Pending levers")[2:]:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        assert cells[0] in titles, f"a row of no lever: {line}"
        rows[titles[cells[0]]] = cells[-1]
    return rows


def walk_story(tmp_path_factory, name: str):
    """Walk STORY through the real CLI on a store of its own: yields (state, env) after each state's steps."""
    import os

    db = tmp_path_factory.mktemp(name) / "state"
    env = dict(os.environ, OPTSEQ_DB=str(db), OPTSEQ_PLAN=str(DEFAULT_PLAN))
    Store.open(db, mode="write").close()  # a read of an $OPTSEQ_DB with no store is refused
    env.pop("OPTSEQ_PUREPYTHON", None)
    for state, steps in STORY:
        for step in steps:
            cli(env, *step)
        yield state, env


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    """Each state of the story: (name, status --json, status's text, {lang: export})."""
    return [(name, json.loads(cli(env, "status", "--json")), cli(env, "status"),
             {lang: cli(env, "export", "--lang", lang) for lang in ("ko", "en")})
            for name, env in walk_story(tmp_path_factory, "one-next")]


def titles_in(lang: str, path=DEFAULT_PLAN) -> dict[str, str]:
    plan = localized(plan_loader.load(path), lang)
    return {lever.title: lever.id for lever in plan.levers}


def test_status_and_the_export_name_the_same_next_at_every_state(story):
    seen = set()
    for name, status, text, exports in story:
        nxt = status["next"]
        seen.add(nxt)
        assert f"next: {nxt or 'nothing to run'}" in text.splitlines(), (name, text)
        for lang, doc in exports.items():
            rows = pending_rows(doc, titles_in(lang))
            marked = [lid for lid, state in rows.items() if "(next)" in state]
            # the next lever has moved in every state of this story, so its row says its state, marked
            assert marked == ([nxt] if nxt else []), (name, lang, nxt, rows)
            said = [line for line in section(doc, "현재 진행 상태" if lang == "ko" else "Current status")
                    if "(next)" in line]
            assert len(said) == (1 if nxt else 0), (name, lang, said)
    # the walk passes states with nothing to run, a lever ready, and a stale lever next
    assert None in seen and "model_size" in seen
    stale = [s for _, s, _, _ in story if s["next"] and
             next(v for v in s["levers"] if v["id"] == s["next"])["state"] == "stale"]
    assert stale, "no state of the walk has a stale lever next"


def test_after_option_b_the_doc_says_model_size_is_next(story):
    """The issue's own case: the export marked Option A (kind order) while status said model_size."""
    (status, exports) = next((s, e) for n, s, _, e in story if n == "option_b adopted")
    assert status["next"] == "model_size"
    for lang, doc in exports.items():
        rows = pending_rows(doc, titles_in(lang))
        assert "(next)" in rows["model_size"] and "(next)" not in rows["option_a"], (lang, rows)


def test_the_pending_table_lists_only_undecided_levers(story):
    for name, status, _, exports in story:
        settled = {v["id"] for v in status["levers"]
                   if v["state"] in ("adopted", "rejected", "deferred", "decided", "closed")}
        for lang, doc in exports.items():
            rows = pending_rows(doc, titles_in(lang))
            assert not settled & set(rows), (name, lang, settled & set(rows))
    # option_b adopted, model_size and julia_port decided: pending no more; amp and option_a, stale, are again
    rows = pending_rows(story[-1][3]["en"], titles_in("en"))
    assert not {"option_b", "model_size", "julia_port"} & set(rows)
    assert {"amp", "option_a", "tensorrt", "compile"} <= set(rows)


def test_a_lever_next_before_anything_happened_is_marked_on_the_plans_own_words(tmp_path):
    """The starter plan `optseq init` writes: fast_sum can run at once, and its row still has the plan's words."""
    import os

    starter = DEFAULT_PLAN.parent / "starter" / "optseq.toml"
    env = dict(os.environ, OPTSEQ_DB=str(tmp_path / "state"), OPTSEQ_PLAN=str(starter))
    Store.open(tmp_path / "state", mode="write").close()  # a read of an $OPTSEQ_DB with no store is refused
    status = json.loads(cli(env, "status", "--json"))
    assert status["next"] == "fast_sum"
    for lang in ("ko", "en"):
        rows = pending_rows(cli(env, "export", "--lang", lang), titles_in(lang, starter))
        assert [lid for lid, state in rows.items() if "(next)" in state] == ["fast_sum"], (lang, rows)
        assert rows["fast_sum"] == "not measured yet (next)"  # the plan's words, marked


def test_a_plan_with_every_lever_decided_says_so_instead_of_an_empty_table(tmp_path):
    import os

    plan = tmp_path / "plan.toml"
    plan.write_text('[plan]\ntitle = "One"\nas_of = 2026-11-01\nlang = "en"\n\n[[levers]]\nid = "a"\ntitle = "A"\n'
                    'kind = "speedup"\nplan_doc = "a.md"\nrun = ["true"]\n'
                    'rule = { metric = "x", min_speedup = 1.1 }\n', encoding="utf-8")
    env = dict(os.environ, OPTSEQ_DB=str(tmp_path / "state"), OPTSEQ_PLAN=str(plan))
    Store.open(tmp_path / "state", mode="write").close()  # a read of an $OPTSEQ_DB with no store is refused
    assert section(cli(env, "export"), "Pending levers")[2] == "| A | `a.md` | ready (next) |"
    cli(env, "decide", "a", "reject", "--why", "slower", "--unmeasured")
    for lang, line in (("en", "No lever is waiting for a decision."), ("ko", "결정 대기 중인 lever 없음.")):
        assert section(cli(env, "export", "--lang", lang), "Pending levers") == [line]


@pytest.mark.parametrize("upto", ["fresh", "option_b adopted", "model size again: stale levers"])
def test_the_console_says_the_next_the_doc_marks(tmp_path, monkeypatch, upto):
    """The console's status line, under Pilot: nothing to run, a ready lever (where the doc and the console
    disagreed), and a stale one."""
    import os

    from optseq.console.tui.app import make_app
    from tests.console.test_app import SIZE, run, until

    db = tmp_path / "state"
    env = dict(os.environ, OPTSEQ_DB=str(db), OPTSEQ_PLAN=str(DEFAULT_PLAN))
    Store.open(db, mode="write").close()  # a read of an $OPTSEQ_DB with no store is refused
    for name, steps in STORY[:[n for n, _ in STORY].index(upto) + 1]:
        for step in steps:
            cli(env, *step)
    nxt = json.loads(cli(env, "status", "--json"))["next"]
    monkeypatch.delenv("OPTSEQ_PLAN", raising=False)
    monkeypatch.delenv("OPTSEQ_DB", raising=False)
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    marked = [lid for lid, state in pending_rows(cli(env, "export", "--lang", "en"), titles_in("en")).items()
              if "(next)" in state]

    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.main.query_one("#status").text.startswith("next:"), what="the status line")
            return app.main.query_one("#status").text

    line = run(go())
    if nxt is None:
        assert marked == [] and line.startswith("next: nothing to run"), (marked, line)
    else:
        assert marked == [nxt] and re.match(rf"next: {nxt} \(n runs it\)", line), (marked, line)
    assert upto != "option_b adopted" or nxt == "model_size"
