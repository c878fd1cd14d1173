"""A screen's run record as `optseq --run screen` writes it (the shape agreed in issue 40), written into a real store
through the sequencer: the views, status, runs and the export read it as they read a real one. Three levers in a
full factorial, known effects: amp 1.30×, compile 1.10×, tensorrt 1.00×; amp × compile 1.21× and compile × tensorrt
0.80× significant, amp × tensorrt 1.00× [0.97, 1.03] (within the 1.05× the levers' rules ask for: no dependence as
large as their gains)."""
from __future__ import annotations

import itertools
import json

from optseq.state.sequencer import Sequencer

LEVERS = ("amp", "compile", "tensorrt")


def effect(name: str, ratio: float, low: float, high: float, aliases=()) -> dict:
    return {"name": name, "levers": name.split("×"), "ratio": ratio, "low": low, "high": high,
            "aliases": list(aliases)}


MAINS = [effect("amp", 1.30, 1.22, 1.39), effect("compile", 1.10, 1.03, 1.18), effect("tensorrt", 1.00, 0.94, 1.06)]
PAIRS = [effect("amp×compile", 1.21, 1.10, 1.33), effect("amp×tensorrt", 1.00, 0.97, 1.03),
         effect("compile×tensorrt", 0.80, 0.72, 0.89)]
SIGNIFICANT = ("amp×compile", "compile×tensorrt")


def screen(status_blocks: int = 3, launches: int = 24, budget: int = 48, confirmed: bool = True,
           amp_tensorrt: tuple[float, float] | None = None) -> dict:
    """`amp_tensorrt`: that interaction's interval instead of [0.97, 1.03]."""
    pairs = [effect("amp×tensorrt", 1.00, *amp_tensorrt) if amp_tensorrt and p["name"] == "amp×tensorrt" else p
             for p in PAIRS]
    runs = [list(r) for r in itertools.product((-1, 1), repeat=len(LEVERS))]
    calls = {"amp": ("confirm", "1.30× [1.22, 1.39]; its gain depends on compile"),
             "compile": ("confirm", "1.10× [1.03, 1.18]; its gain depends on amp and tensorrt"),
             "tensorrt": ("reject", "1.00× [0.94, 1.06] under 1.05×")}
    step = {"more": 0, "calls": {k: {"lever": k, "outcome": o, "reason": r, "low": None, "high": None}
                                  for k, (o, r) in calls.items()},
            "fit": {"mains": MAINS, "interactions": pairs, "blocks": status_blocks, "runs": 8 * status_blocks,
                    "residual_df": 8 * status_blocks - 10, "sigma": 0.03},
            "interactions": [p for p in PAIRS if p["name"] in SIGNIFICANT],
            "said": ["amp × compile: 1.21× [1.10, 1.33]: amp gains 21% more with compile on",
                     "compile × tensorrt: 0.80× [0.72, 0.89]: compile gains 20% less with tensorrt on"],
            "confirm": ["amp", "compile"], "note": "every lever decided after 3 blocks"}
    return {"levers": list(LEVERS), "seed": 7, "budget": budget, "launches": launches, "step": step,
            "design": {"factors": list(LEVERS), "runs": runs, "generators": [], "resolution": None},
            "blocks": [[(i * 3 + b) % 8 for i in range(8)] for b in range(status_blocks)],
            "confirmed": {"levers": ["amp", "compile"], "run": 2, "outcome": "adopt"} if confirmed else None}


RATE = {(-1, -1): 100.0, (1, -1): 120.0, (-1, 1): 105.0, (1, 1): 152.5}
"""The metric at each setting of (amp, compile) in the samples file: amp's gain 1.20× without compile, 1.45× with."""


def write_screen(plan, db, status: str = "succeeded", **kw) -> dict:
    """The screen's record appended to the store at `db`, as the run leaves it once it ended, with its samples
    file (one sample per design run and block, `arm` run-<index>, as the design mode's driver sends them)."""
    with Sequencer.open(plan, db, mode="write") as seq:
        record = seq.writer.append("runs", {"kind": "screen", "lever": None, "status": status,
                                     "started": "2026-12-01T10:00:00+00:00", "ended": "2026-12-01T10:20:00+00:00",
                                     "screen": screen(**kw), "testbed": seq.lever_runs.testbed})
        design = record["screen"]["design"]
        samples = seq.store.run_dir(record["id"]) / "samples.jsonl"
        samples.parent.mkdir(parents=True, exist_ok=True)
        with open(samples, "w", encoding="utf-8") as out:
            for block, order in enumerate(record["screen"]["blocks"], 1):
                for index in order:
                    amp, compile_ = design["runs"][index][:2]
                    out.write(json.dumps({"event": "sample", "arm": f"run-{index}", "block": block,
                                          "metric": "items_per_s", "value": RATE[(amp, compile_)]}) + "\n")
        with seq.held.lock, seq.writer.writing():
            seq.writer.update_run(record["id"], {"samples_file": str(samples)})
        return record
