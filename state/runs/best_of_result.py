"""The result of a best-of-N choice: per-config figures (ConfigRow) and what the comparison says (BestOf)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OUTCOMES = ("winner", "best_set", "inconclusive")


@dataclass(frozen=True)
class ConfigRow:
    """One config of a best-of-N comparison; ratios are on the metric's scale, > 1 meaning worse."""

    config: str
    n: int
    """Usable values of the choose metric (one per block)."""
    median: float | None
    """Median of those values, in the metric's unit."""
    cost: float | None = None
    """Median cost (the median of the per-block medians of the rule's cost metric); None without one."""
    ratio: float | None = None
    """exp(D_i): this config against the best of the others over the complete blocks; < 1 for the apparent best."""
    low: float | None = None
    high: float | None = None
    """Hsu's constrained MCB interval for the ratio to the best of the others, 95% simultaneous."""
    in_best_set: bool | None = None
    """Not shown worse than the best by more than the margin; None when not compared."""
    excluded: str | None = None
    """Why the config was left out before the comparison (a guard, its cost); None if it took part."""
    p_best: float | None = None
    """Bootstrap share of resampled blocks in which it had the best mean: shown, never used to decide."""

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "median": self.median, "cost": self.cost, "ratio": self.ratio, "low": self.low,
                "high": self.high, "in_best_set": self.in_best_set, "excluded": self.excluded,
                "p_best": self.p_best}


@dataclass(frozen=True)
class BestOf:
    """What the best-of-N comparison says about one run's samples."""

    outcome: str
    """winner | best_set | inconclusive."""
    chosen: str | None
    reason: str
    """One readable line with the figures that decided it."""
    metric: str
    blocks: int
    """Complete blocks compared."""
    blocks_needed: int | None
    """Inconclusive: an estimate of the further blocks that would decide; None once decided or when more
    blocks cannot help (no config qualifies)."""
    rows: tuple[ConfigRow, ...]
    """Every config seen, in the order it first appeared."""
    incomplete: int = 0
    """Blocks left out because an eligible config has no usable value in them."""
    margin: float = 0.0
    critical_value: float | None = None
    """d: the one-sided Dunnett/MCB quantile used."""
    df: int | None = None
    sd: float | None = None
    """Residual standard deviation on the log scale, block effects removed."""
    allowance: float | None = None
    """h = d·sd·√(2/blocks) on the log scale: the MCB half-width."""
    unit: str = ""
    warnings: tuple[str, ...] = ()
    said: dict | None = field(default=None, compare=False)
    """`reason` as runs/words says it, for the export's language."""

    def row(self, config: str) -> ConfigRow | None:
        return next((r for r in self.rows if r.config == config), None)

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "chosen": self.chosen, "reason": self.reason, "metric": self.metric,
                "unit": self.unit, "blocks": self.blocks, "incomplete": self.incomplete,
                "blocks_needed": self.blocks_needed, "margin": self.margin,
                "critical_value": self.critical_value, "df": self.df, "sd": self.sd, "allowance": self.allowance,
                "configs": {r.config: r.to_dict() for r in self.rows}, "warnings": list(self.warnings),
                "said": self.said}
