"""Two-level designs for a screen: which subsets of the levers' changes one block launches.

A full factorial for up to three levers; beyond, a regular fraction 2^(k-p) from a table of the standard
minimum-aberration generators (Box, Hunter & Hunter 2005, table 6.22; NIST/SEMATECH e-Handbook 5.3.3.4.7).
Only the generators come from the table: the defining relation, the resolution and every alias are computed
from them here, so a wrong table entry shows as a lower resolution, never as a claim (pyDOE3 1.6.2's
`fracfact_by_res(8, 5)` is a resolution IV design sold as V: nothing here takes a resolution on trust).
"""
from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

LETTERS = "ABCDEFGH"
MAX_FACTORS = len(LETTERS)
MIN_DF = 8
"""Residual degrees of freedom a first look needs: below it the t quantile at a look's alpha is so wide, and the
robust scale so rough, that the look spends its error for almost no chance to decide. One block of a large design
has them from the effects it does not fit (interactions of three levers and more, taken to be negligible); a small
one needs a second block to measure its error."""
LAST_DF = 16
"""Residual degrees of freedom a resolution V design should have at the last look its budget buys. Below them the
t quantile an interaction is tested at, its Bonferroni share of a look's alpha, stands far above the normal's (at
10, one block of the 2^(6-1): 3.54 against 2.79; at 16, 13-18% above it), and a stall's launch has the leverage
to hide from the robust fit: a resolution IV fraction of half the runs, whose blocks replicate it, has more where
the same budget buys two of them (the 2^(6-2)'s two blocks of 16: 17), and is taken instead."""

GENERATORS: dict[int, tuple[tuple[str, ...], ...]] = {
    # per k, the fractions by runs, fewest first; the full factorial is always a candidate too
    4: (("D=ABC",),),
    5: (("D=AB", "E=AC"), ("E=ABCD",)),
    6: (("D=AB", "E=AC", "F=BC"), ("E=ABC", "F=BCD"), ("F=ABCDE",)),
    7: (("D=AB", "E=AC", "F=BC", "G=ABC"), ("E=ABC", "F=BCD", "G=ACD"), ("F=ABCD", "G=ABDE"), ("G=ABCDEF",)),
    8: (("E=BCD", "F=ACD", "G=ABC", "H=ABD"), ("F=ABC", "G=ABD", "H=BCDE"), ("G=ABCD", "H=ABEF"),
        ("H=ABCDEFG",)),
}
ROMAN = {3: "III", 4: "IV", 5: "V", 6: "VI", 7: "VII", 8: "VIII"}
TIMES = "×"


class DesignError(ValueError):
    """A screen no design fits; str() is one line naming what is wrong."""


def _word(letters: str) -> frozenset[str]:
    return frozenset(letters)


def _product(a: frozenset[str], b: frozenset[str]) -> frozenset[str]:
    return a ^ b  # A·A = I in a two-level design


@dataclass(frozen=True)
class Design:
    """One replicate of a two-level design (one block), and what it can tell apart."""

    factors: tuple[str, ...]
    """Lever ids, in the order given: letters A, B, C, … in that order."""
    runs: tuple[tuple[int, ...], ...]
    """Per run, +1 (that lever's change applied) or -1 per factor."""
    generators: tuple[str, ...]
    """`D=ABC`, …; () for a full factorial."""
    resolution: int | None
    """None for a full factorial; else the shortest word of the defining relation, computed."""
    fold: str = ""
    """The letter of the factor the design is folded over on ("" for none): `runs` then holds the fraction and,
    after it, the same runs with that factor's sign reversed, one half a block."""
    fold_block: int = 0
    """The first block that runs the folded half; blocks from it alternate folded, plain, folded, …"""

    @cached_property
    def defining(self) -> tuple[frozenset[str], ...]:
        """The words of the defining relation (I excluded): every product of the generators' words; folded over on
        a factor, those without it (a word holding it changes sign between the halves: it is confounded with the
        blocks, which the fit's block terms absorb, and no longer aliases anything)."""
        words = [_word(g.replace("=", "")) for g in self.generators]
        group = set()
        for r in range(1, len(words) + 1):
            for combo in itertools.combinations(words, r):
                w: frozenset[str] = frozenset()
                for x in combo:
                    w = _product(w, x)
                group.add(w)
        return tuple(sorted((w for w in group if not self.fold or self.fold not in w),
                            key=lambda w: (len(w), sorted(w))))

    @property
    def block_runs(self) -> int:
        """Runs one block launches: the whole design, or one half of a folded one."""
        return len(self.runs) // 2 if self.fold else len(self.runs)

    def block_indices(self, block: int) -> tuple[int, ...]:
        """The run indices block `block` (1-based) launches."""
        n = self.block_runs
        folded = bool(self.fold) and block >= self.fold_block and (block - self.fold_block) % 2 == 0
        return tuple(range(n, 2 * n)) if folded else tuple(range(n))

    def letter(self, factor: str) -> str:
        return LETTERS[self.factors.index(factor)]

    def name(self, word: frozenset[str]) -> str:
        """`amp` or `amp×compile`: an effect's word in the levers' names, in factor order."""
        return TIMES.join(self.factors[LETTERS.index(c)] for c in sorted(word))

    def _effects(self) -> list[frozenset[str]]:
        k = len(self.factors)
        return ([frozenset(LETTERS[i]) for i in range(k)]
                + [frozenset((LETTERS[i], LETTERS[j])) for i, j in itertools.combinations(range(k), 2)])

    def _aliases_of(self, effect: frozenset[str]) -> list[frozenset[str]]:
        return sorted((_product(effect, w) for w in self.defining if len(_product(effect, w)) <= 2),
                      key=lambda w: (len(w), sorted(w)))

    def aliases(self) -> dict[str, tuple[str, ...]]:
        """Each main effect and two-factor interaction -> the others of order <= 2 it cannot be told from."""
        return {self.name(e): tuple(self.name(a) for a in self._aliases_of(e)) for e in self._effects()}

    def interactions(self) -> tuple[tuple[str, str], ...]:
        """The two-factor interactions the fit estimates: those clear of every main effect, the first of each
        chain of aliased ones standing for its chain (its aliases are said beside it)."""
        chosen: list[tuple[str, str]] = []
        taken: set[frozenset[str]] = set()
        for e in self._effects()[len(self.factors):]:
            others = self._aliases_of(e)
            if e in taken or any(len(a) == 1 for a in others):
                continue
            taken.update(others)
            first, second = sorted(e)  # the effects past the mains are the two-factor ones
            chosen.append((self.factors[LETTERS.index(first)], self.factors[LETTERS.index(second)]))
        return tuple(chosen)

    def column(self, levers: Sequence[str]) -> tuple[int, ...]:
        """The ±1 column of an effect over the runs: the product of its levers' columns."""
        idx = [self.factors.index(f) for f in levers]
        out = []
        for run in self.runs:
            v = 1
            for i in idx:
                v *= run[i]
            out.append(v)
        return tuple(out)

    def kind(self) -> str:
        k, n = len(self.factors), self.block_runs
        folded = (f", folded over on {self.factors[LETTERS.index(self.fold)]} from block {self.fold_block}"
                  if self.fold else "")
        if not self.generators:
            return f"2^{k} full factorial, {n} runs a block"
        roman = ROMAN.get(self.resolution, self.resolution) if self.resolution is not None else "(none left)"
        return f"2^({k}-{len(self.generators)}) resolution {roman}, {n} runs a block{folded}"

    def text(self) -> str:
        """`2^(4-1) resolution IV, 8 runs a block; D = ABC; amp×compile = tensorrt×option_a, …`"""
        parts = [self.kind()]
        if self.generators:
            parts.append(", ".join(g.replace("=", " = ") for g in self.generators))
            parts.append(", ".join(f"{f} = {self.letter(f)}" for f in self.factors))
        chains: list[tuple[str, ...]] = []
        for name, others in self.aliases().items():
            if others and (name,) + others not in chains and not any(name in c for c in chains):
                chains.append((name,) + others)
        parts.append("; ".join(" = ".join(c) for c in chains) if chains else "every main effect and two-factor "
                     "interaction clear of the others")
        return "; ".join(parts)

    def to_dict(self) -> dict:
        return {"factors": list(self.factors), "runs": [list(r) for r in self.runs],
                "generators": list(self.generators), "resolution": self.resolution,
                **({"fold": self.fold, "fold_block": self.fold_block} if self.fold else {})}

    @classmethod
    def from_dict(cls, d: dict) -> Design:
        plain = build(tuple(d["factors"]), tuple(d["generators"]))
        return folded(plain, str(d["fold"]), int(d["fold_block"])) if d.get("fold") else plain


def _resolution(generators: Sequence[str], k: int) -> int | None:
    if not generators:
        return None
    probe = Design(tuple(LETTERS[:k]), (), tuple(generators), None)
    return min(len(w) for w in probe.defining)


def build(factors: Sequence[str], generators: Sequence[str] = ()) -> Design:
    """The design over these factors with these generators: the base factorial's runs in standard order (A
    alternating fastest), each generated column the product of its word's base columns."""
    factors = tuple(factors)
    k, p = len(factors), len(generators)
    base = k - p
    gens = {}
    for g in generators:
        head, _, word = g.partition("=")
        if head not in LETTERS[base:k] or not word or any(c not in LETTERS[:base] for c in word):
            raise DesignError(f"generator {g!r} is not a product of the base factors {LETTERS[:base]}")
        gens[head] = word
    runs = []
    for i in range(2 ** base):
        levels = {LETTERS[j]: (1 if (i >> j) & 1 else -1) for j in range(base)}
        for head, word in gens.items():
            v = 1
            for c in word:
                v *= levels[c]
            levels[head] = v
        runs.append(tuple(levels[LETTERS[j]] for j in range(k)))
    return Design(factors, tuple(runs), tuple(generators), _resolution(generators, k))


def folded(design: Design, letter: str, from_block: int) -> Design:
    """`design` folded over on one factor from block `from_block` on: the fraction's runs with that factor's sign
    reversed become the other half. Folding a resolution IV fraction on a factor frees that factor's two-factor
    interactions from their alias chains (Montgomery, *Design and Analysis of Experiments*, 8.6; Box, Hunter &
    Hunter 6.9): each is then estimated apart, where the fraction alone measured only its chain's sum."""
    if design.fold or not design.generators:
        raise DesignError(f"{design.kind()}: only a fraction not yet folded can be folded over")
    if letter not in LETTERS[:len(design.factors)] or from_block < 2:
        raise DesignError(f"cannot fold {design.kind()} over on {letter!r} from block {from_block}")
    i = LETTERS.index(letter)
    mirror = tuple(tuple(-x if j == i else x for j, x in enumerate(run)) for run in design.runs)
    probe = Design(design.factors, (), design.generators, None, letter, from_block)
    resolution = min((len(w) for w in probe.defining), default=None)
    return Design(design.factors, design.runs + mirror, design.generators, resolution, letter, from_block)


def last_df(design: Design, budget: int) -> int:
    """Residual degrees of freedom of the last look `budget` launches buy: every block it holds, at least the
    first look's."""
    blocks = max(budget // design.block_runs, first_blocks(design))
    fitted = 1 + len(design.factors) + len(design.interactions()) + blocks - 1
    return design.block_runs * blocks - fitted


def first_blocks(design: Design) -> int:
    """Blocks the first look needs: enough runs past the fitted terms (intercept, blocks, effects) for MIN_DF."""
    fitted = 1 + len(design.factors) + len(design.interactions())
    b = 1
    while design.block_runs * b - (fitted + b - 1) < MIN_DF:
        b += 1
    return b


def candidates(factors: Sequence[str]) -> list[Design]:
    """Every design a screen of these factors may use, fewest runs first, the full factorial last."""
    k = len(factors)
    return [build(factors, g) for g in GENERATORS.get(k, ())] + [build(factors)]


def choose(factors: Sequence[str], budget: int) -> Design:
    """A full factorial for k <= 3; else the design of the highest resolution (up to V: beyond it nothing the fit
    estimates gains) whose first look (first_blocks) fits `budget` launches, fewest runs among equals; but where
    the budget leaves that design's last look fewer than LAST_DF residual degrees of freedom, a resolution IV
    fraction whose blocks leave more (six levers at 32 to 63 launches: the 2^(6-2) in blocks of 16)."""
    factors = tuple(factors)
    k = len(factors)
    if k < 2 or k > MAX_FACTORS:
        raise DesignError(f"a screen needs 2 to {MAX_FACTORS} levers, got {k} ({', '.join(factors) or 'none'})")
    if len(set(factors)) != k:
        raise DesignError(f"a screen's levers must differ, got {', '.join(factors)}")
    fits = [d for d in candidates(factors) if len(d.runs) * first_blocks(d) <= budget]
    if not fits:
        least = min(candidates(factors), key=lambda d: len(d.runs) * first_blocks(d))
        n = first_blocks(least)
        raise DesignError(f"a screen of {k} levers needs a budget of {len(least.runs) * n} launches at least "
                          f"({n} block{'s' * (n != 1)} of {len(least.runs)} runs before a first look), got {budget}")

    def worth(d: Design) -> int:
        return min(5 if d.resolution is None else d.resolution, 5)

    best = max(worth(d) for d in fits)
    pick = min((d for d in fits if worth(d) == best), key=lambda d: len(d.runs))
    if best == 5 and last_df(pick, budget) < LAST_DF:
        fourth = [d for d in fits if worth(d) == 4 and last_df(d, budget) > last_df(pick, budget)]
        if fourth:
            return min(fourth, key=lambda d: len(d.runs))
    return pick


def order(design: Design, block: int, seed: int) -> tuple[int, ...]:
    """One block's run indices in a seeded random order (the same seed and block give the same order)."""
    idx = list(design.block_indices(block))
    random.Random(f"{seed}:{block}:{len(idx)}").shuffle(idx)
    return tuple(idx)
