"""optseq's core: plan, lever machine, store, statistics, runs, export. Never imports torch, textual or engine."""
