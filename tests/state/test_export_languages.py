"""Every sentence optseq writes into the export is in the export's language (issue 32, point 6): the seed story
exported in Korean and in English at every state, each scanned for the other script.

What is exempt is the text optseq did not write: the plan's own words in the doc's language (titles, notes, the
order's paragraphs, the seed's English terms), what the user typed (a decision's why, a criterion's evidence),
code spans and fenced blocks (ids, paths, the graph's source), and the lifecycle's stored reasons (a stale or closed
lever's reason is a record of the store, in English, shown as `optseq status` shows it).
"""
from __future__ import annotations

import dataclasses
import json
import os
import re

import pytest

from optseq.state.plan import loader as plan_loader
from optseq.state.plan.prose import localized
from optseq.state.report.labels import LABELS
from optseq.state.store.store import Store
from tests.conftest import DEFAULT_PLAN
from tests.state.test_one_next import STORY, cli

HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")
ENGLISH_RUN = re.compile(r"(?<![\w.-])[A-Za-z][A-Za-z']*(?: +[A-Za-z][A-Za-z']*){2,}(?![\w-])")
"""Three English words in a row: a sentence, where the Korean doc writes none of its own."""


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """[(state, status --json, {lang: export})] along the seed story."""
    db = tmp_path_factory.mktemp("languages") / "state"
    env = dict(os.environ, OPTSEQ_DB=str(db), OPTSEQ_PLAN=str(DEFAULT_PLAN))
    Store.open(db, mode="write").close()  # a read of an $OPTSEQ_DB with no store is refused
    env.pop("OPTSEQ_PUREPYTHON", None)
    out = []
    for name, steps in STORY:
        for step in steps:
            cli(env, *step)
        out.append((name, json.loads(cli(env, "status", "--json")),
                    {lang: cli(env, "export", "--lang", lang) for lang in ("ko", "en")}))
    return out


def plan_strings(lang: str) -> list[str]:
    """Every string the plan gives, in `lang` where it gives one: what the doc quotes from the plan."""
    found: list[str] = []

    def walk(value):
        if isinstance(value, str):
            found.extend([value, *re.findall(r"\*\*(.+?)\*\*", value)])  # a title's bold part: its short name
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name))
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for v in value:
                walk(v)

    walk(localized(plan_loader.load(DEFAULT_PLAN), lang))
    return found


def user_strings() -> list[str]:
    """What the story's user typed: each step's free text (a why, an evidence)."""
    return [step[i + 1] for _, steps in STORY for step in steps for i, arg in enumerate(step)
            if arg in ("--why", "--evidence")]


def stored_reasons(status: dict) -> list[str]:
    return [v["stale_reason"] for v in status["levers"] if v.get("stale_reason")] + \
        [r.removeprefix("closed: ") for v in status["levers"] if v["state"] == "closed" for r in v["why_blocked"]]


def optseqs_own(doc: str, exempt: list[str]) -> str:
    """The doc without the exempt strings (the longest first: one may hold another), fenced blocks and code spans."""
    for text in sorted({t.strip() for t in exempt if len(t.strip()) > 2}, key=len, reverse=True):
        doc = doc.replace(text, " ")
    doc = re.sub(r"^```.*?^```", "", doc, flags=re.M | re.S)
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", doc)


def test_the_english_export_has_no_korean(exports):
    for name, _, docs in exports:
        # the plan gives an English text for each of its Korean ones, and the story's user writes English
        found = [line for line in docs["en"].splitlines() if HANGUL.search(line)]
        assert not found, (name, found[:5])


def test_the_korean_export_writes_no_english_sentence_of_its_own(exports):
    exempt = plan_strings("ko") + user_strings()
    for name, status, docs in exports:
        own = optseqs_own(docs["ko"], exempt + stored_reasons(status))
        found = [(line, ENGLISH_RUN.findall(line)) for line in own.splitlines() if ENGLISH_RUN.search(line)]
        assert not found, (name, found[:8])


def test_the_hours_section_is_in_the_doc_language(exports):
    """The issue's own lines, each said in Korean in the Korean doc, and in English in the English one."""
    docs = exports[3][2]  # option_b adopted: the calculus weighs priors, defaults and missing inputs
    for english, korean in (("the plan's order nets as much as any", "plan의 순서가 어느 순서 못지않게 절약"),
                            ("effort_h not declared, 0 h counted", "effort_h 미선언, 0 h로 계산"),
                            ("S and q: not measured and no prior", "S, q: 측정값도 prior도 없음")):
        assert english not in docs["ko"] and korean in docs["ko"]
        assert english in docs["en"] and korean not in docs["en"]


def test_every_sentence_is_given_in_both_languages():
    from optseq.state.calculus.words import WORDS

    assert LABELS["ko"].keys() == LABELS["en"].keys()
    assert WORDS["ko"].keys() == WORDS["en"].keys()
    for lang in ("ko", "en"):  # the same fields in each language's sentence
        for key, text in WORDS[lang].items():
            fields = set(re.findall(r"(?<!\{)\{(\w+)", text)) - {"s"}  # `s`: the English plural alone
            assert fields == set(re.findall(r"(?<!\{)\{(\w+)", WORDS["en"][key])) - {"s"}, (lang, key)


def test_a_sentence_copied_or_pickled_is_said_again_in_either_language():
    import copy
    import pickle

    from optseq.state.calculus.words import Said

    said = Said("order_reruns", order="a → b", saved="1.00", cost="0.00", net="1.00", n=1, s="",
                reruns=[Said("rerun_hours", experiment="grow", lever="b", hours="—")])
    assert said == "a → b: saves 1.00 h, costs 0.00 h, forces 1 re-run (grow after b: — h); net 1.00 h"
    for again in (copy.deepcopy(said), pickle.loads(pickle.dumps(said))):
        assert again == said and again.in_lang("ko") == "a → b: 1.00 h 절약, 비용 0.00 h, 재실행 1개 (b 뒤 grow: — h); 순 1.00 h"
    assert json.loads(json.dumps({"verdict": said}))["verdict"] == str(said)  # whatif --json: the English
