"""The lever lifecycle at its edges: reversed gates, inconclusive re-measures, run order, unavailable levers.

Runs use stand-in lever commands (tests/state/lever_scripts/ab.py), never the engine. Every scenario is
checked again after reopening the store: the machine is rebuilt from the records at each start.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from optseq.state.sequencer import Sequencer
from optseq.state.view_types import LeverStatus
from tests.conftest import DEFAULT_PLAN, OPTSEQ

AB = Path(__file__).parents[1] / "lever_scripts" / "ab.py"
ADOPT = ["--ratio", "1.5"]
INCONCLUSIVE = ["--ratio", "1.2", "--noise", "0.05", "--straddle"]
RULE = 'rule = { metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 12 }'


# -- helpers -------------------------------------------------------------------------------------------
def lever_block(lever_id: str, kind: str = "speedup", args=ADOPT, *, extra: str = "", run: bool = True,
                script: Path = AB) -> str:
    lines = ["[[levers]]", f'id = "{lever_id}"', f'title = "**{lever_id}**"', f'kind = "{kind}"',
             f'plan_doc = "docs/{lever_id}.md"']
    if run:
        lines += [f"run = {json.dumps(['python', str(script), *args])}", "timeout_s = 60", RULE]
    return "\n".join(lines) + "\n" + extra + "\n"


GATE = """[[levers]]
id = "gate"
title = "**Gate**"
kind = "decision"
plan_doc = "docs/gate.md"

[levers.criteria]
criteria = [{ id = "c1" }]
candidates = [{ id = "a", title = "A" }]

[levers.criteria.branches.GO]
label = "GO → fast"
opens = ["fast"]
closes = ["slow_track"]

[levers.criteria.branches.NO-GO]
label = "NO-GO → slow_track"
opens = ["slow_track"]
closes = ["fast"]
"""


def write_plan(path: Path, *blocks: str) -> Path:
    path.write_text('[plan]\ntitle = "Lifecycle"\nas_of = 2026-11-01\nlang = "en"\n\n' + "\n".join(blocks),
                    encoding="utf-8")
    return path


def default_plan_copy(path: Path, runs: dict[str, list[str]]) -> Path:
    """The default plan with these levers' run argv pointed at the stand-in script (and a rule it speaks)."""
    blocks = DEFAULT_PLAN.read_text(encoding="utf-8").split("[[levers]]")
    for i, block in enumerate(blocks):
        lever_id = re.search(r'^id = "(\w+)"', block.lstrip(), re.M)
        if lever_id and lever_id.group(1) in runs:
            argv = json.dumps(["python", str(AB), *runs[lever_id.group(1)]])
            block, n = re.subn(r"^run = \[.*\]$", f"run = {argv}", block, flags=re.M)
            block, m = re.subn(r"^rule = \{.*\}$", RULE, block, flags=re.M)
            assert n == m == 1, f"{lever_id.group(1)}'s run or rule moved; update this helper"
            blocks[i] = block
    path.write_text("[[levers]]".join(blocks), encoding="utf-8")
    return path


def views(seq) -> dict[str, LeverStatus]:
    return {v.id: v for v in seq.views.status().levers}


def states(seq) -> dict[str, str]:
    return {lid: v.state for lid, v in views(seq).items()}


def snapshot(seq) -> dict:
    status = seq.views.status()
    return {"levers": [(v.id, v.state, v.outcome, v.stale_reason, v.why_blocked) for v in status.levers],
            "infra": status.infra, "next": status.next, "todo": status.todo}


def assert_replays(plan: Path, db: Path, seq) -> None:
    """A fresh Sequencer on the same store reaches the very same states."""
    with Sequencer.open(plan, db, mode="read") as again:
        assert snapshot(again) == snapshot(seq)
        assert again.views.history() == seq.views.history()


def results_row(doc: str, start: str) -> str:
    """The row of the export's Results table that starts with `start`."""
    results = doc.split("\n## Results\n", 1)[1].split("\n## ", 1)[0]
    return next(line for line in results.splitlines() if line.startswith(start))


def cli(env: dict, *args: str, code: int | None = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run([*OPTSEQ, *args], env=env, capture_output=True, text=True, timeout=120)
    assert code is None or proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    return proc


def status(env: dict) -> dict:
    return json.loads(cli(env, "status", "--json").stdout)


def of(st: dict, lever_id: str) -> dict:
    return next(v for v in st["levers"] if v["id"] == lever_id)


# -- 5. reversals -------------------------------------------------------------------------------------------
@pytest.fixture
def gate_plan(tmp_path) -> Path:
    return write_plan(tmp_path / "gate.toml", GATE,
                      lever_block("fast", extra='requires = "gate:GO"'),
                      lever_block("slow_track", "infra", extra='requires = "gate:NO-GO"'),
                      lever_block("other"),
                      lever_block("after_fast", extra='requires = "fast:adopt"'))


def test_reversed_gate_closes_its_branch_and_takes_its_levers_out_of_the_stack(gate_plan, db):
    with Sequencer.open(gate_plan, db, mode="write") as seq:
        seq.actions.decide("gate", "GO", "A passes")
        assert states(seq)["slow_track"] == "closed"
        assert views(seq)["slow_track"].why_blocked == ["closed: gate decided GO"]
        fast = seq.run_lever("fast")
        other = seq.run_lever("other")  # measured with fast in the stack
        seq.run_lever("after_fast")
        assert (fast.decision, other.decision) == ("adopt", "adopt")
        assert seq.store.get("runs", other.run_id)["infra"]["adopted"] == ["fast"]
        assert states(seq)["after_fast"] == "adopted"

        seq.actions.decide("gate", "NO-GO", "A failed on the real data after all")
        st = states(seq)
        assert st["fast"] == "closed" and st["after_fast"] == "closed"
        assert views(seq)["fast"].why_blocked == ["closed: gate decided NO-GO"]
        assert st["slow_track"] == "ready"  # re-opened: closed by GO's branch, its gate holds now
        assert seq.machine.infra()["adopted"] == ["other"]  # stale, still in the stack until re-measured
        other_view = views(seq)["other"]
        assert other_view.state == "stale" and other_view.outcome == "adopt"
        assert other_view.stale_reason == (f"fast left the stack (gate decided NO-GO) after other was "
                                              f"measured with it in run {other.run_id}")
        reversal = seq.views.history("gate")["decisions"][-1]
        fast_decision = seq.views.history("fast")["decisions"][-1]
        assert fast_decision["outcome"] == "adopt"  # kept in history...
        assert fast_decision["superseded"] is True  # ...marked superseded by the reversal
        assert fast_decision["superseded_by"] == (f"decision {reversal['id']}: closed: gate decided NO-GO")
        assert seq.views.history("gate")["decisions"][0]["superseded"] is True
        events = [e for e in seq.views.history("fast")["events"] if e["type"] == "superseded"]
        assert [(e["decision"], e["by"]) for e in events] == [(fast_decision["id"], reversal["id"])]
        assert_replays(gate_plan, db, seq)

        # re-reversing works the same way: the GO branch opens again from scratch, NO-GO's closes
        seq.actions.decide("gate", "GO", "A passes on the re-run")
        st = states(seq)
        assert st["fast"] == "ready" and views(seq)["fast"].outcome is None
        assert st["slow_track"] == "closed" and st["after_fast"] == "blocked"
        assert seq.views.status().next == "fast"
        assert_replays(gate_plan, db, seq)
        again = seq.run_lever("fast")
        assert again.decision == "adopt"
        assert seq.views.history("fast")["decisions"][-1]["supersedes"] == fast_decision["id"]
        assert states(seq)["after_fast"] == "ready"
        assert_replays(gate_plan, db, seq)


def test_a_lever_closed_by_a_reversal_refuses_run_plan_and_decide(gate_plan, cli_env):
    env = dict(cli_env, OPTSEQ_PLAN=str(gate_plan))
    cli(env, "decide", "gate", "GO", "--why", "A passes")
    cli(env, "decide", "gate", "NO-GO", "--why", "reversed")
    proc = cli(env, "--run", "fast", code=3)
    assert "closed: gate decided NO-GO" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "closed" in cli(env, "decide", "fast", "adopt", "--why", "x", code=2).stderr
    assert "closed" in cli(env, "plan", "fast", "p.md", code=2).stderr
    st = status(env)
    assert of(st, "slow_track")["state"] == "ready" and st["next"] == "slow_track"


def test_default_plan_go_then_no_go_reopens_option_b_and_closes_the_port(cli_env, db):
    env = cli_env
    cli(env, "record", "julia_port", "torch_jl", "c4", "pass", "--evidence", "1.1x of PyTorch")
    st = status(env)
    assert of(st, "julia_port")["outcome"] == "GO" and of(st, "port")["state"] == "unplanned"
    cli(env, "plan", "port", "docs/plans/port.md", "--missing-ok")
    cli(env, "decide", "port", "adopt", "--why", "the port is done and merged")
    assert status(env)["infra"]["adopted"] == ["cython_bot", "port"]

    cli(env, "decide", "julia_port", "NO-GO", "--why", "Torch.jl c4 re-measured: 0.8x")
    st = status(env)
    assert of(st, "julia_port")["outcome"] == "NO-GO"
    assert of(st, "port")["state"] == "closed" and of(st, "port")["outcome"] is None
    assert of(st, "port")["note"] == "closed: julia_port decided NO-GO"
    assert st["infra"]["adopted"] == ["cython_bot"]
    assert of(st, "option_b")["state"] == "unplanned"
    history = json.loads(cli(env, "runs", "port", "--json").stdout)
    (port_decision,) = history["decisions"]
    assert port_decision["superseded"] is True and "julia_port decided NO-GO" in port_decision["superseded_by"]
    assert "(superseded)" in cli(env, "runs", "port").stdout
    cli(env, "plan", "option_b", "docs/plans/option_b.md", "--missing-ok")
    st = status(env)
    assert of(st, "option_b")["state"] == "ready" and st["next"] == "option_b"

    cli(env, "decide", "julia_port", "GO", "--why", "back to GO")
    st = status(env)
    assert of(st, "port")["state"] == "ready"  # its plan is still written
    assert of(st, "option_b")["state"] == "closed"
    assert st["infra"]["adopted"] == ["cython_bot"]
    with Sequencer.open(DEFAULT_PLAN, db, mode="read") as seq:  # the CLI replayed it; so does a fresh open
        assert [(v.id, v.state, v.outcome) for v in seq.views.status().levers] == \
               [(v["id"], v["state"], v["outcome"]) for v in st["levers"]]
        assert seq.machine.infra() == st["infra"]


# -- 6. the latest evidence rules ---------------------------------------------------------------------------
def remeasure_plans(tmp_path) -> tuple[Path, Path]:
    """The same plan twice: `base` adopts in the first and comes back inconclusive in the second."""
    def plan(name: str, base_args) -> Path:
        return write_plan(tmp_path / name, lever_block("base", args=base_args),
                          lever_block("dep"),
                          lever_block("gated", extra='requires = "base:adopt"'),
                          lever_block("gated_by_hand", extra='requires = "base:adopt"'))
    return plan("adopt.toml", ADOPT), plan("straddle.toml", INCONCLUSIVE)


def test_inconclusive_remeasure_takes_the_lever_out_of_the_stack(tmp_path, db):
    adopt_plan, straddle_plan = remeasure_plans(tmp_path)
    with Sequencer.open(adopt_plan, db, mode="write") as seq:
        first = seq.run_lever("base")
        dep = seq.run_lever("dep")
        assert first.decision == dep.decision == "adopt"
        assert states(seq)["gated"] == "ready"
        seq.actions.decide("gated_by_hand", "adopt", "measured elsewhere")
    with Sequencer.open(straddle_plan, db, mode="write") as seq:
        report = seq.run_lever("base")
        assert report.verdict == "inconclusive" and report.decision is None
        run = seq.store.get("runs", report.run_id)
        assert run["verdict"] == "inconclusive" and run["summary"]["verdict"]["reason"]
        base = views(seq)["base"]
        assert base.state == "measured" and base.outcome is None and base.decision is None
        assert "base" not in seq.machine.infra()["adopted"]
        assert base.remeasured.startswith(f"re-measured inconclusive in run {report.run_id}: ")
        assert base.remeasured.endswith("; was adopt")
        dep_view = views(seq)["dep"]
        assert dep_view.state == "stale"
        assert dep_view.stale_reason == (f"base left the stack (base re-measured inconclusive in run "
                                            f"{report.run_id}) after dep was measured with it in run {dep.run_id}")
        assert states(seq)["gated"] == "blocked"  # its gate base:adopt no longer holds
        by_hand = views(seq)["gated_by_hand"]  # decided, gated on base: stale, as it lost its gate
        assert by_hand.state == "stale" and by_hand.stale_reason.startswith(
            f"base left the stack (base re-measured inconclusive in run {report.run_id}); base is not decided")
        (old,) = seq.views.history("base")["decisions"]
        assert old["superseded"] is True and old["superseded_by"].startswith(f"run {report.run_id}: ")
        assert any(f"base: decide it (re-measured inconclusive in run {report.run_id}" in t
                   for t in seq.views.status().todo)
        doc = seq.views.export(lang="en")
        row = results_row(doc, "| **base** |")
        assert "| inconclusive | items_per_s |" in row
        assert f"re-measured inconclusive in run {report.run_id}: " in row and "; was adopt 1.5" in row
        assert f"- ⏳ base: measured, awaiting a decision — re-measured inconclusive in run {report.run_id}" in doc
        assert re.search(r"- \*\*base\*\*: adopt 1\.5\d× \[1\.\d\d, 1\.\d\d\] \(", doc), doc  # the old decision is history
        assert f"— superseded: re-measured inconclusive in run {report.run_id}" in doc
        assert_replays(straddle_plan, db, seq)

        # the user can keep it: a decision by hand puts it back in the stack
        seq.actions.decide("base", "adopt", f"run {report.run_id} straddles 1.2x; the earlier run was clear")
        assert views(seq)["base"].state == "adopted"
        assert seq.machine.infra()["adopted"] == ["base", "dep", "gated_by_hand"]
        assert seq.views.history("base")["decisions"][-1]["supersedes"] == old["id"]
        assert states(seq)["gated"] == "ready"
        assert_replays(straddle_plan, db, seq)


def test_default_plan_inconclusive_amp_remeasure_after_a_model_size_decision(tmp_path, cli_env, db):
    adopt_plan = default_plan_copy(tmp_path / "adopt.toml", {"amp": ADOPT})
    straddle_plan = default_plan_copy(tmp_path / "straddle.toml", {"amp": INCONCLUSIVE})
    env = dict(cli_env, OPTSEQ_PLAN=str(adopt_plan))
    cli(env, "record", "julia_port", "torch_jl", "c4", "fail", "--evidence", "0.8x of PyTorch")
    cli(env, "plan", "option_b", "docs/plans/option_b.md", "--missing-ok")
    cli(env, "decide", "option_b", "adopt", "--why", "1.4x samples/s")
    cli(env, "decide", "model_size", "h64x3", "--why", "the small config first", "--unmeasured")
    first = json.loads(cli(env, "--run", "amp", "--json").stdout)["runs"][0]
    assert first["decision"] == "adopt" and "amp" in status(env)["infra"]["adopted"]
    cli(env, "decide", "model_size", "h1024x6", "--why", "the bigger model wins", "--unmeasured")
    st = status(env)
    assert of(st, "amp")["state"] == "stale" and "amp" in st["infra"]["adopted"]

    env["OPTSEQ_PLAN"] = str(straddle_plan)
    again = json.loads(cli(env, "--run", "stale", "--json").stdout)
    assert [(r["lever"], r["verdict"]) for r in again["runs"]] == [("amp", "inconclusive")]
    run_id = again["runs"][0]["run_id"]
    st = status(env)
    amp = of(st, "amp")
    assert amp["state"] == "measured" and amp["outcome"] is None
    assert "amp" not in st["infra"]["adopted"] and st["infra"]["model"]["name"] == "h1024x6"
    assert amp["note"].startswith(f"re-measured inconclusive in run {run_id}: ")
    doc = cli(env, "export", "--lang", "en").stdout
    row = results_row(doc, "| **AMP** trainer |")
    assert "| inconclusive | items_per_s |" in row and f"re-measured inconclusive in run {run_id}" in row
    assert "was adopt 1.5" in row
    history = json.loads(cli(env, "runs", "amp", "--json").stdout)
    assert history["runs"][-1]["infra"]["model"]["name"] == "h1024x6"
    assert history["decisions"][-1]["superseded"] is True
    with Sequencer.open(straddle_plan, db, mode="read") as seq:  # replay
        assert states(seq)["amp"] == "measured" and "amp" not in seq.machine.infra()["adopted"]
        assert seq.views.export(lang="en") == doc


# -- 7. dependency order -------------------------------------------------------------------------------------
def test_run_stale_goes_in_dependency_order_not_file_order(tmp_path, db, cli_env):
    # file order and kind order both say `late` first; its remeasure_when says after `early`
    plan = write_plan(tmp_path / "order.toml",
                      lever_block("late", "infra", extra='remeasure_when = ["root", "early"]'),
                      lever_block("early", extra='remeasure_when = ["root"]'),
                      lever_block("root", "infra", run=False),
                      lever_block("watcher", extra='remeasure_when = ["early"]'))
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    cli(env, "decide", "root", "adopt", "--why", "in place")
    for lever_id in ("early", "late", "watcher"):
        cli(env, "--run", lever_id)
    cli(env, "decide", "root", "adopt", "--why", "re-checked: a new version")
    st = status(env)
    assert of(st, "late")["state"] == of(st, "early")["state"] == "stale"
    assert of(st, "watcher")["state"] == "adopted"
    out = json.loads(cli(env, "--run", "stale", "--json").stdout)
    # watcher went stale when early was decided again, during this very invocation: it is re-read and run
    assert [r["lever"] for r in out["runs"]] == ["early", "late", "watcher"]
    st = status(env)
    assert [v["id"] for v in st["levers"] if v["state"] == "stale"] == []  # nothing stale again


def test_remeasure_when_asks_a_re_measure_only_when_the_stack_moves(tmp_path, db, cli_env):
    plan = write_plan(tmp_path / "watch.toml",
                      lever_block("root", "infra", run=False),
                      lever_block("watcher", extra='remeasure_when = ["root"]'))
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    cli(env, "--run", "watcher")
    assert of(status(env), "watcher")["state"] == "adopted"
    cli(env, "decide", "root", "reject", "--why", "not worth it")  # root never was in the stack: nothing moved
    assert of(status(env), "watcher")["state"] == "adopted"
    cli(env, "decide", "root", "adopt", "--why", "it is after all")  # now watcher's baseline lacks root
    st = status(env)
    assert of(st, "watcher")["state"] == "stale"
    assert "root decided adopt" in of(st, "watcher")["stale_reason"]


def test_run_ready_rereads_readiness_and_runs_each_lever_once(tmp_path, cli_env):
    plan = write_plan(tmp_path / "ready.toml",
                      lever_block("second", extra='requires = "first:adopt"'),
                      lever_block("first"),
                      lever_block("crashes", args=["--mode", "crash"]))
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    out = json.loads(cli(env, "--run", "ready", "--json", code=1).stdout)
    # `second` became ready when `first` was adopted (and comes first in the plan); `crashes` is ready again
    # after failing, and is not run a second time
    assert [(r["lever"], r["status"]) for r in out["runs"]] == [("first", "succeeded"), ("second", "succeeded"),
                                                                 ("crashes", "failed")]
    assert of(status(env), "crashes")["state"] == "ready"


# -- 8. next names only what can run ---------------------------------------------------------------------------
def test_next_skips_a_decision_lever_and_says_what_is_left_to_do(tmp_path, cli_env):
    plan = write_plan(tmp_path / "todo.toml", GATE.split("\n[levers.criteria.branches")[0] + "\n",
                      lever_block("fast"))
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    st = status(env)
    assert of(st, "gate")["state"] == "ready" and st["next"] == "fast"
    assert st["todo"] == ["gate: record criteria (a c1 pending)"]
    out = json.loads(cli(env, "--run", "next", "--json").stdout)
    assert [r["lever"] for r in out["runs"]] == ["fast"]
    assert out["next"] is None and out["todo"] == ["gate: record criteria (a c1 pending)"]
    text = cli(env, "status").stdout.splitlines()
    assert text[-2:] == ["next: nothing to run", "to do: gate: record criteria (a c1 pending)"]
    proc = cli(env, "--run", "next", code=3)
    assert "nothing to run for 'next'" in proc.stderr and "gate: record criteria (a c1 pending)" in proc.stderr


def test_default_plan_next_is_nothing_to_run_until_the_gate_is_decided(plan_path, db):
    with Sequencer.open(plan_path, db, mode="write") as seq:
        st = seq.views.status()
        assert st.next is None and st.todo == ["julia_port: record criteria (torch_jl c4 pending)"]
        seq.actions.record_criterion("julia_port", "torch_jl", "c4", "fail")
        assert seq.views.status().todo == ["option_b: write its plan (optseq plan option_b PATH)"]
        seq.actions.write_plan("option_b", "docs/plans/option_b.md")
        assert seq.views.status().next == "option_b" and seq.views.status().todo == []


OTHER_DEVICE = """import json, os
this_pass = int(os.environ.get("OPTSEQ_PASS", "1"))  # fresh numbers every launch: the same ones are a replay
print(json.dumps({"event": "env", "device": "second-device"}))
for i in range(6):
    arms = [("baseline", 100.0), ("candidate", 150.0 + i * 0.01 + this_pass * 0.001)]
    for arm, value in arms if (i + this_pass) % 2 else arms[::-1]:  # A B B A, as kit.pairs runs the arms
        print(json.dumps({"event": "sample", "arm": arm, "metric": "items_per_s", "value": value,
                          "unit": "items/s", "higher_is_better": True, "pair": i}))
print(json.dumps({"event": "done"}))
"""


def test_unavailable_lever_is_skipped_until_the_device_changes(tmp_path, cli_env):
    moved = tmp_path / "other_device.py"
    moved.write_text(OTHER_DEVICE, encoding="utf-8")
    plan = write_plan(tmp_path / "unavailable.toml",
                      lever_block("gpu_only", "infra", args=["--mode", "unavailable"]),
                      lever_block("cpu"),
                      lever_block("elsewhere", script=moved, args=[], extra='requires = "cpu:adopt"'))
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    first = json.loads(cli(env, "--run", "next", "--json", code=3).stdout)["runs"][0]
    assert (first["lever"], first["status"]) == ("gpu_only", "unavailable")  # infra goes first
    st = status(env)
    gpu = of(st, "gpu_only")
    assert gpu["state"] == "ready"
    assert gpu["note"] == f"unavailable: needs a device this machine lacks (run {first['run_id']})"
    assert st["next"] == "cpu"
    assert f"gpu_only   ready    -        unavailable: needs a device this machine lacks (run {first['run_id']})" \
        in cli(env, "status").stdout
    assert any(t.startswith("gpu_only: unavailable: needs a device this machine lacks") for t in st["todo"])

    # `ready` skips it while runs report the same device (cpu: test-device); `elsewhere`, ready once cpu
    # is adopted, reports another device, and then gpu_only is worth a new try in the same invocation
    out = json.loads(cli(env, "--run", "ready", "--json").stdout)
    assert [(r["lever"], r["status"]) for r in out["runs"]] == [("cpu", "succeeded"), ("elsewhere", "succeeded"),
                                                                 ("gpu_only", "unavailable")]
    st = status(env)
    assert of(st, "gpu_only")["unavailable"]["run"] == out["runs"][-1]["run_id"]
    # the device flips made cpu's number stale, and it is next; gpu_only is skipped again
    assert of(st, "cpu")["state"] == "stale" and "device changed" in of(st, "cpu")["stale_reason"]
    assert st["next"] == "cpu"

    # asked for by name it always runs
    by_name = json.loads(cli(env, "--run", "gpu_only", "--json", code=3).stdout)["runs"][0]
    assert (by_name["lever"], by_name["status"]) == ("gpu_only", "unavailable")
