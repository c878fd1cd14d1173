"""Runs in flight: kept in the hot state, interrupted when their process died, detached when a cluster runs them.

A run is in flight from its first record until a status in FINAL. Its row in the hot file's `active`
table (run id, lever, pid, pgid, a cluster's submission id) is all that recovery reads, so opening a
store never reads the runs journal to find the runs a dead optseq left behind.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tinydb import Query

from optseq.state.store.layout import ACTIVE
from optseq.state.store.locks import pid_alive
from optseq.state.store.records import utc_now

FINAL = ("succeeded", "failed", "cancelled", "interrupted", "unavailable", "timeout")
"""Run statuses that end a run: such a run is no longer in flight."""


class RunsInFlight:
    """The Store's runs in flight, mixed into `Store` (it uses the store's `_db`, `_mutex`, `batch` and
    `update`)."""

    def active_runs(self) -> list[dict[str, Any]]:
        """Runs in flight: {run, lever, pid}."""
        with self._mutex:
            return [dict(d) for d in self._db.table(ACTIVE).all()]

    def recover_interrupted(self, is_alive: Callable[[Any], bool] = pid_alive) -> list[dict[str, Any]]:
        """Runs in flight whose process is gone: "interrupted" when they ran here (returned with their pgid),
        "detached" when they run on a cluster under a submission id (they go on there, and stay `running`
        until a later optseq re-attaches to them). A run of no lever (a compare) is never re-attached, since
        `--run LEVER` is what re-attaches: it is "interrupted" wherever it ran (returned with its submission id,
        whose job the caller may stop)."""
        with self._mutex:
            self._check_writable("runs")
            ended = utc_now()
            with self.batch():
                # under the lock now; a lever-less run an older optseq left detached ends here too
                gone = [a for a in self.active_runs() if orphaned(a, is_alive) or (a.get("detached") and
                                                                                   not a.get("lever"))]
                out = []
                for a in gone:
                    found = {"id": a["run"], "lever": a.get("lever"), "pid": a.get("pid"), "pgid": a.get("pgid")}
                    if a.get("submission_id") and not a.get("lever"):
                        note = (f"optseq (pid {a.get('pid')}) stopped while this run's job {a['submission_id']} ran "
                                "on the cluster; a run of no lever (a compare) cannot be re-attached, so it ends "
                                "here, and its job may still be running there")
                        self.update("runs", a["run"], {"status": "interrupted", "ended": ended, "note": note})
                        out.append({**found, "status": "interrupted", "submission_id": a["submission_id"]})
                        continue
                    if a.get("submission_id"):
                        note = (f"optseq (pid {a.get('pid')}) stopped while this run's job "
                                f"{a['submission_id']} ran on the cluster; the next optseq --run re-attaches to it")
                        self.update("runs", a["run"], {"note": note})
                        self._db.table(ACTIVE).update({"detached": True}, Query().run == a["run"])
                        out.append({**found, "status": "detached", "submission_id": a["submission_id"]})
                        continue
                    note = f"optseq stopped while this run was running; its process (pid {a.get('pid')}) is gone"
                    self.update("runs", a["run"], {"status": "interrupted", "ended": ended, "note": note})
                    out.append({**found, "status": "interrupted"})
                return out

    def detached_runs(self) -> list[dict[str, Any]]:
        """Runs going on on a cluster that no optseq follows now: {run, lever, submission_id}."""
        return [a for a in self.active_runs() if a.get("detached")]

    def _track(self, table: str, doc_id: int, fields: dict[str, Any], new: bool = False) -> None:
        """Runs in flight are kept in the hot state, so recovery never reads the runs journal."""
        if table != "runs":
            return
        from tinydb import Query

        active, q = self._db.table(ACTIVE), Query().run == doc_id
        status = fields.get("status")
        if status in FINAL:
            active.remove(q)
        elif new and status:
            active.insert({"run": doc_id, "lever": fields.get("lever"),
                           **{k: fields[k] for k in ("pid", "pgid") if k in fields}})
        elif not new and any(k in fields for k in ("pid", "pgid", "submission_id")):
            changes = {k: fields[k] for k in ("pid", "pgid", "submission_id") if k in fields}
            if "pid" in fields:  # a process follows it again
                changes["detached"] = False
            active.update(changes, q)


def orphaned(active: Mapping[str, Any], is_alive: Callable[[Any], bool]) -> bool:
    """A run in flight whose process is gone, and that nobody has recovered yet."""
    return not active.get("detached") and not is_alive(active.get("pid"))
