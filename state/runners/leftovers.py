"""What a launch left running, as the run says it: the line as each launch ends, the run's note, the record.

The processes themselves are found, stopped (SIGTERM, SIGKILL after a grace) and reaped by the launch's own shim
(shim.py), the child subreaper of that launch alone: whatever comes back to it is its lever's, exactly.
"""
from __future__ import annotations

import os
from typing import Any

from optseq.state.text import terminal_safe

SHOWN = 8
"""Leftovers named on a launch's line (its warning, its log); the rest are counted."""
NOTED = 2
"""Leftovers named in the run's note (the runs table); the record names each, up to KEPT."""
KEPT = 200
"""Leftovers kept on a run's record (`leftovers`); each launch's log names its own."""


def said(lead: int, stopped: list[tuple[int, str]]) -> str:
    """`stopped 2 processes left by launch 41 outside its group: pid 57 (python d.py), pid 58 (sleep 9)`."""
    shown = ", ".join(f"pid {pid} ({command_text(cmd)})" for pid, cmd in stopped[:SHOWN])
    more = f", and {len(stopped) - SHOWN} more" if len(stopped) > SHOWN else ""
    n = len(stopped)
    return f"stopped {n} process{'es' * (n != 1)} left by launch {lead} outside its group: {shown}{more}"


def run_line(left: list[dict[str, Any]]) -> str:
    """A run's note on what its launches left (the runs table's last column): `stopped 12 processes its launches
    left running: pid 57 (python d.py) in pass 1, pid 58 (sleep 9) in pass 1, and 10 more`."""
    shown = ", ".join(f"pid {p.get('pid')} ({command_text(str(p.get('cmd') or ''), 40)})"
                      + (f" in pass {p['pass']}" if p.get("pass") is not None else "") for p in left[:NOTED])
    more = f", and {len(left) - NOTED} more" if len(left) > NOTED else ""
    n = len(left)
    return f"stopped {n} process{'es' * (n != 1)} its launches left running: {shown}{more}"


def command_text(cmd: str, width: int = 80) -> str:
    """A leftover's command line as a run's line shows it: its program's name, not path, then its arguments; one
    line, fit for a terminal, `width` characters at most."""
    words = terminal_safe(cmd).split()
    text = " ".join([os.path.basename(words[0]) or words[0], *words[1:]]) if words else "?"
    return text if len(text) <= width else text[:width - 1] + "…"
