"""gain_bench.py held at its first launch: it makes $HELD_DIR/started, then reads the FIFO $HELD_DIR/go, which
blocks until the test writes to it; every later launch runs at once."""
import os
import runpy
import sys
from pathlib import Path

held = Path(os.environ["HELD_DIR"])
try:
    (held / "started").open("x").close()
except FileExistsError:
    pass
else:
    with open(held / "go") as go:
        go.read()
sys.argv[0] = str(Path(__file__).parents[2] / "state" / "lever_scripts" / "gain_bench.py")
runpy.run_path(sys.argv[0], run_name="__main__")
