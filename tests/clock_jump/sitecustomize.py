"""Loaded at start-up by a test's optseq (this folder on PYTHONPATH): its wall clock jumps.

OPTSEQ_TEST_CLOCK_JUMP_S seconds are added to time.time() and datetime.now() once the file named by
OPTSEQ_TEST_CLOCK_JUMP_AT exists (at once if it exists at start-up), as when an NTP step or an admin sets
the clock while a run goes; the file `<that>.seen` says the jump is in effect. The monotonic clock is left
alone, as the kernel leaves it. Only the process started with these variables jumps: its children (the
lever) are not handed them.
"""
import datetime as _dt
import os
import threading
import time as _time

_at = os.environ.pop("OPTSEQ_TEST_CLOCK_JUMP_AT", None)
_by = float(os.environ.pop("OPTSEQ_TEST_CLOCK_JUMP_S", "0") or 0)

if _at:
    _offset = [0.0]
    _real_time = _time.time

    def _jumped_time() -> float:
        return _real_time() + _offset[0]

    class _JumpedDatetime(_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return _dt.datetime.fromtimestamp(_jumped_time(), tz)

        @classmethod
        def utcnow(cls):
            return _dt.datetime.fromtimestamp(_jumped_time(), _dt.timezone.utc).replace(tzinfo=None)

    _time.time = _jumped_time
    _dt.datetime = _JumpedDatetime

    def _jump() -> None:
        _offset[0] = _by
        with open(_at + ".seen", "w") as seen:
            seen.write(str(_by))

    def _watch() -> None:
        while not os.path.exists(_at):
            _time.sleep(0.01)
        _jump()

    if os.path.exists(_at):
        _jump()
    else:
        threading.Thread(target=_watch, name="clock-jump", daemon=True).start()
