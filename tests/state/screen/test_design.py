"""Every design a screen can return, checked from its run matrix alone: the resolution is the order of the
shortest product of factor columns that is constant (a word of the defining relation), and two effects are
aliased exactly when their columns are equal or opposite. Nothing here reads the generators' words."""
from __future__ import annotations

import itertools

import pytest

from optseq.state.screen import design
from optseq.state.screen.design import Design, DesignError, choose, order

NAMES = ("amp", "compile", "tensorrt", "option_a", "bf16", "cudnn", "fused", "graphs")


def column(d: Design, idx: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for run in d.runs:
        v = 1
        for i in idx:
            v *= run[i]
        out.append(v)
    return tuple(out)


def resolution_from_runs(d: Design) -> int | None:
    k = len(d.factors)
    for r in range(1, k + 1):
        for idx in itertools.combinations(range(k), r):
            if len(set(column(d, idx))) == 1:
                return r
    return None


def effects(k: int) -> list[tuple[int, ...]]:
    return [(i,) for i in range(k)] + list(itertools.combinations(range(k), 2))


def aliases_from_runs(d: Design) -> dict[str, tuple[str, ...]]:
    k = len(d.factors)
    name = lambda idx: "×".join(d.factors[i] for i in idx)  # noqa: E731
    out = {}
    for e in effects(k):
        ce = column(d, e)
        out[name(e)] = {name(o) for o in effects(k) if o != e and column(d, o) in (ce, tuple(-v for v in ce))}
    return out


ALL = [d for k in range(2, 9) for d in design.candidates(NAMES[:k])]


@pytest.mark.parametrize("d", ALL, ids=lambda d: d.kind())
def test_every_design_states_the_resolution_and_aliases_its_runs_have(d):
    k = len(d.factors)
    assert len(set(d.runs)) == len(d.runs) == 2 ** (k - len(d.generators))  # distinct runs, a regular fraction
    for i in range(k):
        assert sum(r[i] for r in d.runs) == 0  # balanced
    assert d.resolution == resolution_from_runs(d)
    got = {name: set(others) for name, others in d.aliases().items()}
    assert got == aliases_from_runs(d)
    # what the fit estimates is clear of every main effect, and no two of them share a column
    cols = {column(d, (i,)) for i in range(k)}
    cols |= {tuple(-v for v in c) for c in cols}
    picked = [column(d, tuple(d.factors.index(f) for f in pair)) for pair in d.interactions()]
    assert not cols & set(picked)
    assert len({c for c in picked} | {tuple(-v for v in c) for c in picked}) == 2 * len(picked)
    assert Design.from_dict(d.to_dict()) == d


def test_the_table_reaches_the_standard_resolutions():
    # BHH / NIST 5.3.3.4.7: the best 2^(k-p) for these runs; computed above from the runs, recalled here
    want = {(4, 8): 4, (5, 8): 3, (5, 16): 5, (6, 8): 3, (6, 16): 4, (6, 32): 6, (7, 8): 3, (7, 16): 4,
            (7, 32): 4, (7, 64): 7, (8, 16): 4, (8, 32): 4, (8, 64): 5, (8, 128): 8}
    got = {(len(d.factors), len(d.runs)): d.resolution for d in ALL if d.generators}
    assert got == want


@pytest.mark.parametrize("k, budget, runs, resolution", [
    (2, 16, 4, None), (3, 16, 8, None), (3, 1000, 8, None),
    (4, 32, 16, None), (4, 31, 8, 4), (4, 24, 8, 4),
    (5, 32, 16, 5), (5, 31, 8, 3),
    (6, 32, 16, 4), (6, 40, 16, 4), (6, 63, 16, 4), (6, 64, 32, 6), (6, 31, 8, 3), (6, 10_000, 32, 6),
    (7, 64, 64, 7), (7, 63, 16, 4),
    (8, 64, 64, 5), (8, 63, 16, 4), (8, 10_000, 64, 5),
])
def test_choose_takes_the_highest_resolution_up_to_five_whose_first_look_fits(k, budget, runs, resolution):
    d = choose(NAMES[:k], budget)
    assert (len(d.runs), d.resolution) == (runs, resolution)
    assert d.factors == NAMES[:k]
    assert len(d.runs) * design.first_blocks(d) <= budget


@pytest.mark.parametrize("k, budget, fifth_df, taken_df", [(6, 32, 10, 17), (6, 40, 10, 17), (6, 48, 10, 32),
                                                             (5, 40, 15, 15), (8, 64, 27, 27), (6, 64, 41, 41)])
def test_a_resolution_five_design_whose_budget_leaves_too_few_residual_df_gives_way_to_a_fourth(k, budget, fifth_df,
                                                                                               taken_df):
    """Six levers at 32 to 63 launches: one block of the 2^(6-1) leaves 10 residual df at its only look, two or
    three of the 2^(6-2) IV leave 17 or 32. Five levers have no resolution IV fraction to give way to; eight at 64
    and six at 64 have LAST_DF and more."""
    fifth = max((d for d in design.candidates(NAMES[:k]) if len(d.runs) * design.first_blocks(d) <= budget),
                key=lambda d: (min(d.resolution or 5, 5), -len(d.runs)))
    assert design.last_df(fifth, budget) == fifth_df
    taken = choose(NAMES[:k], budget)
    assert design.last_df(taken, budget) == taken_df
    assert (taken == fifth) == (fifth_df >= design.LAST_DF or k == 5)
    assert taken.resolution in (4, 5, 6)


@pytest.mark.parametrize("runs, k, blocks", [(4, 2, 4), (8, 3, 2), (16, 4, 2), (8, 4, 3), (32, 6, 1), (64, 8, 1)])
def test_a_first_look_waits_for_eight_residual_degrees_of_freedom(runs, k, blocks):
    d = next(c for c in design.candidates(NAMES[:k]) if len(c.runs) == runs)
    fitted = 1 + k + len(d.interactions())
    assert runs * blocks - (fitted + blocks - 1) >= design.MIN_DF
    assert runs * (blocks - 1) - (fitted + blocks - 2) < design.MIN_DF
    assert design.first_blocks(d) == blocks


@pytest.mark.parametrize("factors, budget, said", [
    (("amp",), 100, "a screen needs 2 to 8 levers, got 1 (amp)"),
    (NAMES + ("nine",), 10_000, "a screen needs 2 to 8 levers, got 9"),
    (("amp", "amp"), 100, "a screen's levers must differ, got amp, amp"),
    (NAMES[:4], 23, "a screen of 4 levers needs a budget of 24 launches at least (3 blocks of 8 runs before a first "
                    "look), got 23"),
    (NAMES[:8], 31, "a screen of 8 levers needs a budget of 32 launches at least (2 blocks of 16 runs before a "
                    "first look), got 31"),
])
def test_no_design_is_said_in_one_line(factors, budget, said):
    with pytest.raises(DesignError) as e:
        choose(factors, budget)
    assert said in str(e.value) and "\n" not in str(e.value)


def test_a_resolution_four_fraction_says_its_aliased_interactions():
    d = choose(NAMES[:4], 24)
    assert d.generators == ("D=ABC",)
    assert d.aliases()["amp×compile"] == ("tensorrt×option_a",)
    assert d.interactions() == (("amp", "compile"), ("amp", "tensorrt"), ("amp", "option_a"))
    assert d.text() == ("2^(4-1) resolution IV, 8 runs a block; D = ABC; amp = A, compile = B, tensorrt = C, "
                        "option_a = D; amp×compile = tensorrt×option_a; amp×tensorrt = compile×option_a; "
                        "amp×option_a = compile×tensorrt")
    full = choose(NAMES[:3], 16)
    assert full.text() == ("2^3 full factorial, 8 runs a block; every main effect and two-factor interaction "
                           "clear of the others")
    assert full.interactions() == (("amp", "compile"), ("amp", "tensorrt"), ("compile", "tensorrt"))


def test_a_block_order_is_seeded_and_covers_every_run_once():
    d = choose(NAMES[:5], 32)
    first = order(d, 1, 7)
    assert sorted(first) == list(range(16)) and order(d, 1, 7) == first
    assert order(d, 2, 7) != first or order(d, 3, 7) != first


@pytest.mark.parametrize("k", [6, 7, 8])
def test_a_resolution_four_fraction_folded_on_a_factor_frees_its_interactions_by_the_runs_alone(k):
    """Montgomery 8.6: the fold-over on one factor of a resolution IV fraction de-aliases that factor's two-factor
    interactions. Checked on the combined runs (both halves), as above, from the columns alone; the blocks alternate
    halves from the fold on, and the record's dict brings the folded design back."""
    plain = next(d for d in design.candidates(NAMES[:k]) if d.resolution == 4)
    assert any(len(a) > 0 for name, a in plain.aliases().items() if name.startswith("amp×"))
    f = design.folded(plain, "A", 3)
    assert len(f.runs) == 2 * len(plain.runs) and f.block_runs == len(plain.runs)
    from_runs = aliases_from_runs(f)
    assert {n: set(a) for n, a in f.aliases().items()} == from_runs
    assert all(not from_runs[f"amp×{other}"] for other in NAMES[1:k])
    assert f.resolution == resolution_from_runs(f) == 4  # the chains without amp stay aliased
    assert [order(f, b, 5) for b in (1, 2)] == [order(plain, b, 5) for b in (1, 2)]
    assert sorted(order(f, 3, 5)) == list(range(len(plain.runs), len(f.runs)))
    assert sorted(order(f, 4, 5)) == list(range(len(plain.runs))) and sorted(order(f, 5, 5)) == sorted(order(f, 3, 5))
    assert Design.from_dict(f.to_dict()) == f
    assert f.kind().endswith("16 runs a block, folded over on amp from block 3")
    with pytest.raises(DesignError):
        design.folded(f, "B", 4)
