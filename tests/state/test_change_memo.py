"""Change points found once are answered from the user's cache: the same history segmented again in a new process
gives the same change points without importing ruptures (and numpy and scipy, a second of imports); a kept file
that is damaged or not an answer for the series is no answer, and the series is segmented again."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SERIES = [1.50, 1.52, 1.49, 1.51, 1.50, 1.48, 1.05, 1.04, 1.06, 1.05, 1.03, 1.05]
"""A lever's ratios with a step at run 7."""
FIND = f"""
import json, sys
from optseq.state.runs import change_points
shifts = change_points.find({SERIES!r})
print(json.dumps({{"at": [s.at for s in shifts], "ruptures": "ruptures" in sys.modules}}))
"""


def find(cache: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", FIND], env={**os.environ, "XDG_CACHE_HOME": str(cache)},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_history_segmented_before_is_answered_without_ruptures(tmp_path):
    first = find(tmp_path)
    assert first == {"at": [6], "ruptures": True}
    (kept,) = (tmp_path / "optseq" / "change-points").glob("*.json")
    assert json.loads(kept.read_text()) == [6]
    assert find(tmp_path) == {"at": [6], "ruptures": False}


def test_a_kept_answer_that_is_damaged_or_out_of_the_series_is_segmented_again(tmp_path):
    find(tmp_path)
    (kept,) = (tmp_path / "optseq" / "change-points").glob("*.json")
    for damage in ('[6', '"six"', '[0]', f'[{len(SERIES)}]', '[6, 6]', '[true]', ''):
        kept.write_text(damage)
        assert find(tmp_path) == {"at": [6], "ruptures": True}, damage
        assert json.loads(kept.read_text()) == [6]  # the answer kept again
