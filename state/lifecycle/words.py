"""The lifecycle's sentences in every language the export writes: why a lever went stale, why it closed, why a
decision left the stack. The machine keeps each as English text (what `optseq status` prints, as before) and as a
said, {"key", "fields"}, plain JSON that the store, the snapshot and the derived events keep beside the text, so the
export says it again in its own language (`text(said, lang)`).

The table lives here, below the report, because the machine writes these sentences as it moves and may not import
the report; report/labels.py takes it into each language's labels.
"""
from __future__ import annotations

from optseq.state.plan import gates
from optseq.state.said import said_in as said_or, say, text as said_text  # noqa: F401  say: the tables' writers
from optseq.state.plan.gates import Atom

WORDS: dict[str, dict[str, str]] = {
    "en": {
        "decided": "{lever} decided {outcome}",
        "decided_gate": "{lever} decided {outcome} ({reasons})",
        "landed": "{lever} landed (in the code since {since})",
        "remeasured": "{lever} re-measured inconclusive in run {run}",
        "unlanded": "{commit} is no longer in {base}'s history",
        "unlanded_baseline": "{commit} is no longer in the baseline's history",
        "after_measured": "{cause} after {lever} was measured",
        "plan_changed": "plan changed: {lever}'s {parts} (since run {run})",
        "left_stack_run": "{gone} left the stack ({cause}) after {lever} was measured with it in run {run}",
        "left_stack_gate": "{gone} left the stack ({cause}); {reasons}",
        "closed": "closed: {why}",
        "device_changed": "device changed: measured on {was}, now {now}",
        "torch_changed": "torch changed: measured on {was}, now {now}",
        "code_changed": "workload code changed since run {run}: {how}",
        "code_commits_ago": "measured {count} commit{s} ago ({head})",
        "code_not_held": "measured on a commit HEAD does not hold ({head})",
        "code_diff": "the uncommitted changes differ from the ones it was measured with",
        "eroded_after": "{lever}'s gain eroded ({eroded}) after {other} was measured on top of it in run {run}",
        "eroded": "eroded: {figure} at run {run}{commit}{against}",
        "commit": " (commit {commit})",
        "against_run": " against {figure} when adopted at run {run}{commit}",
        "against_plan": " against {figure} when adopted (the plan's figure)",
        "against_none_hand": " against no figure when adopted (decided by hand, with no run)",
        "against_none_plan": " against no figure when adopted (the plan adopted it and gives none)",
        "against_none_run": " against no figure when adopted at run {run} (its decision kept none)",
        "superseded_remeasured": "re-measured inconclusive in run {run}",
        "superseded_remeasured_why": "re-measured inconclusive in run {run}: {reason}",
        # a gate that does not hold (plan/gates.unmet's sentences)
        "gate_fact": "fact {fact} is not set true (optseq fact {fact} true)",
        "gate_pending": "{lever} is {pending}",
        "gate_undecided": "{lever} is not decided yet ({state}); needs {want}",
        "gate_undecided_any": "{lever} is not decided yet ({state}); needs a decision",
        "gate_decided": "{lever} was decided {outcome}; needs {want}",
        "gate_decided_any": "{lever} was decided {outcome}; needs a decision",
        "gate_one_of": "needs one of: {options}",
        "gate_all": "{reasons}",
        "and": " and ",
    },
    "ko": {
        "decided": "{lever} {outcome} 결정",
        "decided_gate": "{lever} {outcome} 결정 ({reasons})",
        "landed": "{lever} 코드에 포함 ({since}부터)",
        "remeasured": "{lever} run {run} 재측정 결과 inconclusive",
        "unlanded": "{commit}가 더 이상 {base}의 history에 없음",
        "unlanded_baseline": "{commit}가 더 이상 baseline의 history에 없음",
        "after_measured": "{lever} 측정 뒤 {cause}",
        "plan_changed": "plan 변경: {lever}의 {parts} (run {run} 이후)",
        "left_stack_run": "{lever}를 run {run}에서 {gone}와 함께 측정한 뒤 {gone}가 스택에서 빠짐 ({cause})",
        "left_stack_gate": "{gone}가 스택에서 빠짐 ({cause}); {reasons}",
        "closed": "closed: {why}",
        "device_changed": "장치 변경: {was}에서 측정, 지금은 {now}",
        "torch_changed": "torch 변경: {was}에서 측정, 지금은 {now}",
        "code_changed": "run {run} 이후 워크로드 코드 변경: {how}",
        "code_commits_ago": "커밋 {count}개 전에 측정 ({head})",
        "code_not_held": "HEAD에 없는 커밋에서 측정 ({head})",
        "code_diff": "커밋되지 않은 변경이 측정 때와 다름",
        "eroded_after": "{other}를 run {run}에서 {lever} 위에서 측정한 뒤 {lever}의 이득 소실 ({eroded})",
        "eroded": "이득 소실: run {run}{commit}에서 {figure}{against}",
        "commit": " (커밋 {commit})",
        "against_run": ", 채택 시 run {run}{commit}에서 {figure}",
        "against_plan": ", 채택 시 {figure} (plan의 값)",
        "against_none_hand": ", 채택 시 값 없음 (run 없이 수동으로 결정됨)",
        "against_none_plan": ", 채택 시 값 없음 (plan이 값 없이 채택함)",
        "against_none_run": ", 채택 시 run {run}에서 값 없음 (결정에 값이 기록되지 않음)",
        "superseded_remeasured": "run {run} 재측정 결과 inconclusive",
        "superseded_remeasured_why": "run {run} 재측정 결과 inconclusive: {reason}",
        "gate_fact": "fact {fact}가 true가 아님 (optseq fact {fact} true)",
        "gate_pending": "{lever}: {pending}",
        "gate_undecided": "{lever} 아직 결정 안 됨 ({state}); {want} 필요",
        "gate_undecided_any": "{lever} 아직 결정 안 됨 ({state}); 결정 필요",
        "gate_decided": "{lever} {outcome} 결정됨; {want} 필요",
        "gate_decided_any": "{lever} {outcome} 결정됨; 결정 필요",
        "gate_one_of": "다음 중 하나 필요: {options}",
        "gate_all": "{reasons}",
        "and": ", ",
    },
}
"""key -> sentence, per language. A field is a string or number (the same in every language: ids, runs, commits),
a said (said in the same language), or a list of them, joined by JOINS[field name] (the language's `and` else)."""

def text(said: dict, lang: str = "en", words: dict[str, dict[str, str]] | None = None) -> str:
    """`said` in `lang`, from `words` (the lifecycle's table by default)."""
    return said_text(said, lang, words or WORDS)


def said_in(said: dict | None, fallback: str, lang: str, words: dict[str, dict[str, str]] | None = None) -> str:
    """A stored sentence in `lang` where its said was kept, else its stored text (state/said.py)."""
    return said_or(said, fallback, lang, words or WORDS)


def unmet(expr, ctx) -> list[dict]:
    """Why `expr` does not hold, as saids: gates.unmet's sentences, in the same order and words."""
    if expr is None or gates.holds(expr, ctx):
        return []
    if isinstance(expr, Atom):
        if expr.fact:
            return [say("gate_fact", fact=expr.fact)]
        pending = ctx.pending_of(expr.lever)
        if pending:
            return [say("gate_pending", lever=expr.lever, pending=pending)]
        outcome = ctx.outcome_of(expr.lever)
        any_ = expr.outcome == "decided"
        if outcome is None:
            return [say("gate_undecided_any" if any_ else "gate_undecided", lever=expr.lever,
                        state=ctx.state_of(expr.lever), **({} if any_ else {"want": expr.outcome}))]
        return [say("gate_decided_any" if any_ else "gate_decided", lever=expr.lever, outcome=outcome,
                    **({} if any_ else {"want": expr.outcome}))]
    if expr.op == "all":
        return [reason for item in expr.items for reason in unmet(item, ctx)]
    return [say("gate_one_of", options=[say("gate_all", reasons=unmet(item, ctx)) for item in expr.items])]
