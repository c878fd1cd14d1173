"""One exit-code table (state/exits.py): each number one meaning across commands, documented once in
docs/exit-codes.md with every code and what changed for old scripts, and said as such in the README and in
`optseq compare --help`. The codes themselves are asserted where each command gives them (test_sync_cli: 4,
test_compare_says: 8, test_branch_levers: 7, test_failed_checkout: a compare's failed run is 1)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from optseq.state.exits import Exit

ROOT = Path(__file__).resolve().parents[2]


def _table(text: str, header: str) -> list[list[str]]:
    lines = text[text.index(header):].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_each_number_means_one_thing_and_the_doc_lists_every_one():
    assert len({int(code) for code in Exit}) == len(Exit)
    doc = (ROOT / "docs" / "exit-codes.md").read_text(encoding="utf-8")
    rows = _table(doc, "| code | name |")
    assert [(int(row[0]), row[1].strip("`")) for row in rows] == [(int(code), code.name) for code in Exit]
    changed = _table(doc, "| what | before | now |")
    assert [(row[1], row[2]) for row in changed] == [("1", str(int(Exit.SLOWER))), ("3", str(int(Exit.INCONCLUSIVE))),
                                                     ("4", str(int(Exit.RUN_FAILED))),
                                                     ("1", str(int(Exit.SYNC_REFUSED)))]


def test_the_readme_says_every_code_and_tells_old_scripts():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    said = readme[readme.index("Exit codes, one number one meaning"):]
    said = " ".join(said[:said.index("\n\n")].split())
    for code in ("0 ok", "1 a run failed", "2 bad input", "3 nothing to run", "4 a sync refused", "5 a guard failed",
                 "6 an adopted gain eroded", "7 slower", "8 inconclusive", "130/143/129"):
        assert code in said, code
    assert "**Old scripts:**" in said and "docs/exit-codes.md" in said
    # the compare table's exit column is the enum's
    rows = {row[0].strip("`"): row[2] for row in _table(readme, "| verdict | means | exit |")}
    assert rows == {"not slower": "0", "slower": "7", "inconclusive": "8", "the run failed": "1",
                    "a guard failed": "5"}


def test_compare_help_says_its_codes_from_the_table():
    proc = subprocess.run([sys.executable, "-m", "optseq.console.cli", "compare", "--help"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    found = dict((m.group(2), int(m.group(1))) for m in re.finditer(r"(\d) (not slower|slower|inconclusive|the run "
                                                                        r"failed|a guard failed|bad input)", text))
    assert found == {"not slower": Exit.OK, "slower": Exit.SLOWER, "inconclusive": Exit.INCONCLUSIVE,
                     "the run failed": Exit.RUN_FAILED, "a guard failed": Exit.GUARD_FAILED,
                     "bad input": Exit.BAD_INPUT}, text
