"""A screen: two-level designs over several levers, their fit, and the judge between blocks."""
