"""The code room's sentences in every language the export writes: why a branch lever's evidence went stale (its
branch moved, was rewritten or is gone; its base moved). The stale event keeps the English (what `optseq status`
prints) and the said beside it (state/said.py); report/labels.py takes this table in as CODE.
"""
from __future__ import annotations

WORDS: dict[str, dict[str, str]] = {
    "en": {
        "ref_gone": "{ref} no longer names a commit (run {run} measured {old})",
        "ref_rewritten": "{ref} was rewritten since run {run} ({old} is not in it now; it names {now})",
        "ref_moved": "{ref} moved {ahead} commit{s} since run {run} ({old} → {now})",
        "base_moved": "the baseline moved: {moved}",
        "and": " and ",
    },
    "ko": {
        "ref_gone": "{ref}가 더 이상 커밋을 가리키지 않음 (run {run}은 {old}를 측정)",
        "ref_rewritten": "run {run} 이후 {ref}가 다시 쓰임 ({old}는 이제 그 안에 없음; 지금은 {now})",
        "ref_moved": "run {run} 이후 {ref}에 커밋 {ahead}개 추가 ({old} → {now})",
        "base_moved": "baseline이 바뀜: {moved}",
        "and": ", ",
    },
}
"""key -> sentence, per language; `{s}` is the English plural's `s`."""
