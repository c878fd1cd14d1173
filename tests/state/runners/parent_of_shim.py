"""Stands in for optseq: starts tree.py FOLDER hold under a shim of its own and reads the shim's reports, to be
SIGKILLed by a test. Prints "shim PID" once the shim runs."""
import sys
from pathlib import Path

from optseq.state.runners.interface import RunSpec
from optseq.state.runners.shim_link import ShimLink

link = ShimLink.start(RunSpec(["python", str(Path(__file__).with_name("tree.py")), sys.argv[1], "hold"]))
print(f"shim {link.proc.pid}", flush=True)
link.read_all()
