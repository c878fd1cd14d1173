"""A stand-in bench or setup held at a known point: it starts a child of its own, writes its pid and the child's
to $HELD_DIR/pids (written aside, then renamed: the file appears whole), and then blocks until it is stopped.
A test waits for that file, signals optseq, and checks that neither pid outlives it."""
import os
import signal
import subprocess
import sys

folder = os.environ["HELD_DIR"]
child = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
with open(os.path.join(folder, "pids.tmp"), "w", encoding="utf-8") as f:
    f.write(f"{os.getpid()} {child.pid}\n")
os.replace(os.path.join(folder, "pids.tmp"), os.path.join(folder, "pids"))
print("held", flush=True)
while True:
    signal.pause()
