"""A run's sentences that the store keeps and the export quotes, in every language the export writes: the noise
line (run_record.noise_line) and the rule's verdict (decide_rule.decide: why a run adopts, rejects or cannot tell).
A run keeps the English (what the CLI and the console print) and, beside it, its said
(lifecycle/words.say), which the export says in its own language; report/labels.py takes this table in as RUNS."""
from __future__ import annotations

WORDS: dict[str, dict[str, str]] = {
    "en": {
        "noisy": "noisy: {reasons}; its figures may not repeat",
        "noisy_load": "load average {load} on {cores} core{s} while it ran",
        "noisy_spread": "the baseline's spread {where} (IQR {spread} of its median) is wider than the {floor} the "
                        "rule must resolve ({min_speedup}×)",
        "within_launch": "within a launch",
        "pair_to_pair": "from pair to pair",
        "and": " and ",
        # the rule's verdict (decide_rule.decide)
        "speed": "{metric} {estimate}{bounds} n={n}{launches}{p}{dropped}",
        "in_launches": " in {count} {unit}",
        "no_pairs": "no complete pairs of {metric}{dropped}",
        "dropped": ", {n} sample{s} not counted",
        "launch": "launch",
        "launches": "launches",
        "pair": "pair",
        "pairs": "pairs",
        "exceeds_max": "exceeds max {limit}",
        "below_min": "is below min {limit}",
        "guard_failed": "guard {name} = {value} {breach}{others}{though}",
        "guard_others": " (and {names})",
        "though": ", though {speed}",
        "one_arm_first": "{speed}: the {arm} ran first in all {ordered} pairs, so a warm-up or a drift counts for one "
                         "arm: not decided (counterbalance the arms, as kit.pairs does)",
        "upper_below": "{speed}: 95% upper bound below {need} ({below} of {count} {units} below, {needed} needed)",
        "guard_missing": "guard {names} not reported{speed}",
        "paren": " ({speed})",
        "cannot_yet": "{speed}: {count} {unit} cannot decide yet ({needed} on one side of {need} needed)",
        "mean_below": "{speed}: not adopted: the median clears {need} ({above} of {count} {units} above) but total "
                      "time does not ({mean}): slow outliers, a stall or a tail",
        "lower_clears": "{speed}: 95% lower bound clears {need} ({above} of {count} {units} above, {needed} "
                        "needed){guards}",
        "guards_hold": "; guards hold",
        "straddle": "{speed}: 95% bounds straddle {need} ({above} above, {below} below of {count} {units}; "
                    "{needed} on one side needed)",
        # why an undecided run stopped, and what would likely settle it (passes._settled, _no_more)
        "settled": "{verdict}{stopped}{tail}",
        "stopped": "; stopped: {why}",
        "count": "{n} {unit}",
        "max_passes": "{n} passes",
        "fraction": "asked for {asked}, {counted} counted",
        "no_fit": "{more} more would not fit in timeout_s = {timeout} s at {each} s a {unit}",
        "evenly": "; the {units} fall about evenly around the threshold: more would not likely settle it",
        "settle": "; about {extra} more {units}{arms} would likely settle it at the effect measured so far",
        "arms_launches": " ({n} launches of the arms)",
        "block": "block",
        "blocks": "blocks",
    },
    "ko": {
        "noisy": "측정 잡음: {reasons}; 수치가 재현되지 않을 수 있음",
        "noisy_load": "실행 중 load average {load} (코어 {cores}개)",
        "noisy_spread": "baseline 편차({where}, 중앙값 대비 IQR {spread})가 rule이 구분해야 할 {floor}보다 넓음 "
                        "({min_speedup}×)",
        "within_launch": "launch 안",
        "pair_to_pair": "pair 간",
        "and": ", ",
        "speed": "{metric} {estimate}{bounds} n={n}{launches}{p}{dropped}",
        "in_launches": " ({unit} {count}개)",
        "no_pairs": "{metric}의 완전한 pair 없음{dropped}",
        "dropped": ", 집계 안 된 sample {n}개",
        "launch": "launch",
        "launches": "launch",
        "pair": "pair",
        "pairs": "pair",
        "exceeds_max": "최대 {limit} 초과",
        "below_min": "최소 {limit} 미만",
        "guard_failed": "guard {name} = {value} {breach}{others}{though}",
        "guard_others": " (그리고 {names})",
        "though": ", 단 {speed}",
        "one_arm_first": "{speed}: pair {ordered}개 모두 {arm}가 먼저 실행되어 warm-up이나 drift가 한쪽 arm에만 "
                         "반영됨: 결정 안 함 (kit.pairs처럼 arm 순서를 번갈아 실행)",
        "upper_below": "{speed}: 95% 상한이 {need} 미만 ({units} {count}개 중 {below}개 아래, {needed}개 필요)",
        "guard_missing": "guard {names} 보고 없음{speed}",
        "paren": " ({speed})",
        "cannot_yet": "{speed}: {unit} {count}개로는 아직 결정 불가 ({need} 한쪽에 {needed}개 필요)",
        "mean_below": "{speed}: 채택 안 함: 중앙값은 {need}를 넘지만 ({units} {count}개 중 {above}개 위) 총 시간은 "
                      "넘지 못함 ({mean}): 느린 outlier, stall 또는 tail",
        "lower_clears": "{speed}: 95% 하한이 {need} 초과 ({units} {count}개 중 {above}개 위, {needed}개 "
                        "필요){guards}",
        "guards_hold": "; guard 모두 통과",
        "straddle": "{speed}: 95% 구간이 {need}에 걸침 ({units} {count}개 중 {above}개 위, {below}개 아래; 한쪽에 "
                    "{needed}개 필요)",
        "settled": "{verdict}{stopped}{tail}",
        "stopped": "; 중단: {why}",
        "count": "{unit} {n}개",
        "max_passes": "pass {n}회",
        "fraction": "{asked} 요청, {counted}개 집계",
        "no_fit": "{unit}당 {each} s로는 {more}를 더 해도 timeout_s = {timeout} s 안에 끝나지 않음",
        "evenly": "; {units}가 threshold 양쪽에 고르게 나뉨: 더 측정해도 결정되기 어려움",
        "settle": "; 지금까지의 효과라면 {units} 약 {extra}개{arms}를 더 측정하면 결정될 것",
        "arms_launches": " (arm launch {n}회)",
        "block": "block",
        "blocks": "block",
    },
}
"""key -> sentence, per language, as lifecycle/words.WORDS; `{s}` is the English plural's `s`."""
