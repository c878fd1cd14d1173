"""The shapes the lever machine reads records in: a stored record, a derived event, a said, and a record's part
that may be missing or of an older shape."""
from __future__ import annotations

from typing import Any

from optseq.state.record_types import part

Record = dict[str, Any]
"""A stored record as the store gives it out (a run, a decision, an event, a fact, a criterion)."""
Derived = dict[str, Any]
"""A derived event (`stale`, `superseded`): what a move made, for the store's history."""
Said = dict[str, Any]
"""A reason as lifecycle/words says it (said.py's shape): its English is text(said)."""


__all__ = ["Record", "Derived", "Said", "part"]
