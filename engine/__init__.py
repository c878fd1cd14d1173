"""The reference workload: a real self-play trainer whose every lever is a real toggle.

Talks to optseq only through the run protocol (engine.bench.protocol); never imports state or console.
"""
