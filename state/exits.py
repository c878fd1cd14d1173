"""optseq's exit codes: one table for every command, each number meaning one thing wherever it comes from
(docs/exit-codes.md says them all, the README the short table). On the floor: a run's report (state/runs) says the
code its end gives, and the CLI returns it."""
from __future__ import annotations

import enum


class Exit(enum.IntEnum):
    OK = 0
    """Done: the runs ran (whatever their rule decided), a compare's HEAD is not slower, a watch's gains hold."""
    RUN_FAILED = 1
    """A run failed: a lever's, a check's or a compare's (a checkout, setup or bench that failed, a timeout), or one
    cancelled by hand. Before issue 41 a compare said this with 4, and 1 meant `slower` for it."""
    BAD_INPUT = 2
    """Bad input, refused in one line with nothing stored changed: a flag, a plan, a lever's name, a stored record of
    the wrong shape (and `doctor`'s verdict on a damaged store); argparse's own refusals too."""
    NOTHING = 3
    """Nothing to run (no lever ready, nothing stale, nothing to watch), or what was asked is unavailable here."""
    SYNC_REFUSED = 4
    """`optseq sync` was refused: a damaged or rewritten segment, a push the remote refused (1 before issue 41)."""
    GUARD_FAILED = 5
    """A compare's HEAD broke a guard (a checksum that changed)."""
    ERODED = 6
    """`--run watch` found an adopted gain eroded."""
    SLOWER = 7
    """A compare found HEAD slower than BASE by more than the tolerance (1 before issue 41)."""
    INCONCLUSIVE = 8
    """A compare spent its budget without a verdict (3 before issue 41, which means nothing to run)."""
    HANGUP = 129
    """SIGHUP (128 + 1) cancelled the run under way: it is recorded `cancelled`, its processes stopped first."""
    INTERRUPTED = 130
    """Ctrl-C (128 + SIGINT), as a shell reports it; the run it cancelled is still recorded."""
    TERMINATED = 143
    """SIGTERM (128 + 15), a CI job cancelled."""

