"""A parallel group run on the Run tab: a row per lever (pairs, estimate, status) and how the group ended."""
from __future__ import annotations

import threading
from dataclasses import dataclass

from optseq.console.words.figures import ratio
from optseq.state.api import RunProgress


class GroupRows:
    """A parallel group's runs: lever → done, total, estimate, status; written by run threads under `lock`."""

    def __init__(self) -> None:
        self.rows: dict[str, dict] = {}
        self.lock = threading.Lock()

    def clear(self) -> None:
        with self.lock:
            self.rows = {}

    def running(self) -> set[str]:
        with self.lock:
            return {k for k, row in self.rows.items() if row["status"] == "running"}

    def started(self, lever_id: str, progress: RunProgress) -> None:
        with self.lock:
            self.rows[lever_id] = {"done": 0, "total": 0, "estimate": None, "status": "running",
                                   "progress": progress}

    def event(self, lever_id: str, event: dict, tally) -> None:
        """One event of the lever's run; its samples go to the panel's `tally` as well."""
        kind = event.get("event")
        with self.lock:
            row = self.rows[lever_id]
            counted = row["progress"]  # per lever, over all its passes, as a single run's bar
            if kind == "progress":
                counted.progress(event.get("done"), event.get("total"))
                row["done"], row["total"] = counted.done, counted.total
            elif kind == "estimate":
                row["estimate"] = event.get("estimate")
            elif kind == "sample":
                counted.sample(event)
                tally.add(event)

    def landed(self, landed) -> None:
        with self.lock:
            row = self.rows[landed.lever]
            report = landed.report
            row["status"] = report.status if report else "refused"
            row["verdict"] = (report.decision or report.verdict) if report else None

    def snapshot(self) -> dict[str, dict]:
        with self.lock:
            return {k: dict(v) for k, v in self.rows.items()}


def rows_text(rows: dict[str, dict]) -> str:
    lines = []
    for lever_id, row in rows.items():
        estimate = f"  {ratio(row['estimate'], 3)}×" if isinstance(row.get("estimate"), (int, float)) else ""
        pairs = f"{row['done']:g}/{row['total']:g} pairs" if row["total"] else "starting"
        end = f" → {row['verdict']}" if row.get("verdict") else ""
        lines.append(f"{lever_id}: {row['status']}  {pairs}{estimate}{end}")
    return "\n".join(lines)


@dataclass
class GroupReport:
    """How a parallel group ended, in the shape the screen reads from a single run's report."""

    reports: list
    rows: dict

    @property
    def status(self) -> str:
        return "succeeded" if self.reports and all(r.status == "succeeded" for r in self.reports) else (
            "failed" if self.reports else "nothing ran")

    @property
    def run_id(self) -> str:
        return ", ".join(f"#{r.run_id}" for r in self.reports)

    @property
    def message(self) -> str:
        if not self.reports:
            return "no lever of the group could run"
        return "; ".join(f"{r.lever} {r.decision or r.verdict or r.status}" for r in self.reports)
