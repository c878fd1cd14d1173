"""`optseq whatif`: the hours-saved calculus (optseq.state.calculus.whatif) as a table, or as JSON with --json."""
from __future__ import annotations

import json

from optseq.state.api import fmt_h, order_text, sequencing_text
from optseq.state.api import ratio_text
from optseq.state.api import Exit


def run_whatif(seq, as_json: bool) -> int:
    report = seq.views.whatif()
    print(json.dumps(report, ensure_ascii=False, indent=2) if as_json else render(report))
    return Exit.OK


def render(report: dict) -> str:
    lines = [f"hours saved: {report['formula']}"]
    lines += _volume(report["volume"])
    if report["levers"]:
        lines += ["", *_table(report["levers"])]
    else:
        lines += ["", "no pending speed-up levers"]
    planned, best = report["plan_order"], report.get("best_order")
    if report["volume"].get("declared") and planned["order"]:
        lines += ["", "plan's order: " + order_text(planned)]
        if best:
            lines.append(f"best order ({best['method']}, {best['tried']} tried): " + order_text(best))
        if report.get("verdict"):
            lines.append(report["verdict"])
        for seq in report.get("sequencing") or ():
            lines.append(sequencing_text(seq))
    for title, key in (("assumptions", "assumptions"), ("defaults", "defaults"), ("notes", "notes"),
                       ("missing inputs", "missing")):
        if report.get(key):
            lines += ["", f"{title}:"] + [f"  - {item}" for item in report[key]]
    return "\n".join(lines)


def _volume(volume: dict) -> list[str]:
    if not volume.get("declared"):
        return ["volume: not declared"]
    seconds = volume["s_per_iter"]
    source = volume["s_per_iter_source"] + (", assumed" if volume.get("s_per_iter_assumed") else "")
    per_iter = f"{seconds:g} s per iteration ({source})" if seconds is not None else "s per iteration missing"
    lines = [f"volume: {fmt_h(volume['hours'])} h ahead at {per_iter}"]
    rows = [(e["id"], f"{_n(e['configs'], 'config')} × {e['iterations']} iter × {_n(e['runs'], 'run')}"
             + (f" ({e['done']} done)" if e["done"] else ""),
             f"{fmt_h(e['ahead_h'])} h", e["at"] if e["at"] in ("after every lever", "closed") else "at " + e["at"],
             ("assumed: " + ", ".join(e["assumed"])) if e["assumed"] else "")
            for e in volume["experiments"]]
    return lines + ["  " + line for line in _columns(rows)]


def _table(levers: list[dict]) -> list[str]:
    rows = [("lever", "S", "q", "share", "V (h)", "C (h)", "H (h)", "V* (h)")]
    for lv in levers:
        s = "—" if lv["s"] is None else f"{ratio_text(lv['s'])}× {lv['s_source']}"
        if lv["s_low"] is not None and lv["s_high"] is not None:
            s += f" [{ratio_text(lv['s_low'])}, {ratio_text(lv['s_high'])}]"
        q = "—" if lv["q"] is None else f"{lv['q']:.2f} {lv['q_source']}"
        share = f"{lv['share']:g}" + (" default" if lv["share_source"] == "default" else "")
        h = fmt_h(lv["h"])
        if lv["h_low"] is not None and lv["h_high"] is not None:
            h += f" [{fmt_h(lv['h_low'])}, {fmt_h(lv['h_high'])}]"
        rows.append((lv["id"], s, q, share, fmt_h(lv["v_h"]), fmt_h(lv["cost_h"]), h, fmt_h(lv["v_star_h"])))
    return _columns(rows)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"


def _columns(rows: list[tuple]) -> list[str]:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(str(c).ljust(widths[i]) for i, c in enumerate(row)).rstrip() for row in rows]
