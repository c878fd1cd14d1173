"""What the console reads from a run's report (state's RunReport and ScreenReport, the console's GroupReport): the
console says how a run ended from these three and nothing else of it."""
from __future__ import annotations

from typing import Protocol


class Reported(Protocol):
    @property
    def run_id(self) -> int | str:
        """The run's id (`#3, #4` for a parallel group's)."""
        ...

    @property
    def status(self) -> str: ...

    @property
    def message(self) -> str: ...
