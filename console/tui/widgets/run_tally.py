"""The samples a run has brought so far, and the Run tab's one line about them."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from optseq.state.api import BASELINE, CANDIDATE


@dataclass
class Tally:
    """Samples seen so far in this run; written by the worker thread, read by the UI under `lock`."""

    count: int = 0
    arms: dict = field(default_factory=dict)
    """(pass, pair) -> the arms it has samples of: which pairs are complete."""
    last: dict | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, event: dict) -> None:
        with self.lock:
            self.count += 1
            if event.get("pair") is not None:
                self.arms.setdefault((event.get("run"), event.get("pair")), set()).add(event.get("arm"))
            self.last = event

    def complete(self) -> int:
        """Pairs with both arms in: what the progress line and the estimate's `over N pairs` count. A pair whose
        baseline alone has come is not one yet (`samples: 23 (11 pairs)`, not 12, beside `pair 11 of 18`).
        Samples of other arms (an experiment's configs) count their pairs as they come."""
        ab = {BASELINE, CANDIDATE}
        return sum(1 for arms in self.arms.values() if ab <= arms or not arms & ab)

    def text(self) -> str:
        with self.lock:
            if not self.count:
                return "samples: none yet"
            last = self.last or {}
            value = last.get("value")
            shown = f"{value:.4g}" if isinstance(value, (int, float)) else str(value)
            key = (last.get("run"), last.get("pair"))
            # the run's pairs in the order they began, counted from 1 as progress does (a sample's own index
            # starts again at 0 in each pass)
            pair = list(self.arms).index(key) + 1 if key in self.arms else last.get("pair")
            pairs = self.complete()
            return (f"samples: {self.count} ({pairs} pair{'s' * (pairs != 1)})  last: pair {pair} "
                    f"{last.get('arm')} {shown} {last.get('unit') or ''}").rstrip()
