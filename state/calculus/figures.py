"""The figures the calculus keeps: a speed-up lever's (S, q, share, C; its V, H and break-even V*) and a
planned experiment's hours (Work).

msgspec Structs, as the plan's classes (state/plan/model.py): made in C at import, where dataclasses compiled
their methods at every start of `status`."""
from __future__ import annotations

import msgspec


class LeverFigures(msgspec.Struct):
    """One speed-up lever's inputs (pending, or decided by optseq), and its V and H in the plan's order."""

    id: str
    kind: str
    state: str
    s: float | None = None
    s_source: str = "missing"
    """measured | prior | missing"""
    s_low: float | None = None
    s_high: float | None = None
    s_ci_size: bool = False
    """S was measured on the reference workload at CI size, not on the plan's workload."""
    n: int | None = None
    q: float | None = None
    q_source: str = "missing"
    """adopted | rejected | measured | prior | missing"""
    share: float = 1.0
    share_source: str = "default"
    effort_h: float = 0.0
    effort_source: str = "default"
    run_h: float = 0.0
    runs_counted: int = 0
    runs_unknown: int = 0
    v_h: float | None = None
    h: float | None = None
    h_low: float | None = None
    h_high: float | None = None
    v_star_h: float | None = None

    @property
    def f(self) -> float | None:
        return None if self.s is None else self.share * (1 - 1 / self.s)

    @property
    def a(self) -> float | None:
        return None if self.f is None or self.q is None else self.q * self.f

    @property
    def cost_h(self) -> float:
        return self.effort_h + self.run_h

    @property
    def straddles_one(self) -> bool:
        return self.s_low is not None and self.s_high is not None and self.s_low < 1 < self.s_high

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in self.__struct_fields__}
        out.update(cost_h=self.cost_h, straddles_one=self.straddles_one, f=self.f, a=self.a)
        return out


class Work(msgspec.Struct):
    """A planned experiment in hours: where it runs and which adoptions after it force a re-run."""

    id: str
    lever: str | None
    """Its experiment lever in the order, or None: after every pending lever."""
    run_h: float | None
    """Hours of one run on today's stack; None when the time per iteration is missing."""
    runs: int
    done: int
    """Runs already behind it (its experiment lever is decided): 0 or 1."""
    rerun_when: frozenset[str]

    @property
    def ahead_h(self) -> float:
        return (self.run_h or 0.0) * (self.runs - self.done)
