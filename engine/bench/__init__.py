"""Bench commands: `python -m engine.bench LEVER`, each speaking the run protocol."""
