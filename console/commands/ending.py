"""The signals that end a headless run (`--run`, `compare`) the way Ctrl-C does: SIGINT, SIGTERM (a CI job
cancelled) and SIGHUP (an SSH session gone). Each cancels the run under way, whose process groups are stopped
with their grace and whose end is recorded; optseq then exits with the signal's code, as a shell reports it.

Left to their default, SIGTERM and SIGHUP ended optseq at once: the arm or setup it ran outlived it (only its
direct child dies with it), and the run stayed `running` until some later optseq opened that store."""
from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator

ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

NAMES: dict[int | None, str] = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}


class Ended:
    """The first ending signal that came while `cancelling` was on (None while none has)."""

    signum: int | None = None

    @property
    def code(self) -> int | None:
        """128 + the signal: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
        return None if self.signum is None else 128 + self.signum

    @property
    def name(self) -> str:
        return NAMES.get(self.signum, f"signal {self.signum}")


@contextlib.contextmanager
def cancelling(cancel: Callable[[Ended], None]) -> Iterator[Ended]:
    """While inside, each of ENDING calls cancel(ended) instead of ending optseq; the handlers before are put back
    after. cancel runs in a signal handler: it may only set flags and write a line (RunControl.cancel does)."""
    ended = Ended()
    # a hung-up terminal answers every write with EIO: what optseq says after SIGHUP goes nowhere instead of
    # failing the run's end (its record, the summary) half-way
    terminals = [fd for fd in (1, 2) if _isatty(fd)]

    def handler(signum, _frame) -> None:
        if signum == signal.SIGHUP:
            _silence(terminals)
        if ended.signum is None:
            ended.signum = signum
        cancel(ended)

    previous = {sig: signal.signal(sig, handler) for sig in ENDING}
    try:
        yield ended
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _silence(fds: list[int]) -> None:
    if not fds:
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in fds:
            os.dup2(null, fd)
    finally:
        os.close(null)
