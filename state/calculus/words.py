"""The calculus's sentences in every language the export writes, and `Said`, one sentence of them as the CLI prints
it (English) that the export can say in its own language.

The table lives here, below the report, because the calculus writes these sentences as it weighs (a note, a missing
input) and may not import the report; report/labels.py takes it into each language's labels.
"""
from __future__ import annotations

WORDS: dict[str, dict[str, str]] = {
    "en": {
        "adopted_since": "adopted since the plan ({levers}): their savings count against the declared s_per_iter, "
                         "the plan's stack before them",
        "no_volume": "volume: the plan declares no [volume] (planned experiments and s_per_iter): no hours can be "
                     "weighed",
        "s_ci_size": "{lever}: S {s}× is the reference workload's at CI size, not the plan's workload",
        "s_prior": "{lever}: S {s}× is a prior",
        "s_prior_note": "{lever}: S {s}× is a prior ({note})",
        "s_plan_prior": "{lever}: S {s}× is the plan's prior",
        "q_prior": "{lever}: q {q:.2f} is a prior (expect.p_adopt)",
        "lacking_run": "{lever}: {inputs}: not measured and no prior (optseq --run {lever}, or declare "
                       "expect = {{ {keys} }})",
        "lacking": "{lever}: {inputs}: not measured and no prior (declare expect = {{ {keys} }})",
        "both": "{a} and {b}",
        "runs_untimed": "{lever}: {n} run(s) without start and end times: their hours are not in C",
        "share_default": "share not declared, 1 counted (the whole iteration): {levers}",
        "effort_default": "effort_h not declared, 0 h counted: {levers}",
        "no_cost": "no run yet either, so C = 0: {levers}",
        "s_per_iter_unmeasured": "volume.s_per_iter: not declared, and {lever} has no measured {metric} yet",
        "s_per_iter_missing": "volume.s_per_iter: not declared (seconds per training iteration)",
        "s_per_iter_assumed": "volume.s_per_iter = {s:g} s (assumed)",
        "s_per_iter_ci_size": "volume.s_per_iter: {lever}'s {metric} is the reference workload's at CI size, not "
                              "the plan's workload",
        "s_per_iter_unit": "volume.s_per_iter_from: {lever}'s {metric} is in '{unit}', not seconds",
        "experiment_assumed": "{experiment}: {values} (assumed)",
        "experiment_closed": "{experiment}: {lever} is closed: its planned runs count nothing",
        "straddles": "{lever}: its S interval [{low}, {high}] straddles 1: it may slow an iteration "
                     "(H low–high in the table)",
        "tried_every": "{n} order{s} tried",
        "tried_greedy": "greedy, {n} tried",
        "agrees": "the plan's order nets as much as any ({tried}): {net:.2f} h",
        "agrees_avoids": "the plan's order nets as much as any ({tried}): {net:.2f} h; {order} also avoids {n} "
                         "re-run{s} of unknown hours ({reruns})",
        "disagrees": "the calculus disagrees with the plan's order: {order} nets {best:.2f} h against the plan's "
                     "{planned:.2f} h (+{gain:.2f} h; {tried})",
        "disagrees_fewer": "the calculus disagrees with the plan's order: {order} nets {best:.2f} h against the "
                           "plan's {planned:.2f} h (+{gain:.2f} h, {n} fewer re-run{s}; {tried})",
        "rerun_after": "{experiment} after {lever}",
        "rerun_hours": "{experiment} after {lever}: {hours} h",
        "order": "{order}: saves {saved} h, costs {cost} h; net {net} h",
        "order_reruns": "{order}: saves {saved} h, costs {cost} h, forces {n} re-run{s} ({reruns}); net {net} h",
        "gate_holds": "{lever} before {experiment} (the plan's gate) nets {first} h; {experiment} first nets "
                      "{reverse} h ({n} re-run{s}): {lever} first holds, by {gain} h",
        "gate_fails": "{lever} before {experiment} (the plan's gate) nets {first} h; {experiment} first nets "
                      "{reverse} h ({n} re-run{s}): the calculus would run {experiment} first, {gain} h better",
    },
    "ko": {
        "adopted_since": "plan 이후 채택됨 ({levers}): 절약 시간은 선언된 s_per_iter(그 전 plan의 스택) 기준으로 계산",
        "no_volume": "volume: plan에 [volume] 선언 없음 (계획된 실험과 s_per_iter): 시간 계산 불가",
        "s_ci_size": "{lever}: S {s}×는 참조 워크로드의 CI 크기 값이며 plan의 워크로드 값이 아님",
        "s_prior": "{lever}: S {s}×는 prior",
        "s_prior_note": "{lever}: S {s}×는 prior ({note})",
        "s_plan_prior": "{lever}: S {s}×는 plan의 prior",
        "q_prior": "{lever}: q {q:.2f}는 prior (expect.p_adopt)",
        "lacking_run": "{lever}: {inputs}: 측정값도 prior도 없음 (optseq --run {lever}, 또는 expect = {{ {keys} }} 선언)",
        "lacking": "{lever}: {inputs}: 측정값도 prior도 없음 (expect = {{ {keys} }} 선언)",
        "both": "{a}, {b}",
        "runs_untimed": "{lever}: 시작·종료 시각 없는 run {n}개: 그 시간은 C에 빠짐",
        "share_default": "share 미선언, 1로 계산 (iteration 전체): {levers}",
        "effort_default": "effort_h 미선언, 0 h로 계산: {levers}",
        "no_cost": "run도 아직 없어 C = 0: {levers}",
        "s_per_iter_unmeasured": "volume.s_per_iter: 미선언, {lever}의 {metric} 측정값도 아직 없음",
        "s_per_iter_missing": "volume.s_per_iter: 미선언 (학습 iteration당 초)",
        "s_per_iter_assumed": "volume.s_per_iter = {s:g} s (가정)",
        "s_per_iter_ci_size": "volume.s_per_iter: {lever}의 {metric}는 참조 워크로드의 CI 크기 값이며 plan의 워크로드 "
                              "값이 아님",
        "s_per_iter_unit": "volume.s_per_iter_from: {lever}의 {metric} 단위가 '{unit}', 초가 아님",
        "experiment_assumed": "{experiment}: {values} (가정)",
        "experiment_closed": "{experiment}: {lever} closed: 계획된 run은 계산하지 않음",
        "straddles": "{lever}: S 구간 [{low}, {high}]이 1에 걸침: iteration을 느리게 할 수도 있음 (표의 H 하한–상한)",
        "tried_every": "순서 {n}개 시도",
        "tried_greedy": "greedy, {n}개 시도",
        "agrees": "plan의 순서가 어느 순서 못지않게 절약 ({tried}): {net:.2f} h",
        "agrees_avoids": "plan의 순서가 어느 순서 못지않게 절약 ({tried}): {net:.2f} h; {order} 순서는 시간을 모르는 "
                         "재실행 {n}개도 피함 ({reruns})",
        "disagrees": "계산 결과가 plan의 순서와 다름: {order} 순서가 {best:.2f} h, plan의 순서는 {planned:.2f} h "
                     "(+{gain:.2f} h; {tried})",
        "disagrees_fewer": "계산 결과가 plan의 순서와 다름: {order} 순서가 {best:.2f} h, plan의 순서는 {planned:.2f} h "
                           "(+{gain:.2f} h, 재실행 {n}개 적음; {tried})",
        "rerun_after": "{lever} 뒤 {experiment}",
        "rerun_hours": "{lever} 뒤 {experiment}: {hours} h",
        "order": "{order}: {saved} h 절약, 비용 {cost} h; 순 {net} h",
        "order_reruns": "{order}: {saved} h 절약, 비용 {cost} h, 재실행 {n}개 ({reruns}); 순 {net} h",
        "gate_holds": "{experiment} 전에 {lever} (plan의 gate): {first} h; {experiment} 먼저: {reverse} h "
                      "(재실행 {n}개): {lever} 먼저가 {gain} h 더 나음",
        "gate_fails": "{experiment} 전에 {lever} (plan의 gate): {first} h; {experiment} 먼저: {reverse} h "
                      "(재실행 {n}개): 계산으로는 {experiment} 먼저가 {gain} h 더 나음",
    },
}
"""key -> sentence, per language; `{s}` is the English plural's `s` (other languages leave it out)."""


class Said(str):
    """One sentence of the calculus: the string is its English, as the CLI and `whatif --json` print it; `key` and
    `fields` say it again in another language (`in_lang`). A field may be a Said or a list of them (said in the
    same language, a list joined by commas)."""

    key: str
    fields: dict

    def __new__(cls, key: str, **fields) -> "Said":
        self = super().__new__(cls, _fill("en", key, fields))
        self.key, self.fields = key, fields
        return self

    def in_lang(self, lang: str) -> str:
        return _fill(lang, self.key, self.fields)

    def __reduce__(self):  # a copy or a pickle is made again from the key and fields, not from the English
        return _said, (self.key, self.fields)


def _said(key: str, fields: dict) -> Said:
    return Said(key, **fields)


def said_in(text: str, lang: str) -> str:
    """`text` in `lang` where it is a Said; any other string as it is."""
    return text.in_lang(lang) if isinstance(text, Said) else text


def plural(n: int) -> str:
    return "s" * (n != 1)


def _fill(lang: str, key: str, fields: dict) -> str:
    def said(value):
        if isinstance(value, Said):
            return value.in_lang(lang)
        if isinstance(value, list):
            return ", ".join(str(said(v)) for v in value)
        return value

    return WORDS[lang][key].format(**{name: said(value) for name, value in fields.items()})
