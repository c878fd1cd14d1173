"""optseq.engine.kit as a team's bench uses it: a script of its own, run as a child process, read back by its stdout."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from optseq.engine import kit

# Each arm's k-th call returns k (the candidate's 1000 + k): a reported value says which call produced it,
# so a warm-up value that leaked into the samples is caught by its number, not by timing.
PAIRS_BENCH = """
import json, sys
from optseq.engine import kit

calls = []
count = {"baseline": 0, "candidate": 0}

def arm(name):
    def call():
        count[name] += 1
        calls.append(name)
        return (1000 if name == "candidate" else 0) + count[name]
    return call

result = kit.pairs(arm("baseline"), arm("candidate"), metric="s_per_call", unit="s", higher_is_better=False,
                   **json.loads(sys.argv[1]))
print("CALLS " + json.dumps(calls))
print("RESULT " + json.dumps(result))
kit.done()
"""


def child_env(**env: str) -> dict[str, str]:
    # the suite may itself run under optseq, or from a shell that has these set: the child sees only ours
    base = {k: v for k, v in os.environ.items() if not k.startswith("OPTSEQ_")}
    return {**base, **env}


def run_script(tmp_path: Path, source: str, *argv: str, env: dict[str, str] | None = None,
               stdin: str | None = None) -> tuple[subprocess.CompletedProcess, list[dict], list[str]]:
    """The finished child, its protocol events in order, and its other (log) lines."""
    script = tmp_path / "bench.py"
    script.write_text(textwrap.dedent(source))
    proc = subprocess.run([sys.executable, str(script), *argv], capture_output=True, text=True, cwd=tmp_path,
                          env=child_env(**(env or {})), input=stdin if stdin is not None else "", timeout=120)
    events, log = [], []
    for line in proc.stdout.splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict) and "event" in obj:
            events.append(obj)
        else:
            log.append(line)
    return proc, events, log


def logged(log: list[str], tag: str):
    return next(json.loads(line[len(tag) + 1:]) for line in log if line.startswith(tag + " "))


def run_pairs(tmp_path: Path, env: dict[str, str] | None = None, **kwargs):
    proc, events, log = run_script(tmp_path, PAIRS_BENCH, json.dumps(kwargs), env=env)
    assert proc.returncode == 0, proc.stderr
    return events, logged(log, "CALLS"), logged(log, "RESULT")


def samples(events: list[dict]) -> list[dict]:
    return [e for e in events if e["event"] == "sample"]


# -- what optseq asks for -------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [(None, 7), ("3", 3), ("12", 12), ("0", 7), ("-2", 7), ("", 7),
                                             ("many", 7), ("2.5", 7)])
def test_repeats_honours_optseq_repeats_and_falls_back(tmp_path, value, expected):
    env = {} if value is None else {"OPTSEQ_REPEATS": value}
    proc, _, log = run_script(tmp_path, "from optseq.engine import kit\nprint('N', kit.repeats(7))\n", env=env)
    assert proc.returncode == 0, proc.stderr
    assert log == [f"N {expected}"]


@pytest.mark.parametrize("value, expected", [(None, 1), ("1", 1), ("3", 3), ("0", 1), ("x", 1)])
def test_pass_number(tmp_path, value, expected):
    env = {} if value is None else {"OPTSEQ_PASS": value}
    proc, _, log = run_script(tmp_path, "from optseq.engine import kit\nprint('P', kit.pass_number())\n", env=env)
    assert proc.returncode == 0, proc.stderr
    assert log == [f"P {expected}"]


def test_pairs_measures_as_many_pairs_as_optseq_asks(tmp_path):
    events, _, result = run_pairs(tmp_path, env={"OPTSEQ_REPEATS": "4"}, default_repeats=9, warmup=0)
    assert len(result) == 4
    assert sorted({e["pair"] for e in samples(events)}) == [0, 1, 2, 3]
    events, _, result = run_pairs(tmp_path, default_repeats=3, warmup=0)
    assert len(result) == 3
    events, _, result = run_pairs(tmp_path, env={"OPTSEQ_REPEATS": "4"}, repeats=2, warmup=0)
    assert len(result) == 2, "an explicit repeats= wins over the environment"


# -- warm-up and order ----------------------------------------------------------------------------------------

def test_warmup_values_are_never_emitted(tmp_path):
    events, calls, result = run_pairs(tmp_path, repeats=3, warmup=2)
    assert calls[:4] == ["baseline", "candidate", "baseline", "candidate"]
    assert len(calls) == 4 + 6
    by_arm = {arm: sorted(e["value"] for e in samples(events) if e["arm"] == arm) for arm in ("baseline", "candidate")}
    # calls 1 and 2 of each arm were the warm-ups
    assert by_arm == {"baseline": [3.0, 4.0, 5.0], "candidate": [1003.0, 1004.0, 1005.0]}
    assert sorted(b for b, _ in result) == by_arm["baseline"]
    assert sorted(c for _, c in result) == by_arm["candidate"]


def test_alternate_order_is_abba_and_each_pair_is_reported_then_progress(tmp_path):
    events, calls, result = run_pairs(tmp_path, repeats=4, warmup=1, label="tok")
    b, c = "baseline", "candidate"
    assert calls == [b, c] + [b, c, c, b, b, c, c, b]
    # a sample is reported as it is measured, so the stream shows the order too
    assert [(e["event"], e.get("arm"), e.get("pair", e.get("done"))) for e in events] == [
        ("sample", b, 0), ("sample", c, 0), ("progress", None, 1),
        ("sample", c, 1), ("sample", b, 1), ("progress", None, 2),
        ("sample", b, 2), ("sample", c, 2), ("progress", None, 3),
        ("sample", c, 3), ("sample", b, 3), ("progress", None, 4),
        ("done", None, None)]
    assert {e["total"] for e in events if e["event"] == "progress"} == {4}
    assert events[2]["msg"] == "tok pair 1/4"
    s = samples(events)[0]
    assert (s["metric"], s["unit"], s["higher_is_better"]) == ("s_per_call", "s", False)
    # results are (baseline, candidate) whichever ran first
    assert result == [[2, 1002], [3, 1003], [4, 1004], [5, 1005]]


def random_calls(tmp_path: Path, run_id: str, pass_no: str) -> list[str]:
    _, calls, _ = run_pairs(tmp_path, env={"OPTSEQ_RUN_ID": run_id, "OPTSEQ_PASS": pass_no},
                            repeats=32, warmup=0, order="random")
    return calls


def test_random_order_is_reproducible_per_pass_and_differs_across_passes(tmp_path):
    first = random_calls(tmp_path, "run-17", "1")
    assert random_calls(tmp_path, "run-17", "1") == first
    assert random_calls(tmp_path, "run-17", "2") != first
    assert random_calls(tmp_path, "run-18", "1") != first
    heads = []
    for i in range(32):
        pair = first[2 * i:2 * i + 2]
        assert sorted(pair) == ["baseline", "candidate"], "every pair measures both arms back to back"
        heads.append(pair[0])
    assert set(heads) == {"baseline", "candidate"}
    assert first != ["baseline"] * 32 + ["candidate"] * 32


def test_no_order_runs_all_a_then_all_b(tmp_path):
    for order in ("alternate", "random"):
        _, calls, _ = run_pairs(tmp_path, env={"OPTSEQ_RUN_ID": "7"}, repeats=6, warmup=0, order=order)
        assert calls[:6] != ["baseline"] * 6 and calls[:6] != ["candidate"] * 6


def test_unknown_order_is_refused_before_anything_runs(capsys):
    called = []
    with pytest.raises(ValueError, match="order"):
        kit.pairs(lambda: called.append(1) or 1.0, lambda: called.append(2) or 1.0, metric="m", unit="s",
                  higher_is_better=False, repeats=2, order="sequential")
    assert called == [] and capsys.readouterr().out == ""


def test_every_sample_says_which_arm_ran_first_and_echoes_the_launch_token(tmp_path):
    events, _, _ = run_pairs(tmp_path, env={"OPTSEQ_LAUNCH": "tok-3"}, repeats=4, warmup=0)
    got = [(e["arm"], e["pair"], e["first"], e["launch"]) for e in samples(events)]
    assert got == [("baseline", 0, True, "tok-3"), ("candidate", 0, False, "tok-3"),
                   ("candidate", 1, True, "tok-3"), ("baseline", 1, False, "tok-3"),
                   ("baseline", 2, True, "tok-3"), ("candidate", 2, False, "tok-3"),
                   ("candidate", 3, True, "tok-3"), ("baseline", 3, False, "tok-3")]
    by_hand, _, _ = run_pairs(tmp_path, repeats=1, warmup=0)
    assert "launch" not in samples(by_hand)[0]  # run by hand: no token to echo


def test_the_kit_has_no_baseline_first_pairing():
    # a bench that runs one arm first in every pair credits the other arm with the warm-up or the drift
    assert not hasattr(kit, "paired")


# -- the other events -----------------------------------------------------------------------------------------

def test_fail_emits_the_reason_and_leaves_the_exit_to_the_caller(tmp_path):
    proc, events, _ = run_script(tmp_path, """
        import sys
        from optseq.engine import kit
        kit.fail("dataset missing: data/train.bin")
        print("still running")
        sys.exit(3)
    """)
    assert proc.returncode == 3
    assert events == [{"event": "fail", "reason": "dataset missing: data/train.bin"}]
    assert "still running" in proc.stdout


def test_env_quality_unavailable_done(tmp_path):
    _, events, _ = run_script(tmp_path, """
        from optseq.engine import kit
        kit.env(gpu="none", python="3.x")
        kit.quality("max_abs_error", 1, 0.5)
        kit.unavailable("no CUDA")
        kit.done()
    """)
    assert events == [{"event": "env", "gpu": "none", "python": "3.x"},
                      {"event": "quality", "name": "max_abs_error", "value": 1.0, "limit": 0.5},
                      {"event": "unavailable", "reason": "no CUDA"}, {"event": "done"}]


def test_infra_and_artifacts_from_the_environment(tmp_path):
    infra = {"adopted": ["amp", "compile"], "model": {"hidden": 64}}
    proc, _, log = run_script(tmp_path, """
        import json
        from optseq.engine import kit
        i = kit.infra()
        print(json.dumps([sorted(i.adopted), i.model, i.has("amp"), i.has("tensorrt"), str(kit.artifacts_dir())]))
    """, env={"OPTSEQ_INFRA": json.dumps(infra), "OPTSEQ_ARTIFACTS": str(tmp_path / "out")})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(log[0]) == [["amp", "compile"], {"hidden": 64}, True, False, str(tmp_path / "out")]
    assert (tmp_path / "out").is_dir()


def test_a_closed_stdout_ends_the_bench(tmp_path):
    # the child waits for our go on stdin, so its first write lands on a pipe nobody reads any more
    script = tmp_path / "bench.py"
    script.write_text("import sys\nfrom optseq.engine import kit\nsys.stdin.read()\nkit.progress(0, 1)\nsys.exit(0)\n")
    proc = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=child_env(), cwd=tmp_path)
    proc.stdout.close()
    proc.stdin.close()
    assert proc.wait(timeout=120) == 141


# -- cheap to import ------------------------------------------------------------------------------------------

def test_importing_the_kit_loads_nothing_heavy(tmp_path):
    proc, _, log = run_script(tmp_path, """
        import json, sys
        import optseq.engine.kit
        heavy = sorted(m for m in sys.modules
                       if m.split(".")[0] in ("torch", "numpy", "textual", "scipy")
                       or m.startswith(("optseq.state", "optseq.console")))
        print(json.dumps(heavy))
    """)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(log[0]) == []
