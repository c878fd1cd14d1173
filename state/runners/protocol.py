"""The run protocol, optseq's side: a lever's output lines into events and log, and what a run reported."""
from __future__ import annotations

import json
import math
import re
from collections import deque
from collections.abc import Callable
from typing import Any, BinaryIO

from optseq.state.runners.run_log import CappedLog
from optseq.state.text import clean_text, terminal_safe

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A JSON escape that may decode to a lone surrogate (`\\ud800`…`\\udfff`); raw bytes never do (they decode
with replacement)."""

__all__ = ["EVENTS", "MAX_LINE", "Transcript", "classify", "clean_text", "parse_line"]

EVENTS = ("progress", "env", "sample", "quality", "criterion", "unavailable", "fail", "done")
"""The events DESIGN.md names; any other string "event" still passes through, unchecked."""
MAX_LINE = 4 * 1024 * 1024
"""Bytes a line may grow to before it is cut into log pieces: a runaway line must not eat memory."""
TAIL_LINES = 40
TAIL_CHARS = 2000
"""A tail line is cut here: the tail is stored in the run's document, the full line stays in the log file."""
MAX_WARNINGS = 50



def parse_line(line: str | bytes) -> dict[str, Any] | None:
    """The event on this line, or None when the line is log. Never raises."""
    return classify(line)[0]


def classify(line: str | bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(event, None) for an event; (None, None) for log; (None, warning) for a malformed known event.

    A line is an event when it parses as a JSON object with a string "event" key. Known events
    are checked lightly, so a bad field is reported once here rather than crashing statistics later.
    """
    if isinstance(line, (bytes, bytearray)):
        line = bytes(line).decode("utf-8", errors="replace")
    text = line.strip()
    if not text.startswith("{"):
        return None, None
    try:
        data = json.loads(text)
        if _SURROGATE_ESCAPE.search(text):
            # `{"gpu": "\\ud800"}` is valid JSON but not storable text: clean it here, once, so no field
            # (sample unit, quality name, criterion evidence, env fact, a key) reaches the store raw
            data = clean_text(data)
    except (ValueError, RecursionError):
        # Half-written JSON, huge integers, absurd nesting: all log, none fatal.
        return None, None
    if not isinstance(data, dict) or not isinstance(data.get("event"), str):
        return None, None
    # a fail reason, a progress message, an env fact: text the console, the CLI and the export show; JSON can spell
    # an escape (`\u001b]52;...`) that the raw line never held, so it is stripped here, once (the log keeps it)
    data = _safe(data)
    problem = _CHECKS.get(data["event"], _free)(data)
    if problem:
        return None, f"malformed {data['event']} event kept as log: {problem}"
    return data, None


def _safe(value: Any) -> Any:
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, dict):
        return {_safe(k): _safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_safe(v) for v in value]
    return value


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _need(data: dict, key: str, test: Callable[[Any], bool], what: str, optional: bool = False) -> str | None:
    if key not in data:
        return None if optional else f"{key} is missing"
    if not test(data[key]):
        return f"{key} must be {what}, got {_show(data[key])}"
    return None


def _first(*problems: str | None) -> str | None:
    return next((p for p in problems if p), None)


def _str(value: Any) -> bool:
    return isinstance(value, str)


def _finite(value: Any) -> bool:
    return _number(value) and math.isfinite(value)


def _check_progress(d: dict) -> str | None:
    return _first(_need(d, "done", _finite, "a finite number"), _need(d, "total", _finite, "a finite number"),
                  _need(d, "msg", _str, "a string", optional=True))


def _check_sample(d: dict) -> str | None:
    return _first(
        _need(d, "arm", lambda v: isinstance(v, str) and v != "", "a non-empty string"),
        _need(d, "value", _finite, "a finite number"),
        _need(d, "pair", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
              "a non-negative integer"),
        _need(d, "metric", _str, "a string", optional=True),
        _need(d, "unit", _str, "a string", optional=True),
        _need(d, "higher_is_better", lambda v: isinstance(v, bool), "true or false", optional=True),
    )


def _check_quality(d: dict) -> str | None:
    # NaN or inf values are kept: a guard that measured NaN compares false against its limit and fails.
    return _first(_need(d, "name", lambda v: isinstance(v, str) and v != "", "a non-empty string"),
                  _need(d, "value", _number, "a number"), _need(d, "limit", _number, "a number"))


def _check_criterion(d: dict) -> str | None:
    return _first(_need(d, "candidate", _str, "a string"), _need(d, "criterion", _str, "a string"),
                  _need(d, "outcome", lambda v: v in ("pass", "fail"), '"pass" or "fail"'))


def _check_unavailable(d: dict) -> str | None:
    return _need(d, "reason", _str, "a string", optional=True)


def _check_fail(d: dict) -> str | None:
    return _need(d, "reason", _str, "a string")


def _free(d: dict) -> str | None:
    return None


_CHECKS: dict[str, Callable[[dict], str | None]] = {
    "progress": _check_progress, "sample": _check_sample, "quality": _check_quality,
    "criterion": _check_criterion, "unavailable": _check_unavailable, "fail": _check_fail,
}


class Transcript:
    """One run's output as it arrives: cut into lines, written to the log, sorted into events and log.

    Callbacks run in whichever thread calls `feed`, `finish` or `note`.
    """

    def __init__(self, log: BinaryIO | None = None,
                 on_event: Callable[[dict[str, Any]], None] | None = None,
                 on_log: Callable[[str], None] | None = None) -> None:
        self.log = CappedLog(log) if log is not None else None
        self.on_event = on_event
        self.on_log = on_log
        self.lines = 0
        """Lines of output taken so far (optseq's own notes not counted)."""
        self.events: list[dict[str, Any]] = []
        self.samples: list[dict[str, Any]] = []
        self.qualities: list[dict[str, Any]] = []
        self.criteria: list[dict[str, Any]] = []
        self.env: dict[str, Any] = {}
        """Every `env` event's fields merged, later events winning."""
        self.unavailable_reason: str | None = None
        self.failure: str | None = None
        self.done = False
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.warnings: list[str] = []
        self._dropped_warnings = 0
        self._pending: list[bytes] = []
        self._pending_len = 0
        self._cut = False
        """The line being read was already cut at MAX_LINE: the rest of it is log too."""

    def feed(self, chunk: bytes) -> None:
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                rest = chunk[start:]
                if rest:
                    self._pending.append(rest)
                    self._pending_len += len(rest)
                if self._pending_len >= MAX_LINE:
                    self._take(self._pop_pending(), complete=False)
                break
            piece = chunk[start:nl]
            if self._pending:
                piece = self._pop_pending() + piece
            self._take(piece, complete=True)
            start = nl + 1
        self._flush()

    def finish(self) -> None:
        """The output ended: a last line without a newline still counts."""
        if self._pending:
            self._take(self._pop_pending(), complete=True, newline=False)
        if self.log is not None:
            self.log.end()
        self._flush()

    def note(self, text: str) -> None:
        """A line from optseq itself (timeout, kill), marked so it cannot pass for the lever's output."""
        line = f"[optseq] {text}"
        if self.log is not None:
            self.log.write(line.encode() + b"\n", keep=True)
        self.tail.append(line)
        self._flush()
        if self.on_log is not None:
            self.on_log(line)

    def warn(self, text: str) -> None:
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(text)
            return
        self._dropped_warnings += 1
        summary = f"... and {self._dropped_warnings} more warnings"
        if self._dropped_warnings == 1:
            self.warnings.append(summary)
        else:
            self.warnings[-1] = summary

    def _pop_pending(self) -> bytes:
        data = b"".join(self._pending)
        self._pending.clear()
        self._pending_len = 0
        return data

    def _take(self, raw: bytes, complete: bool, newline: bool = True) -> None:
        # what is shown and kept in the run's record (its tail) is terminal-safe; the log file gets the raw bytes
        text = terminal_safe(raw.decode("utf-8", errors="replace").removesuffix("\r"))
        event, warning = None, None
        if not complete or self._cut:
            if not self._cut:
                warning = f"longer than {MAX_LINE} bytes: kept as log"
        else:
            event, warning = classify(text)
        if self.log is not None:  # an event is the run's data: never left out of a capped log
            self.log.write(raw + b"\n" if complete and newline else raw, keep=event is not None)
        self._cut = not complete
        if complete:
            self.lines += 1
        if warning:
            self.warn(f"line {self.lines + (0 if complete else 1)}: {warning}")
        self.tail.append(text if len(text) <= TAIL_CHARS else f"{text[:TAIL_CHARS]}... [{len(text)} chars]")
        if event is None:
            if self.on_log is not None:
                self.on_log(text)
            return
        self._record(event)
        if self.on_event is not None:
            self.on_event(event)

    def _record(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        kind = event["event"]
        if kind == "sample":
            self.samples.append(event)
        elif kind == "quality":
            self.qualities.append(event)
        elif kind == "criterion":
            self.criteria.append(event)
        elif kind == "env":
            self.env.update({k: v for k, v in event.items() if k != "event"})
        elif kind == "unavailable":
            self.unavailable_reason = event.get("reason") or "no reason given"
        elif kind == "fail":
            # the command's own word on why it failed: the run's one-line detail, whatever its exit code
            lines = clean_text(event["reason"]).strip().splitlines()
            self.failure = lines[0][:TAIL_CHARS] if lines else "no reason given"
        elif kind == "done":
            self.done = True

    def _flush(self) -> None:
        if self.log is not None:
            self.log.flush()
