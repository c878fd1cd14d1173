"""The superseded marks `runs` prints: the rule in plain words (a dict, as the history was marked before it was
streamed) against the compact arrays that keep `runs --json`'s memory bounded, on histories that exercise every
precedence and every id an edited store may hold."""
from __future__ import annotations

import random

from optseq.state.supersession import Marks, SpilledTexts


def plain(decisions: list[dict], events: list[dict]) -> dict:
    """A later decision of the lever supersedes (the first one to name it wins); a derived `superseded` event
    supersedes too, and wins over a decision, the last event winning among events."""
    by: dict = {}
    for d in decisions:
        if d.get("supersedes") is not None:
            by.setdefault(d["supersedes"], f"decision {d['id']}: {d['lever']} decided {d['outcome']}")
    for e in events:
        if e.get("type") == "superseded" and e.get("decision") is not None:
            what = f"decision {e['by']}" if e.get("by") is not None else f"run {e.get('run')}"
            by[e["decision"]] = f"{what}: {e.get('reason', '')}"
    return by


def marked(decisions: list[dict], events: list[dict]) -> list[tuple]:
    """The marks, the same whether the events' texts are kept in memory or spilled to a file (runs --json)."""
    both = []
    for spill in (False, True):
        marks = Marks(iter(decisions), iter(events), spill=spill)  # one pass each, as the stream reads them
        both.append([(d["id"], marks.mark(d)["superseded"], marks.mark(d)["superseded_by"]) for d in decisions])
    assert both[0] == both[1]
    return both[0]


def test_spilled_texts_read_back_whole_and_replaced():
    texts = SpilledTexts()
    for text in ("first", "zweite · 두 번째", "\udcff lone surrogate", ""):
        texts.append(text)
    texts[1] = "replaced, longer than it was"
    assert [texts[i] for i in range(len(texts))] == ["first", "replaced, longer than it was",
                                                     "\udcff lone surrogate", ""]


def expected(decisions: list[dict], events: list[dict]) -> list[tuple]:
    by = plain(decisions, events)
    return [(d["id"], d["id"] in by, by.get(d["id"])) for d in decisions]


def test_each_precedence_of_the_rule():
    decisions = [{"id": 1, "lever": "amp", "outcome": "adopt"},
                 {"id": 2, "lever": "amp", "outcome": "reject", "supersedes": 1},
                 {"id": 3, "lever": "amp", "outcome": "adopt", "supersedes": 1},  # the first to name 1 wins
                 {"id": 4, "lever": "jl", "outcome": "go"},
                 {"id": 5, "lever": "jl", "outcome": "no-go", "supersedes": 4},
                 {"id": 6, "lever": "ob", "outcome": "adopt"},
                 {"id": 7, "lever": "ob", "outcome": "adopt"}]
    events = [{"type": "stale", "lever": "amp", "decision": 2},  # not a supersession
              {"type": "superseded", "decision": 4, "by": 5, "reason": "closed: jl decided no-go"},
              {"type": "superseded", "decision": 6, "run": 40, "reason": "re-measured inconclusive in run 40"},
              {"type": "superseded", "decision": 6, "run": 41, "reason": "re-measured inconclusive in run 41"},
              {"type": "superseded", "decision": 7, "run": 42}]
    got = marked(decisions, events)
    assert got == expected(decisions, events)
    assert got == [(1, True, "decision 2: amp decided reject"), (2, False, None), (3, False, None),
                   (4, True, "decision 5: closed: jl decided no-go"), (5, False, None),
                   (6, True, "run 41: re-measured inconclusive in run 41"), (7, True, "run 42: ")]


def test_ids_an_edited_store_may_hold():
    decisions = [{"id": 1, "lever": "a", "outcome": "adopt", "supersedes": 9},  # names a later decision
                 {"id": 2, "lever": "a", "outcome": "adopt", "supersedes": "1"},  # a string, not decision 1
                 {"id": 3, "lever": "a", "outcome": "adopt", "supersedes": -1},
                 {"id": "x", "lever": "a", "outcome": "reject", "supersedes": 3},  # an id that is no int
                 {"id": 9, "lever": "a", "outcome": "adopt", "supersedes": 10**15}]
    events = [{"type": "superseded", "decision": 9, "by": 3, "reason": "r"},  # 9 first named before it was read
              {"type": "superseded", "decision": 10**15, "run": 1, "reason": "far"}]
    assert marked(decisions, events) == expected(decisions, events)
    assert Marks(decisions, events).get(10**15) == "run 1: far"


def test_a_long_random_history_marks_as_the_rule_does():
    rng = random.Random(5)
    decisions, events = [], []
    for i in range(1, 3000):
        target = rng.randrange(1, i) if i > 1 and rng.random() < 0.7 else None
        decisions.append({"id": i, "lever": rng.choice("abc"), "outcome": rng.choice(("adopt", "reject")),
                          **({"supersedes": target} if target else {})})
        if rng.random() < 0.2:
            events.append({"type": rng.choice(("superseded", "stale")), "decision": rng.randrange(1, i + 1),
                           **({"by": i} if rng.random() < 0.5 else {"run": rng.randrange(1000)}),
                           "reason": f"reason {i}"})
    got = marked(decisions, events)
    assert got == expected(decisions, events)
    assert sum(1 for _, s, _ in got if s) > 1000  # the history exercises the marks, not only the unmarked


def test_more_sayings_than_a_byte_counts_widen_the_codes():
    """The marks' arrays start at the narrowest type: past 255 distinct "lever decided outcome" texts the codes
    take two bytes, and every earlier mark still reads as it was written."""
    decisions = [{"id": i, "lever": f"lever{i % 3}", "outcome": f"outcome {i}",
                  **({"supersedes": i - 1} if i > 1 else {})} for i in range(1, 400)]
    got = marked(decisions, [])
    assert got == expected(decisions, [])
    assert got[0] == (1, True, "decision 2: lever2 decided outcome 2")
    assert got[300] == (301, True, "decision 302: lever2 decided outcome 302")
