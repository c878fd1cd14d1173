"""Bench commands: `python -m optseq.engine.bench LEVER`, each speaking the run protocol."""
