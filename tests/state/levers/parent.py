"""Stands in for optseq: runs hang.py through optseq.state.runners.local and prints where it is, to be SIGKILLed by a test.

    parent.py [grandchild]     prints "lever PID PGID" then "ready GRANDCHILD_PID|None" on stdout
"""
import sys
from pathlib import Path

from optseq.state.runners.local import Launcher
from optseq.state.runners.interface import RunSpec

HANG = Path(__file__).with_name("hang.py")


def started(pid: int, pgid: int) -> None:
    print(f"lever {pid} {pgid}", flush=True)


def event(e: dict) -> None:
    if e.get("ready"):
        print(f"ready {e.get('grandchild')}", flush=True)


spec = RunSpec(["python", str(HANG), *sys.argv[1:]], env={"OPTSEQ_RUN_ID": "orphan-run"}, timeout_s=120)
Launcher(spec).run(on_event=event, on_start=started)
