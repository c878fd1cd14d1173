"""A second process for the store tests: holds the writer lock, tries to open, or writes until killed.

    kill_writer.py hold DIR          hold the store's lock inside a transaction, print "ready", wait to be killed
    kill_writer.py try DIR MODE      open in MODE, print "opened readonly=…", or the error (exit 1)
    kill_writer.py write DIR WAIT    append one event, waiting up to WAIT s for the lock: prints "waiting: …"
                                     when it has to wait, then "wrote ID", or the error on stderr (exit 1)
    kill_writer.py append DIR TAG    append/batch/upsert forever, printing "ack …" after each call returns
    kill_writer.py append DIR TAG N  the same, but stop inside the Nth write, between its temp file and the
                                     replace, print "replacing" and wait there to be killed

Ack lines, one per acknowledged call, say what the parent may now rely on:
    ack e:KEY            an event with k=KEY exists
    ack r:KEY e:KEY ...  a batch: each named run and event exists
    ack u:KEY            the run with k=KEY has status "succeeded"
    ack f:TAG:I          the fact named TAG has i >= I
"""
from __future__ import annotations

import os
import sys
import time

from optseq.state.store import storage
from optseq.state.store.layout import DB_NAME
from optseq.state.store.store import Store, StoreError

PAYLOAD = "측정값 재측정 " * 60
"""About 1 KiB of UTF-8 per record, so each write takes measurable time."""


def hold(directory: str) -> None:
    store = Store.open(directory, mode="write")
    with store.batch():
        print("ready", os.getpid(), flush=True)
        while True:
            time.sleep(60)


def write(directory: str, wait_s: str) -> int:
    try:
        store = Store.open(directory, mode="write", wait_s=float(wait_s),
                           on_wait=lambda text: print(f"waiting: {text}", flush=True))
        record = store.append("events", {"type": "note", "k": "written"})
    except StoreError as e:
        print(e, file=sys.stderr)
        return 1
    print(f"wrote {record['id']}", flush=True)
    return 0


def try_open(directory: str, mode: str) -> int:
    try:
        store = Store.open(directory, mode=mode)
    except StoreError as e:
        print(e, file=sys.stderr)
        return 1
    print(f"opened readonly={store.readonly} holder={store.holder['pid'] if store.holder else None}", flush=True)
    store.close()
    return 0


def stop_in_write(n: int) -> None:
    """Hold the process inside its nth atomic write, the temp file complete and not yet in place."""
    real, calls = os.replace, [0]

    def replace(src, dst, *args, **kwargs):
        # only the store file's replace counts: the holder sidecar is replaced through os.replace too
        store_file = os.path.basename(os.fspath(dst)) == DB_NAME
        calls[0] += store_file
        if store_file and calls[0] == n:
            print("replacing", flush=True)
            while True:
                time.sleep(60)
        return real(src, dst, *args, **kwargs)

    storage.os.replace = replace


def append(directory: str, tag: str) -> None:
    store = Store.open(directory, mode="write")
    previous_run = None
    i = 0
    while True:
        step = i % 4
        if step in (0, 2):
            store.append("events", {"type": "note", "k": f"{tag}-{i}", "p": PAYLOAD})
            print(f"ack e:{tag}-{i}", flush=True)
        elif step == 1:
            with store.batch():
                run = store.append("runs", {"lever": "amp", "k": f"{tag}-{i}", "status": "running", "pid": store.holder["pid"]})
                store.append("events", {"type": "note", "k": f"{tag}-{i}a", "p": PAYLOAD})
                store.append("events", {"type": "note", "k": f"{tag}-{i}b", "p": PAYLOAD})
                if previous_run:
                    store.update("runs", previous_run["id"], {"status": "succeeded"})
            done = f" u:{previous_run['k']}" if previous_run else ""
            print(f"ack r:{tag}-{i} e:{tag}-{i}a e:{tag}-{i}b{done}", flush=True)
            previous_run = run
        else:
            store.upsert("facts", "name", {"name": tag, "value": True, "i": i})
            print(f"ack f:{tag}:{i}", flush=True)
        i += 1


if __name__ == "__main__":
    command, directory, *rest = sys.argv[1:]
    if command == "hold":
        hold(directory)
    elif command == "write":
        sys.exit(write(directory, rest[0]))
    elif command == "try":
        sys.exit(try_open(directory, rest[0]))
    elif command == "append":
        if rest[1:]:
            stop_in_write(int(rest[1]))
        append(directory, rest[0])
    else:
        sys.exit(f"kill_writer.py: unknown command {command!r}")
