"""A lever's output cannot drive the user's terminal: escapes and control characters are stripped on the way to
it, by every road (`--run -v` echoes, the fail reason, the progress message, env facts, status, runs), and kept
raw in the run's log."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from optseq.state.text import terminal_safe
from tests.console.test_runs_table import lever, optseq, write_plan

ESCAPES = Path(__file__).parents[1] / "state" / "lever_scripts" / "escapes.py"
UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""What must never reach the terminal: ESC (every sequence starts with it), NUL, the C1 controls (0x9b is CSI)."""


@pytest.mark.parametrize("text, safe", [
    ("\x1b]0;title\x07ok", "ok"),
    ("a\x1b[2Jb\x1b[?1049hc", "abc"),
    ("copy\x1b]52;c;ZXZpbA==\x07 me", "copy me"),
    ("nul\x00 byte", "nul byte"),
    ("eight-bit \x9b31mcsi", "eight-bit csi"),
    ("tabs\tand\nnewlines stay", "tabs\tand\nnewlines stay"),
    ("over\rwrite", "overwrite"),
    ("Korean 한국어 and ✓ stay", "Korean 한국어 and ✓ stay"),
    ("lone escape at the end\x1b", "lone escape at the end"),
])
def test_terminal_safe_text(text, safe):
    assert terminal_safe(text) == safe


def test_terminal_safe_values_whole():
    # what the console reads from the store (an evidence, a why), cleaned as one value; safe text is the same object
    value = {"why\x1b[2J": ["ev \x1b]0;TITLE\x07 text", ("a\x07", 3)], "n": 1.5, "ok": "fine"}
    assert terminal_safe(value) == {"why": ["ev  text", ("a", 3)], "n": 1.5, "ok": "fine"}
    text = "fine"
    assert terminal_safe(text) is text


def test_nothing_a_lever_prints_reaches_the_terminal_raw(tmp_path, cli_env, db):
    plan = write_plan(tmp_path, lever("nasty", [sys.executable, str(ESCAPES)]))
    env = {**cli_env, "OPTSEQ_PLAN": str(plan)}
    run = optseq(env, "--run", "nasty", "-v", code=1)
    for stream in (run.stdout, run.stderr):
        assert not UNSAFE.search(stream), repr(stream)
    assert "plain line end-of-plain" in run.stderr  # the echo, stripped
    assert "broken bench" in run.stdout + run.stderr  # the fail reason, stripped
    for args in (("status",), ("runs",), ("runs", "--json"), ("status", "--json"), ("export",)):
        out = optseq(env, *args)
        assert not UNSAFE.search(out.stdout + out.stderr), (args, repr(out.stdout))
    record = json.loads(optseq(env, "runs", "--json").stdout)["runs"][0]
    # what the run's record keeps (its reason, env facts, its output's tail) is as safe: the export shows it too,
    # and JSON spells escapes (\u001b) that a check of the raw output cannot see
    assert "broken bench" in json.dumps(record) and not UNSAFE.search("".join(strings(record))), record
    log = Path(record["log"]).read_bytes()  # the log keeps what the lever printed, as it printed it
    assert b"\x1b]52;c;ZXZpbA==\x07" in log and b"\x1b[2J" in log


def test_a_lever_that_prints_without_end_has_its_log_capped_and_its_samples_kept(tmp_path, cli_env):
    tiny = Path(__file__).with_name("tiny_lever.py")
    plan = write_plan(tmp_path, lever("chatty", [sys.executable, str(tiny), "--log-lines", "20000"]))
    env = {**cli_env, "OPTSEQ_PLAN": str(plan), "OPTSEQ_LOG_CAP": "50000"}
    run = optseq(env, "--run", "chatty", "--json")
    report = json.loads(run.stdout)["runs"][0]
    assert report["decision"] == "adopt", report  # every sample came through: events are never left out
    record = json.loads(optseq(env, "runs", "--json").stdout)["runs"][0]
    logs = sorted(Path(record["log"]).parent.glob("*.log"))
    for log in logs:  # one per launch
        text = log.read_text()
        printed = 20000 * len("tiny lever log line 10000\n")
        assert len(text) < 50000 + 50000 // 4 + 5000 < printed, (log, len(text))
        assert "[optseq] log capped at 50000 bytes (OPTSEQ_LOG_CAP)" in text
        assert text.startswith("tiny lever log line 0\n") and "tiny lever log line 19999\n" in text  # head, tail
        assert text.count('"event": "sample"') == 2 * text.count('"arm": "baseline"')


def test_a_daemon_the_lever_leaves_outside_its_group_is_reported_and_stopped(tmp_path, cli_env):
    daemonizes = Path(__file__).parents[1] / "state" / "lever_scripts" / "daemonizes.py"
    plan = write_plan(tmp_path, lever("leaky", [sys.executable, str(daemonizes)]))
    env = {**cli_env, "OPTSEQ_PLAN": str(plan)}
    optseq(env, "--run", "leaky", "--json")
    record = json.loads(optseq(env, "runs", "--json").stdout)["runs"][0]
    log = Path(record["log"]).read_text()
    pid = int(re.search(r"daemon pid (\d+)", log).group(1))
    assert any("outside its group" in w and f"pid {pid}" in w for w in record["warnings"]), record["warnings"]
    stat = Path(f"/proc/{pid}/stat")
    assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")  # stopped with it


def strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (*strings(k), *strings(v))]
    if isinstance(value, list):
        return [t for v in value for t in strings(v)]
    return []
