"""The Ray runner: each pass of a lever run is one Ray job (the Jobs API), holding both arms.

One job runs the lever's whole command, so every pair is measured on one node and one GPU. The job's
code is expected on the nodes already (an image or a shared file system): the job runs the same command
line, in the same working directory, with the run's OPTSEQ_* variables in its runtime env. A branch lever's
or a compare's two commits, and the commits a screen of branch levers launches, are the exception: they travel
with each job as its working directory (ray_trees.py), and the job starts there.

Output. `tail_job_logs` replays the log from the start on every attach and can end before the last lines
arrive, so what it yields is fed by character offset (a replay feeds nothing twice), and `get_job_logs` is
the record at the end: whatever the stream missed is fed from it before the run is judged.

Statuses. The lever's own non-zero exit is `failed`, as locally. A job lost to the cluster (its supervisor
died with its node) is `interrupted`, never the lever's failure. A request no live node can satisfy is
`unavailable` before anything is submitted, rather than a job pending forever.
"""
from __future__ import annotations

import asyncio
import logging
import os
import shlex
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from optseq.state.runners.interface import RunOutcome, RunSpec, log_file
from optseq.state.plan.runner import RunnerConfig
from optseq.state.runners.interface import RunnerError
from optseq.state.runners.protocol import Transcript

if TYPE_CHECKING:
    from ray.job_submission import JobSubmissionClient  # Ray is imported where a cluster is reached

    from optseq.state.runners.ray_trees import Shipment  # imported where a pass ships, not with the runner

BENCH_RESOURCE = "optseq_bench"
"""The custom resource every node offers once (`ray start --resources='{"optseq_bench": 1}'`): one bench per node."""
POLL_S = 0.5
STREAM_DRAIN_S = 2.0
"""After the job ends, how long the log stream may take to deliver its last chunk before the full log is read."""
AGENT_WAIT_S = 60.0
"""How long a submission waits for a just-started cluster's job agents."""
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
LOST = ("JOB_SUPERVISOR_ACTOR_DIED", "JOB_SUPERVISOR_ACTOR_START_FAILURE", "JOB_SUPERVISOR_ACTOR_START_TIMEOUT",
        "JOB_SUPERVISOR_ACTOR_UNSCHEDULABLE", "JOB_SUPERVISOR_ACTOR_UNKNOWN_FAILURE")
"""Ray error types that mean the cluster lost the job, not that the lever failed."""


class RayRunner:
    name = "ray"

    def __init__(self, config: RunnerConfig):
        self.config = config
        self._client: JobSubmissionClient | None = None
        self._lock = threading.Lock()

    def client(self):
        with self._lock:
            if self._client is None:
                try:
                    from ray.job_submission import JobSubmissionClient
                except ImportError:
                    raise RunnerError("the ray runner needs Ray here: pip install 'ray[default]>=2.9' "
                                      "(the ray extra)") from None
                # its INFO lines on uploading a working directory would land on optseq's stderr: the pass's log
                # says what a job carries
                logging.getLogger("ray.dashboard.modules.dashboard_sdk").setLevel(logging.WARNING)
                try:
                    self._client = JobSubmissionClient(self.config.address)
                except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError by case
                    raise RunnerError(f"cannot reach the Ray cluster at {self.config.address}: "
                                      f"{one_line(exc)}") from None
            return self._client

    def launch(self, spec: RunSpec, *, run_id: int, attempt: int, resources=None, tag: str = "",
               attach: bool = False) -> RayLaunch:
        """The pass's job; with `attach`, the job a gone optseq submitted, followed again from its start."""
        return RayLaunch(self, spec, submission_id(tag, run_id, attempt), self.request(resources or {}),
                         attach=attach)

    def request(self, resources: dict) -> dict:
        """What the job asks the cluster for: whole GPUs, CPUs, and the one-bench-per-node slot."""
        custom = {BENCH_RESOURCE: 1} if self.config.one_per_node else {}
        return {"entrypoint_num_gpus": int(resources.get("gpus", 0)),
                "entrypoint_num_cpus": int(resources.get("cpus", 0)), "entrypoint_resources": custom}

    def infeasible(self, request: dict) -> str | None:
        """Why no live node could ever run this job, or None. A node busy now is fine: the job waits for it."""
        need = {"GPU": request["entrypoint_num_gpus"], "CPU": request["entrypoint_num_cpus"],
                **request["entrypoint_resources"]}
        need = {k: v for k, v in need.items() if v}
        if not need:
            return None
        nodes = self.nodes()
        if any(all(node.get(k, 0) >= v for k, v in need.items()) for node in nodes):
            return None
        asked = ", ".join(f"{k} {v:g}" for k, v in need.items())
        hint = (f"; start each node with ray start --resources='{{\"{BENCH_RESOURCE}\": 1}}', or set "
                f"one_per_node = false in the plan's [runner]") if BENCH_RESOURCE in need and not any(
            BENCH_RESOURCE in node for node in nodes) else ""
        return f"no node of the Ray cluster at {self.config.address} offers {asked} ({len(nodes)} live node" \
               f"{'s' * (len(nodes) != 1)}){hint}"

    def nodes(self) -> list[dict]:
        """Each live node's total resources, from the dashboard's state API."""
        try:
            reply = self.client()._do_request("GET", "/api/v0/nodes?limit=10000")
            rows = reply.json()["data"]["result"]["result"]
        except RunnerError:
            raise
        except Exception as exc:
            raise RunnerError(f"cannot list the nodes of the Ray cluster at {self.config.address}: "
                              f"{one_line(exc)}") from None
        return [dict(r.get("resources_total") or {}) for r in rows if r.get("state") == "ALIVE"]


def cancel_marker(run_dir: Path, sid: str) -> Path:
    """The file that makes job `sid` exit before its command should a node start it after all."""
    return run_dir / f"{sid}.cancelled"


def submission_id(tag: str, run_id: int, attempt: int) -> str:
    """Unique per store, run and pass; the same again when optseq re-attaches to it."""
    return f"optseq-{tag or 'run'}-{run_id}-{attempt}"


class RayLaunch:
    """One pass as one Ray job. `cancel` may come from any thread."""

    def __init__(self, runner: RayRunner, spec: RunSpec, sid: str, request: dict, attach: bool = False):
        self.runner, self.spec, self.sid, self.request = runner, spec, sid, request
        self.attach = attach
        self._cancelled = False
        self._fed = 0
        """Characters of the job's log fed so far."""
        self.shipment: Shipment | None = None
        """The commits this pass's job carries, or None."""

    def cancel(self) -> None:
        self._cancelled = True

    def entrypoint(self) -> str:
        argv = list(self.spec.argv)
        python = self.runner.config.python or sys.executable
        if argv[0] == "python":
            argv[0] = python
        cwd = str(Path(self.spec.cwd).resolve()) if self.spec.cwd else os.getcwd()
        # Ray queues a stop behind the start of a job still waiting for a node, so a job cancelled while
        # pending would start later: its marker (on the shared file system) makes it exit before the command
        marker = shlex.quote(str(self.cancel_marker()))
        # a job carrying its commits starts in them (its unpacked working directory), not in this machine's cwd
        go = f"exec {shlex.join(argv)}" if self.shipment else f"cd {shlex.quote(cwd)} && exec {shlex.join(argv)}"
        # the node says which testbed measures (an env event, state/runs/testbed.py); a node without optseq says
        # nothing, and the run is marked as carrying the launcher's
        node = f"{shlex.quote(python)} -m optseq.state.runs.testbed 2>/dev/null"
        return f"if [ -e {marker} ]; then echo 'optseq: cancelled while pending; not started'; exit 0; fi; {node}; {go}"

    def cancel_marker(self) -> Path:
        return cancel_marker(Path(self.spec.log_path).parent if self.spec.log_path else Path(os.getcwd()), self.sid)

    def env(self) -> dict[str, str]:
        # the supervisor reads the grace period from its own environment, which is the job's runtime env
        forwarded = {k: os.environ[k] for k in self.runner.config.forward_env if k in os.environ}
        shipped: dict[str, str] = {"OPTSEQ_ARMS": self.shipment.arms} if self.shipment else {}
        return {"PYTHONUNBUFFERED": "1", **forwarded, **dict(self.spec.env), **shipped,
                "RAY_JOB_STOP_WAIT_TIME_S": str(max(1, round(self.spec.grace_s)))}

    def runtime_env(self) -> dict:
        shipped: dict[str, str] = {"working_dir": str(self.shipment.zip)} if self.shipment else {}
        return {**shipped, "env_vars": self.env()}

    def run(self, on_event=None, on_log=None, on_start=None) -> RunOutcome:
        with log_file(self.spec) as log:
            return self._run(Transcript(log, on_event, on_log), on_start)

    def _run(self, transcript: Transcript, on_start) -> RunOutcome:
        started = time.monotonic()
        if self._cancelled:
            transcript.note("cancelled before it was submitted")
            return self._outcome(transcript, "cancelled", "cancelled before it was submitted", started)
        where = {"runner": "ray", "submission_id": self.sid, "ray_address": self.runner.config.address}
        try:
            client = self.runner.client()
            if self.attach:
                if not self._exists(client):
                    detail = (f"Ray job {self.sid} is gone from the cluster at {self.runner.config.address}; "
                              "not the lever's failure")
                    transcript.note(detail)
                    return self._outcome(transcript, "interrupted", detail, started)
                if on_start is not None:
                    on_start(where)
                transcript.note(f"re-attached to Ray job {self.sid} at {self.runner.config.address}")
                return self.follow(client, transcript, started)
            problem = self.runner.infeasible(self.request)
            if problem is None:
                problem = self._ship(transcript)
            if problem:
                transcript.note(problem)
                transcript.unavailable_reason = problem
                return self._outcome(transcript, "unavailable", f"unavailable: {problem}", started)
            if on_start is not None:
                # kept before the submission: an optseq killed in between leaves a job its successor can find
                on_start(where)
            self._submit(client, transcript)
        except RunnerError as exc:
            transcript.note(str(exc))
            return self._outcome(transcript, "interrupted", str(exc), started)
        except Exception as exc:
            detail = f"Ray refused the job {self.sid}: {one_line(exc)}"
            transcript.note(detail)
            return self._outcome(transcript, "interrupted", detail, started)
        transcript.note(f"submitted as Ray job {self.sid} to {self.runner.config.address}")
        return self.follow(client, transcript, started)

    def _ship(self, transcript: Transcript) -> str | None:
        """The pass's commits packed to travel with its job (built once per set, then taken from optseq's cache);
        why they cannot travel, or None. RunnerError when a checkout cannot be read."""
        from optseq.state.runners import ray_trees

        try:
            self.shipment = ray_trees.shipment(self.spec.env.get("OPTSEQ_ARMS"))
        except ray_trees.TooLarge as exc:
            return str(exc)
        if self.shipment is not None:
            sides = ray_trees.joined([commit[:7] for commit in self.shipment.commits])
            how = "packed now" if self.shipment.fresh else "packed before, from optseq's cache"
            transcript.note(f"the job carries {sides} as its working directory "
                            f"({ray_trees.size_text(self.shipment.zip.stat().st_size)}, {how})")
        return None

    def _exists(self, client) -> bool:
        try:
            client.get_job_info(self.sid)
            return True
        except Exception as exc:
            if "does not exist" in str(exc) or "not found" in str(exc).lower():
                return False
            raise RunnerError(f"cannot ask the Ray cluster at {self.runner.config.address} about job {self.sid}: "
                              f"{one_line(exc)}") from None

    def _submit(self, client, transcript: Transcript) -> None:
        """Submit, waiting out a cluster whose job agents are still starting (Ray answers 500 "try again later")."""
        end = time.monotonic() + AGENT_WAIT_S
        noted = False
        while True:
            try:
                client.submit_job(entrypoint=self.entrypoint(), submission_id=self.sid,
                                  runtime_env=self.runtime_env(), metadata={"optseq": self.sid}, **self.request)
                return
            except Exception as exc:
                if "already exists" in str(exc) and self._exists(client):
                    # an optseq killed right after submitting it: this is the job, followed from its start
                    transcript.note(f"Ray job {self.sid} was already submitted; following it")
                    return
                if "No available agent" not in str(exc) or time.monotonic() > end or self._cancelled:
                    raise
                if not noted:
                    noted = True
                    transcript.note(f"the Ray cluster has no job agent ready yet; retrying for up to "
                                    f"{AGENT_WAIT_S:g} s")
                time.sleep(POLL_S)

    def follow(self, client, transcript: Transcript, started: float) -> RunOutcome:
        """Stream the job's log until it ends, stopping it on cancel or timeout; then judge it."""
        try:
            stopped = asyncio.run(self._follow(client, transcript, started))
            info = client.get_job_info(self.sid)
        except Exception as exc:
            detail = f"lost touch with Ray job {self.sid} ({one_line(exc)}); not the lever's failure"
            transcript.note(detail)
            transcript.finish()
            return self._outcome(transcript, "interrupted", detail, started)
        lost = None
        try:
            full = client.get_job_logs(self.sid)
        except Exception as exc:  # the log lived on a node that is gone: what streamed is all there is
            lost = one_line(exc)
            transcript.note(f"the full log of Ray job {self.sid} is gone ({lost}); the streamed "
                            "log is the record")
            full = ""
        if len(full) > self._fed:
            transcript.feed(full[self._fed:].encode("utf-8"))
        transcript.finish()
        status, detail = self._verdict(info, transcript, stopped)
        if lost is not None and status == "failed" and not transcript.done and transcript.failure is None:
            # its done event may be in what Ray could not serve: the cluster's fault, not the lever's
            status, detail = "interrupted", (f"Ray could not serve the log of job {self.sid} ({lost}), and what "
                                             "streamed ends before the lever's done event; not the lever's failure")
        if status == "interrupted":
            transcript.note(detail)
        return self._outcome(transcript, status, detail, started, exit_code=getattr(info, "driver_exit_code", None))

    async def _follow(self, client, transcript: Transcript, started: float) -> str | None:
        self._fed = 0
        stream = asyncio.create_task(self._stream(client, transcript))
        deadline = started + self.spec.timeout_s if self.spec.timeout_s else None
        stopped = None
        pending_noted = False
        try:
            while True:
                status = str(await asyncio.to_thread(client.get_job_status, self.sid)).rsplit(".", 1)[-1]
                if status in TERMINAL:
                    break
                if stopped is None:
                    if self._cancelled:
                        stopped = "cancelled"
                    elif deadline is not None and time.monotonic() >= deadline:
                        stopped = "timeout"
                    if stopped and status == "PENDING":
                        # Ray would only stop it once a node starts it: the marker makes that start a no-op
                        self.cancel_marker().touch()
                        await asyncio.to_thread(client.stop_job, self.sid)
                        transcript.note(f"{stopped} while Ray job {self.sid} was pending: it will not run")
                        break
                    if stopped:
                        transcript.note(f"{'cancelled' if stopped == 'cancelled' else 'timed out'}: stopping Ray "
                                        f"job {self.sid} (SIGTERM, SIGKILL after {self.env()['RAY_JOB_STOP_WAIT_TIME_S']} s)")
                        await asyncio.to_thread(client.stop_job, self.sid)
                if status == "PENDING" and not pending_noted and time.monotonic() - started > 5 * POLL_S:
                    pending_noted = True
                    transcript.note(f"Ray job {self.sid} is pending: waiting for a node with {self._asked()}")
                await asyncio.sleep(POLL_S)
        finally:
            try:
                await asyncio.wait_for(asyncio.shield(stream), STREAM_DRAIN_S)
            except (asyncio.TimeoutError, Exception):
                stream.cancel()
        return stopped

    async def _stream(self, client, transcript: Transcript) -> None:
        while True:
            seen = 0
            try:
                async for chunk in client.tail_job_logs(self.sid):
                    start, seen = seen, seen + len(chunk)
                    if seen > self._fed:  # a re-attach replays from the start: feed only what is new
                        transcript.feed(chunk[self._fed - start if self._fed > start else 0:].encode("utf-8"))
                        self._fed = seen
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                await asyncio.sleep(POLL_S)  # the websocket dropped: attach again, the offset skips the replay

    def _asked(self) -> str:
        r = self.request
        parts = [f"GPU {r['entrypoint_num_gpus']}"] if r["entrypoint_num_gpus"] else []
        parts += [f"CPU {r['entrypoint_num_cpus']}"] if r["entrypoint_num_cpus"] else []
        parts += [f"{k} {v:g}" for k, v in r["entrypoint_resources"].items()]
        return ", ".join(parts) or "nothing"

    def _verdict(self, info, transcript: Transcript, stopped: str | None) -> tuple[str, str]:
        status = str(info.status).rsplit(".", 1)[-1]
        error = str(info.error_type).rsplit(".", 1)[-1] if info.error_type else None
        code = info.driver_exit_code
        if stopped == "timeout":
            return "timeout", f"timed out after {self.spec.timeout_s:g} s (Ray job {self.sid} stopped)"
        if stopped == "cancelled":
            return "cancelled", f"cancelled (Ray job {self.sid} stopped)"
        if status == "STOPPED":
            return "cancelled", f"Ray job {self.sid} was stopped outside optseq"
        if error in LOST:
            return "interrupted", (f"Ray lost job {self.sid} ({error}: {one_line(info.message)}); "
                                   "not the lever's failure")
        if transcript.failure is not None:
            return "failed", transcript.failure
        if status == "SUCCEEDED":
            if transcript.unavailable_reason is not None:
                return "unavailable", f"unavailable: {transcript.unavailable_reason}"
            if transcript.done:
                return "succeeded", "exited 0 after done"
            return "failed", "exited 0 without a done event"
        if code not in (None, 0) or error in ("JOB_ENTRYPOINT_COMMAND_ERROR", "JOB_ENTRYPOINT_COMMAND_START_ERROR"):
            return "failed", f"exited {code}" if code not in (None, 0) else one_line(info.message)
        # no exit code from the lever: the job ended around it (a runtime env that failed, a supervisor gone)
        return "interrupted", (f"Ray job {self.sid} failed without the lever exiting ({error or 'no error type'}: "
                               f"{one_line(info.message)}); not the lever's failure")

    def _outcome(self, transcript: Transcript, status: str, detail: str, started: float,
                 exit_code: int | None = None) -> RunOutcome:
        return RunOutcome.of(transcript, status, detail, started=started, log_path=self.spec.log_path,
                             exit_code=exit_code)


def one_line(value) -> str:
    # Ray's HTTP errors carry the server's whole traceback: its head says what happened
    text = " ".join(str(value or "").split("Traceback (most recent call last)")[0].split()).rstrip(": ")
    return text if len(text) <= 300 else text[:297] + "..."
