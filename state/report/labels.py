"""The export's fixed words, one dict per language; plan text never passes through here. The hours-saved calculus
writes its sentences below the report: their table (CALCULUS, state/calculus/words.py) is taken in here, and so are
the lifecycle's (LIFECYCLE, state/lifecycle/words.py: why a lever went stale or closed, why a decision left the
stack), which the machine keeps beside their English, and a run's (RUNS, state/runs/words.py: its noise line)."""
from __future__ import annotations

from optseq.state.calculus.words import WORDS as CALCULUS  # noqa: F401  the hours-saved section's sentences
from optseq.state.lifecycle.words import WORDS as LIFECYCLE  # noqa: F401  stale, closed and superseded reasons
from optseq.state.runs.words import WORDS as RUNS  # noqa: F401  a run's noise line
from optseq.state.code.words import WORDS as CODE  # a branch lever's moved code

STORED = {lang: {**CODE[lang], **RUNS[lang], **LIFECYCLE[lang]} for lang in LIFECYCLE}
"""Every table a stored reason is said from: a stale reason may be the code room's (a moved branch), a superseded
one nests the rule's (runs) in the lifecycle's."""

MARKS = {"done": "✅", "now": "⏳", "waiting": "⏸", "rejected": "❌", "closed": "—", "eroded": "⚠️"}
"""The doc's marks for lifecycle.states.MARK's words; the same in every language. `eroded`: an adopted lever whose
gain a watch found gone, which ✅ would call done."""

LABELS: dict[str, dict[str, str]] = {
    "ko": {
        # headings and fixed lines (the seed's own words)
        "pending": "Pending levers",
        "col_lever": "Lever",
        "col_plan": "어디서 nail되는지",
        "col_state": "현재 상태",
        "graph": "의존성 그래프",
        "order": "권장 순서와 사유",
        "status": "현재 진행 상태 ({date})",
        "conflict": "{lever}: 동시에 결정됨 (어느 쪽도 상대의 결정을 보지 못함): {hw}의 {holds} ({hwhy}), {ow}의 {other} "
                    "({owhy}); 누군가 다시 결정할 때까지 나중 것 {holds} 유지",
        "points": "결정 점들",
        "points_intro": "언제 이 doc 다시 보는가:",
        "results": "측정 결과",
        "history": "이전 결정",
        "history_more": "이전 결정 {n}건 더 (`optseq runs {lever}`)",
        "nothing_measured": "아직 측정 결과 없음.",
        "nothing_pending": "결정 대기 중인 lever 없음.",
        # results table
        "col_outcome": "결과",
        "col_metric": "지표",
        "col_ratio": "비율",
        "col_ci": "95% CI",
        "col_n": "n",
        "col_p": "p",
        "col_date": "날짜",
        "col_source": "근거",
        "col_note": "비고",
        # state words
        "no_plan": "plan 미작성",
        "arms": "명령 쌍 (command pair)",
        "ready": "준비됨",
        "next": " (next)",
        "unplanned": "plan 대기",
        "running": "측정 중",
        "measured": "측정 완료, 결정 대기",
        "blocked": "대기: {reasons}",
        "stale": "stale: {reason}",
        "closed": "closed: {reason}",
        "closed_mark": "— closed",
        "eroded_mark": "이득 소실",
        "stale_mark": "⏳ stale",
        "taken": "(선택됨)",
        "auto": "자동",
        "manual": "수동",
        "plan_source": "plan",
        "ci_size": "참조 워크로드, CI 크기",
        "testbed": "{name}에서 측정",
        "writer": "{writer}의 결정",
        "superseded": "대체됨",
        "superseded_by": "대체됨: {reason}",
        "inconclusive": "inconclusive",
        "measured_inconclusive": "run {run} 결과 inconclusive: {reason}",
        "remeasured": "run {run} 재측정 결과 inconclusive: {reason}; 이전 결정 {was}",
        "unavailable": "실행 불가: {reason} (run {run})",
        "arms_branch": "브랜치 {ref}",
        "unmerged": "스택에 넣으려면 {ref} ({commit}) merge 필요",
        "unmerged_mark": "⏳ merge 대기",
        "landed": "{since}부터 코드에 포함",
        # gate reasons
        "needs_decided": "{lever} 결정 필요",
        "needs_outcome": "{lever} {outcome} 필요",
        "wrong_outcome": "{lever} {got} 결정됨 ({want} 필요)",
        "needs_fact": "fact {fact} 필요",
        "needs_merge": "{lever} 채택됨, {ref} ({commit}) merge 필요",
        "or": " 또는 ",
        "and": ", ",
        # candidates of a decision lever
        "cand_pending": "pending",
        "cand_pass": "PASS",
        "cand_fail": "FAIL",
        # decision points
        "fired": " — {date} 발생",
        "reopens": "; 다시 볼 lever: {levers}",
        "reopens_one": "; 다시 볼 lever: {levers}",
        "stays_closed": "; {lever}: closed 유지, {why}",
        "stays_blocked": "; {lever}: 대기 유지, {why}",
        # change points in a lever's history (report/change_lines.py)
        "changes": "변화 지점",
        "changes_intro": "lever의 측정 비율이 run 사이에서 다른 수준으로 옮겨간 곳: 어디를 볼지에 대한 힌트일 뿐 결정이 "
                         "아님 (결정은 각 run의 paired test).",
        "change_at": "run {run}에서 변화: {before} → {after}",
        "change_commits": ", 커밋 {span} 사이 ({command})",
        "change_same_commit": ", 양쪽 모두 커밋 {commit}",
        "change_no_commit": ", 기록된 커밋 없음",
        "change_device": "; 장치 {old} → {new}",
    },
    "en": {
        "pending": "Pending levers",
        "col_lever": "Lever",
        "col_plan": "Plan",
        "col_state": "Current state",
        "graph": "Dependency graph",
        "order": "Recommended order and reasons",
        "status": "Current status ({date})",
        "conflict": "{lever}: decided concurrently, neither writer having seen the other's: {holds} by {hw} ({hwhy}) "
                    "and {other} by {ow} ({owhy}); it holds the later, {holds}, until someone decides again",
        "points": "Decision points",
        "points_intro": "When to revisit this doc:",
        "results": "Results",
        "history": "History",
        "history_more": "{n} earlier decisions (`optseq runs {lever}`)",
        "nothing_measured": "Nothing measured yet.",
        "nothing_pending": "No lever is waiting for a decision.",
        "col_outcome": "Outcome",
        "col_metric": "Metric",
        "col_ratio": "Ratio",
        "col_ci": "95% CI",
        "col_n": "n",
        "col_p": "p",
        "col_date": "Date",
        "col_source": "Source",
        "col_note": "Note",
        "no_plan": "plan not written",
        "arms": "command pair",
        "ready": "ready",
        "next": " (next)",
        "unplanned": "waiting for a plan",
        "running": "running",
        "measured": "measured, awaiting a decision",
        "blocked": "blocked: {reasons}",
        "stale": "stale: {reason}",
        "closed": "closed: {reason}",
        "closed_mark": "— closed",
        "eroded_mark": "eroded",
        "stale_mark": "⏳ stale",
        "taken": "(taken)",
        "auto": "auto",
        "manual": "manual",
        "plan_source": "plan",
        "ci_size": "reference workload at CI size",
        "testbed": "measured on {name}",
        "writer": "decided by {writer}",
        "superseded": "superseded",
        "superseded_by": "superseded: {reason}",
        "inconclusive": "inconclusive",
        "measured_inconclusive": "inconclusive in run {run}: {reason}",
        "remeasured": "re-measured inconclusive in run {run}: {reason}; was {was}",
        "unavailable": "unavailable: {reason} (run {run})",
        "arms_branch": "branch {ref}",
        "unmerged": "merge {ref} ({commit}) to put it in the stack",
        "unmerged_mark": "⏳ awaiting merge",
        "landed": "in the code since {since}",
        "needs_decided": "needs {lever} decided",
        "needs_outcome": "needs {lever} {outcome}",
        "wrong_outcome": "{lever} was decided {got}, needs {want}",
        "needs_fact": "needs fact {fact}",
        "needs_merge": "{lever} adopted, needs {ref} ({commit}) merged",
        "or": " or ",
        "and": "; ",
        "cand_pending": "pending",
        "cand_pass": "PASS",
        "cand_fail": "FAIL",
        "fired": " — fired {date}",
        "reopens": "; the levers to look at again: {levers}",
        "reopens_one": "; the lever to look at again: {levers}",
        "stays_closed": "; {lever} stays closed: {why}",
        "stays_blocked": "; {lever} stays blocked: {why}",
        "changes": "Change points",
        "changes_intro": "Where a lever's measured ratio moved to another level between its runs: a hint of where to "
                         "look, never a decision (each run's paired test decides).",
        "change_at": "change at run {run}: {before} → {after}",
        "change_commits": ", between commits {span} ({command})",
        "change_same_commit": ", at commit {commit} on both sides",
        "change_no_commit": ", no commit recorded",
        "change_device": "; device {old} → {new}",
    },
}


def labels(lang: str) -> dict[str, str]:
    try:
        return LABELS[lang]
    except KeyError:
        raise ValueError(f"unknown export language {lang!r} (one of {', '.join(LABELS)})") from None
