"""The hours-saved section: the calculus's figures per lever, its orders and verdict, in the doc's language."""
from __future__ import annotations

from optseq.state.calculus.words import said_in
from optseq.state.report.escape import block, bullet, cell, code, heading
from optseq.state.report.context import DocContext
from optseq.state.text import ratio_text

COLS = ("Lever", "S", "q", "share", "V (h)", "C (h)", "H (h)", "V* (h)")
"""The table's columns, the calculus's symbols in every language."""
HOURS_WORDS: dict[str, dict[str, str]] = {
    "ko": {
        "heading": "시간 절약 (hours saved)",
        "intro": "{formula} — S: 측정값 또는 prior, q: 채택 확률, share: lever가 빠르게 하는 iteration 비율, "
                 "V: lever 뒤에 남은 계획 실험 시간, C: run 시간 + effort. 계획 volume {hours} h, "
                 "iteration당 {s} s ({source}).",
        "measured": "측정", "prior": "prior", "adopted": "adopt", "rejected": "reject", "declared": "선언",
        "missing": "없음", "assumed": "가정", "default": "기본값",
        "plan_order": "권장 순서 (plan)", "best_order": "최대 절약 순서",
        "assumptions": "가정", "defaults": "기본값", "notes": "참고", "missing_inputs": "빠진 입력",
        "ci_size": "CI 크기에서 측정",
        "ci_size_head": "**CI 크기에서 측정한 비율의 시간 절약**: {levers}의 S는 참조 워크로드를 CI 크기로 측정한 값이며 "
                        "plan의 워크로드 값이 아님. 아래 H는 그 비율을 plan의 시간에 적용한 것.",
    },
    "en": {
        "heading": "Hours saved",
        "intro": "{formula} — S: measured or a prior, q: the chance of adoption, share: the part of an iteration "
                 "the lever speeds up, V: planned experiment hours after the lever, C: its runs' hours plus "
                 "effort. Planned volume {hours} h at {s} s per iteration ({source}).",
        "measured": "measured", "prior": "prior", "adopted": "adopted", "rejected": "rejected",
        "declared": "declared", "missing": "missing", "assumed": "assumed", "default": "default",
        "plan_order": "Plan's order", "best_order": "Order that saves most",
        "assumptions": "Assumptions", "defaults": "Defaults", "notes": "Notes", "missing_inputs": "Missing inputs",
        "ci_size": "measured at CI size",
        "ci_size_head": "**Hours saved from a ratio measured at CI size**: the S of {levers} is the reference "
                        "workload's at CI size, not the plan's workload; the H below applies that ratio to the plan's "
                        "hours.",
    },
}
"""The hours-saved section's words; the calculus's own sentences are in its table (labels.CALCULUS), said here in
the doc's language."""


class Hours:
    """The section the doc writes when the plan declares a volume."""

    def __init__(self, ctx: DocContext):
        self.ctx = ctx

    def section(self) -> str:
        """The hours-saved calculus (optseq.state.calculus.whatif): the figures behind the order, and where they disagree."""
        from optseq.state.calculus import whatif

        plan, lang = self.ctx.plan, self.ctx.lang
        w = HOURS_WORDS[lang]
        report = whatif.compute(plan, self.ctx.machine)
        volume = report["volume"]
        seconds = volume["s_per_iter"]
        source = w[volume["s_per_iter_source"]] + (f", {w['assumed']}" if volume.get("s_per_iter_assumed") else "")
        lines = [heading(2, w["heading"]), "",
                 block(w["intro"].format(formula=code(report["formula"]), hours=whatif.fmt_h(volume["hours"]),
                                          s="—" if seconds is None else f"{seconds:g}", source=source))]
        at_ci = [lv["id"] for lv in report["levers"] if lv.get("s_ci_size")]
        if at_ci:  # the headline says it: a CI bench's ratio credits hours the plan's workload may never see
            lines += ["", block(w["ci_size_head"].format(levers=", ".join(at_ci)))]
        if report["levers"]:
            lines += ["", "| " + " | ".join(COLS) + " |", "|" + " --- |" * len(COLS)]
            for lv in report["levers"]:
                source = w["ci_size"] if lv.get("s_ci_size") else w[lv["s_source"]]
                s_text = "—" if lv["s"] is None else f"{ratio_text(lv['s'])}× {source}"
                if lv["s_low"] is not None and lv["s_high"] is not None:
                    s_text += f" [{ratio_text(lv['s_low'])}, {ratio_text(lv['s_high'])}]"
                h = whatif.fmt_h(lv["h"])
                if lv["h_low"] is not None and lv["h_high"] is not None:
                    h += f" [{whatif.fmt_h(lv['h_low'])}, {whatif.fmt_h(lv['h_high'])}]"
                row = [plan.lever(lv["id"]).title, s_text,
                       "—" if lv["q"] is None else f"{lv['q']:.2f} {w[lv['q_source']]}",
                       f"{lv['share']:g}" + (f" ({w['default']})" if lv["share_source"] == "default" else ""),
                       whatif.fmt_h(lv["v_h"]), whatif.fmt_h(lv["cost_h"]), h, whatif.fmt_h(lv["v_star_h"])]
                lines.append("| " + " | ".join(cell(c) for c in row) + " |")
        lines.append("")
        if report["plan_order"]["order"]:
            lines.append(bullet(f"{w['plan_order']}: {whatif.order_text(report['plan_order']).in_lang(lang)}"))
        if report.get("best_order"):
            lines.append(bullet(f"{w['best_order']}: {whatif.order_text(report['best_order']).in_lang(lang)}"))
        for text in [report.get("verdict")] + [whatif.sequencing_text(s) for s in report.get("sequencing") or ()]:
            if text:
                lines.append(bullet(said_in(text, lang)))
        for key, title in (("assumptions", "assumptions"), ("defaults", "defaults"), ("notes", "notes"),
                           ("missing", "missing_inputs")):
            if report.get(key):
                lines.append(bullet(w[title] + ":"))
                lines += ["  " + bullet(said_in(item, lang)) for item in report[key]]
        return "\n".join(lines)
