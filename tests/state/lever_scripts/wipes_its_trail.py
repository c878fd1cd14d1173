"""A stand-in lever that leaves a daemon which wipes its trail: a double fork (fork, setsid, fork), the
grandchild exec'd with an empty environment (no OPTSEQ_* left, the launch's mark gone) and its output on
/dev/null, and that daemon starts a worker of its own. Both record their pids in the folder given as argv[1]
(one file per process: its pid in the name, its role inside); the lever waits on a pipe until they have,
then measures and ends normally. With --stubborn the daemon ignores SIGTERM (and only the first pass leaves
one: each costs the grace before its SIGKILL). With --meet FIFO, the first pass waits, its daemon up, until
another lever's first pass opens the same FIFO from the other end (--meet FIFO --reader): the two run at once.

With --tool it is no lever: it leaves a daemon that keeps its environment (as git's detached gc does) and exits.

Run as `wipes_its_trail.py FOLDER [--stubborn] [--meet FIFO [--reader]] [--tool]`; the daemon itself is this
file run with `--daemon`."""
import json
import os
import signal
import subprocess
import sys
import time

MARK = "optseq-test-wiped-daemon"
"""In each process's command line, so a check of a pid cannot mistake a recycled one for it."""


def daemon(folder: str, ready_fd: int, stubborn: bool) -> None:
    if stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    worker = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(60)", MARK],
                              env={}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, close_fds=True)
    for pid, role in ((os.getpid(), "daemon"), (worker.pid, "worker")):
        with open(os.path.join(folder, f"{pid}.tmp"), "w") as f:
            f.write(role)
        os.rename(os.path.join(folder, f"{pid}.tmp"), os.path.join(folder, str(pid)))
    os.write(ready_fd, b"ready\n")
    os.close(ready_fd)
    while True:
        time.sleep(60)


def lever(folder: str, stubborn: bool, meet: str | None, reader: bool) -> None:
    first = os.environ.get("OPTSEQ_PASS", "1") == "1"
    if not stubborn or first:
        leave_daemon(folder, stubborn)
    if meet and first:
        with open(meet, "r" if reader else "w") as fifo:  # an open of a FIFO returns once both ends are open
            if reader:
                fifo.read()
    pairs = int(os.environ.get("OPTSEQ_REPEATS", "6"))
    for i in range(pairs):
        arms = (("baseline", 100.0 + i), ("candidate", 150.0 + i))
        for arm, value in arms if i % 2 == 0 else arms[::-1]:  # in turn, as kit.pairs runs them
            print(json.dumps({"event": "sample", "arm": arm, "metric": "items_per_s", "value": value,
                              "unit": "items/s", "higher_is_better": True, "pair": i}), flush=True)
    print(json.dumps({"event": "done"}), flush=True)


def leave_daemon(folder: str, stubborn: bool, env: dict | None = None) -> None:
    ready_r, ready_w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.close(ready_r)
            os.set_inheritable(ready_w, True)
            argv = [sys.executable, __file__, "--daemon", folder, str(ready_w), str(int(stubborn)), MARK]
            os.execve(sys.executable, argv, env or {})  # nothing of the launch's environment goes with it
        os._exit(0)
    os.close(ready_w)
    os.wait()
    assert os.read(ready_r, 64) == b"ready\n"
    os.close(ready_r)
    print(f"daemon started in {folder}", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "--daemon":
        daemon(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1")
    else:
        args = sys.argv[2:]
        if "--tool" in args:
            leave_daemon(sys.argv[1], False, dict(os.environ))
            sys.exit(0)
        lever(sys.argv[1], "--stubborn" in args, args[args.index("--meet") + 1] if "--meet" in args else None,
              "--reader" in args)
