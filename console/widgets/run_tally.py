"""The samples a run has brought so far, and the Run tab's one line about them."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class Tally:
    """Samples seen so far in this run; written by the worker thread, read by the UI under `lock`."""

    count: int = 0
    pairs: set = field(default_factory=set)
    last: dict | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, event: dict) -> None:
        with self.lock:
            self.count += 1
            if event.get("pair") is not None:
                self.pairs.add((event.get("run"), event.get("pair")))
            self.last = event

    def text(self) -> str:
        with self.lock:
            if not self.count:
                return "samples: none yet"
            last = self.last or {}
            value = last.get("value")
            shown = f"{value:.4g}" if isinstance(value, (int, float)) else str(value)
            pair = last.get("pair")
            pair = pair + 1 if isinstance(pair, int) else pair  # samples count pairs from 0, progress from 1
            pairs = len(self.pairs)
            return (f"samples: {self.count} ({pairs} pair{'s' * (pairs != 1)})  last: pair {pair} "
                    f"{last.get('arm')} {shown} {last.get('unit') or ''}").rstrip()
