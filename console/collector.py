"""The cyclic garbage collector around one optseq command (console/cli.py's main).

Loading optseq's modules, and textual's for the console, makes many objects and next to no cyclic garbage,
yet the collector went over them again and again while they loaded, and once more at exit: about a fifth of
`optseq status`'s time. So a command loads and runs with it off. Before a long-lived command (the console,
--run, serve, check) turns it back on, what exists is frozen (left out of every later collection, as Python's
documentation advises for objects made at start-up); a short one freezes at its end, so that exit is quick.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager

_was_on = True


@contextmanager
def quiet():
    """The collector off for the command; on again after it as it was found (what exists then stays frozen)."""
    global _was_on
    _was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if _was_on:
            gc.enable()


def collecting() -> None:
    """From here the command runs long (and makes garbage): start-up objects frozen, the collector on."""
    gc.freeze()
    if _was_on:
        gc.enable()
