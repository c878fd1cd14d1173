"""`optseq status`: the levers' table, what is next and what waits on the user."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from optseq.state.api import Status


def render_status(status: Status, width: int | None = None) -> str:
    """The status as a table; with a `width` (a terminal's), no line is wider: a long note wraps under an indent."""
    from optseq.console.commands.fit import fit
    from optseq.state.api import fmt_h

    hours = any(lever.saved is not None for lever in status.levers)
    rows = [("lever", "state", "outcome", *(("saved h",) if hours else ()), "why / note")]
    for lever in status.levers:
        # expected hours saved in the plan's order (optseq whatif): only where the plan declares its volume
        saved = (fmt_h(lever.saved),) if hours else ()
        rows.append((lever.id, lever.state, lever.outcome or "-", *saved, lever.note or ""))
    columns = len(rows[0]) - 1
    widths = [max(len(r[i]) for r in rows) for i in range(columns)]
    lines = fit(f"plan {status.plan}  (as of {status.as_of})" + ("  [read-only]" if status.readonly else ""), width)
    said = testbed_line(status.testbed)
    if said:
        lines += fit(said, width)
    if not status.levers:  # a plan for `optseq compare` alone: nothing to show but that
        return "\n".join(lines + fit("no levers: the plan declares its [workload] only, what `optseq compare BASE "
                                      "HEAD` measures (`optseq runs` lists the compares)", width))
    for row in rows:
        lines += fit("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:columns])) + "  " + row[-1], width)
    if status.screen:  # the newest screen over several levers (optseq --run screen)
        from optseq.state.api import screen_summary_lines as summary_lines

        for line in summary_lines(status.screen):
            lines += fit(line, width)
    for claim in status.screen_claims:  # the plan's edges the screens' data contradicts
        lines += fit(f"plan vs data: {claim.text}", width)
    # `next` only names a lever that can run; what else waits on the user is the to-do
    lines += fit(f"next: {status.next or 'nothing to run'}", width)
    for item in status.todo:
        lines += fit(f"to do: {item}", width)
    return "\n".join(lines)


def testbed_line(testbed: dict) -> str | None:
    """`testbed: laptop (vm-d53289: vm · Xeon × 2 · Linux 6); the plan's numbers are gpu-box's; runs from
    gpu-box, laptop`: said once the store holds another testbed's runs or the plan names the deciding one; a
    one-machine store's status has no line for it (`optseq doctor` names its parts)."""
    from optseq.state.api import testbed_text as text

    seen, decides = sorted(testbed.get("seen") or {}), testbed.get("decides")
    if testbed.get("error"):
        return f"testbed: {testbed['error']}"
    if len(seen) <= 1 and not decides and (not seen or seen == [testbed.get("name")]):
        return None
    line = f"testbed: {text(testbed)}"
    if decides:
        line += f"; the plan's numbers are {decides}'s" + ("" if decides in (testbed.get("name"), testbed.get("id"))
                                                           else ": runs here decide nothing")
    return line + (f"; runs from {', '.join(seen)}" if seen else "")
