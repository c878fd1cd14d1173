"""`optseq doctor [--rebuild]`: the store checked file by file, and its hot file rebuilt from the journals."""
from __future__ import annotations

import sys
from pathlib import Path

OK, DAMAGED = 0, 2


def run_doctor(db: Path, rebuild: bool) -> int:
    from optseq.state.store.doctor import check, rebuild as rebuild_hot

    if not db.is_dir():
        print(f"optseq: no store at {db}", file=sys.stderr)
        return DAMAGED
    if rebuild:
        for line in rebuild_hot(db):  # a StoreError (damaged journal, sound hot file) is main's one-line refusal
            print(line)
    lines, sound = check(db)
    for line in lines:
        print(line)
    return OK if sound else DAMAGED
