"""The screens' stand-in workload (tests/state/lever_scripts/screen_bench.py, known factors and one interaction),
held at a known point: with SCREEN_RELEASE=PATH, a design run of block SCREEN_RELEASE_BLOCK (2 by default) creates
PATH.held (its pid) and waits until PATH exists before it measures, so a test sees a screen mid-way and then lets it end."""
import os
import runpy
import sys
import time
from pathlib import Path

release = os.environ.get("SCREEN_RELEASE")
if release and os.environ.get("OPTSEQ_PAIR") == os.environ.get("SCREEN_RELEASE_BLOCK", "2"):
    Path(release + ".tmp").write_text(str(os.getpid()))  # written aside, then renamed: it appears whole
    os.replace(release + ".tmp", release + ".held")
    while not os.path.exists(release):  # the test's file, not a time: it creates it once it has looked
        time.sleep(0.01)
bench = Path(__file__).parents[1] / "state" / "lever_scripts" / "screen_bench.py"
sys.argv = [str(bench), *sys.argv[1:]]
runpy.run_path(str(bench), run_name="__main__")
