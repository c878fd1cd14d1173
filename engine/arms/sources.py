"""Reading one number out of one arm's run: a regex over its output, a JSON line's key, a result file, wall time."""
from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass


class NotFound(Exception):
    """The source found no number in the arm's run; str() says what was looked for and what was there."""


@dataclass(frozen=True)
class ArmRun:
    """What one execution of one arm left behind."""

    lines: Sequence[str]
    wall_s: float
    started: float
    """time.time() at launch: a result file older than this was not written by this run."""
    cwd: str


def read(source: dict, run: ArmRun) -> float:
    kind = source["kind"]
    if kind == "wall_time":
        return run.wall_s
    if kind == "regex":
        return _regex(source["pattern"], run.lines)
    if kind == "json":
        for line in reversed(run.lines):
            data = _json_object(line)
            if data is not None:
                found, value = _lookup(data, source["key"])
                if found:
                    return _number(value, f"JSON key {source['key']!r}")
        raise NotFound(f"no JSON line with key {source['key']!r}")
    return _file(source, run)


def _regex(pattern: str, lines: Sequence[str]) -> float:
    compiled = re.compile(pattern)
    # the last match wins: a training script prints its throughput as it goes, the final figure last
    for line in reversed(lines):
        matches = list(compiled.finditer(line))
        if matches:
            match = matches[-1]
            text = match.group("value") if "value" in compiled.groupindex else match.group(1)
            return _number(text, f"regex {pattern!r} matched {match.group(0)!r}, but")
    raise NotFound(f"regex {pattern!r} matched nothing")


def _file(source: dict, run: ArmRun) -> float:
    path = os.path.join(run.cwd, source["path"])
    try:
        stat = os.stat(path)
    except OSError:
        raise NotFound(f"result file {source['path']} was not written") from None
    # one second of slack: some file systems keep whole-second modification times
    if stat.st_mtime < run.started - 1.0:
        raise NotFound(f"result file {source['path']} is older than this run (a stale result from an earlier one)")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        raise NotFound(f"result file {source['path']} is not JSON ({exc})") from None
    found, value = _lookup(data, source["key"])
    if not found:
        raise NotFound(f"result file {source['path']} has no key {source['key']!r}")
    return _number(value, f"key {source['key']!r} of {source['path']}")


def _json_object(line: str) -> dict | None:
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _lookup(data, key: str) -> tuple[bool, object]:
    for part in key.split("."):
        if not isinstance(data, dict) or part not in data:
            return False, None
        data = data[part]
    return True, data


def _number(value, where: str) -> float:
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        raise NotFound(f"{where} {value!r} is not a number") from None
    if not math.isfinite(number):
        raise NotFound(f"{where} {value!r} is not a finite number")
    return number
