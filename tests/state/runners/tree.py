"""A stand-in lever that leaves processes behind, each at a known point: it writes each one's pid to FOLDER/ROLE
(written aside, then renamed: a file appears whole) and waits on FIFOs the test opens, never on a clock.

    tree.py FOLDER orphan     a grandchild, orphaned at once (its parent exits), waits on FOLDER/go and exits;
                              the lead then waits on FOLDER/hold and exits 0
    tree.py FOLDER leave      a child in the lead's group and a daemon outside it (fork, setsid, fork), both
                              blocked for good; the lead exits 0 once they are up (with "hold": blocks instead)
    tree.py FOLDER exit N     exits N;   tree.py FOLDER signal N   kills itself with signal N
    tree.py FOLDER wait       blocks until a signal ends it
    tree.py FOLDER says ARG…  writes FOLDER/argv (its arguments after "says", as JSON) and exits 0
"""
import json
import os
import signal
import sys


def write(folder: str, role: str, pid: int) -> None:
    with open(os.path.join(folder, f"{role}.tmp"), "w") as f:
        f.write(str(pid))
    os.rename(os.path.join(folder, f"{role}.tmp"), os.path.join(folder, role))


def held(fifo: str) -> None:
    with open(fifo) as f:  # returns once the test opens the other end, and reads until it closes it
        f.read()


def orphan(folder: str) -> None:
    if os.fork() == 0:
        if os.fork() == 0:
            write(folder, "grandchild", os.getpid())
            held(os.path.join(folder, "go"))
            os._exit(0)
        os._exit(0)
    os.wait()
    held(os.path.join(folder, "hold"))


def leave(folder: str, hold: bool) -> None:
    ready_r, ready_w = os.pipe()
    if os.fork() == 0:
        write(folder, "child", os.getpid())
        os.write(ready_w, b"c")
        while True:
            signal.pause()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            write(folder, "daemon", os.getpid())
            os.write(ready_w, b"d")
            while True:
                signal.pause()
        os._exit(0)
    os.close(ready_w)
    got = b""
    while len(got) < 2:
        got += os.read(ready_r, 2)
    write(folder, "lead", os.getpid())
    while hold:
        signal.pause()


if __name__ == "__main__":
    folder, mode = sys.argv[1], sys.argv[2]
    if mode == "orphan":
        orphan(folder)
    elif mode in ("leave", "hold"):
        leave(folder, mode == "hold")
    elif mode == "exit":
        sys.exit(int(sys.argv[3]))
    elif mode == "signal":
        os.kill(os.getpid(), int(sys.argv[3]))
    elif mode == "says":
        with open(os.path.join(folder, "argv"), "w") as f:
            json.dump(sys.argv[3:], f)
    elif mode == "wait":
        write(folder, "lead", os.getpid())
        while True:
            signal.pause()
