"""The reference workload: a real self-play trainer whose every lever is a real toggle.

Talks to optseq only through the run protocol (optseq.engine.kit, the lever kit); never imports state or console.
"""
