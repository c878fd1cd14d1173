"""A run's sentences that the store keeps and the export quotes, in every language the export writes: the noise
line (run_record.noise_line), what its figures rest on (run_record.order_said, stall_said) and the rule's verdict
(decide_rule.decide: why a run adopts, rejects or cannot tell). A run keeps the English (what the CLI and the
console print) and, beside it, its said (lifecycle/words.say), which the export says in its own language;
report/labels.py takes this table in as RUNS."""
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
        # what a run's figures rest on (run_record: order_said, stall_said)
        "order_emitted": "order taken from emission order: the baseline first in {first} of {of} pairs (the bench "
                         "gave no `first`; kit.sample's `first` says which arm ran first)",
        "stall_reach": "measured {calls} candidate calls: a stall striking 1 call in {k} or more often would have "
                       "been met with 95% probability; one striking 1 call in {calls} is missed {missed} of the time, "
                       "and a stall no run meets moves neither the median nor the total time",
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
        "one_arm_emitted": "{speed}: the {arm}'s sample came first in all {ordered} pairs and the bench gave no "
                           "`first`, so the {arm} is taken to have run first in each, and a warm-up or a drift counts "
                           "for one arm: not decided (counterbalance the arms, as kit.pairs does, or give every sample "
                           "its `first` where the samples come in another order than the arms ran)",
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
        # a best-of-N run's reason (best_of.compare)
        "bo_none": "no config qualifies on {metric}{notes}",
        "bo_few": "{metric}: needs at least {need} complete blocks, has {n}{lost}{notes}",
        "bo_only": "{only}: the only config that qualifies on {metric} (median {median}, {n} blocks){lost}{notes}",
        "bo_mcb": "MCB 95% ±{h} over {n} blocks, margin {margin}",
        "bo_winner": "{best}: best {metric} (median {median}) of {k} configs; the others are {low}–{high} worse, "
                     "each beyond the margin ({mcb}){lost}{notes}",
        "bo_set": "{pick}: {members} cannot be told apart, each within {margin} of the best {metric} ({highs} the "
                  "best of the others; {mcb}); picked {pick}, {how}{lost}{notes}",
        "bo_high": "{arm} ≤ {high}",
        "bo_leads": "{metric}: {best} leads but cannot be told from {figures} ({mcb}); about {needed} more "
                    "block{s} needed{lost}{notes}",
        "bo_figure": "{arm} ({ratio} the best, MCB ≤ {high})",
        "bo_no_cost_metric": "the apparent best, as the rule names no cost metric",
        "bo_no_cost": "the apparent best, as none of them reported {cost_metric}",
        "bo_cheapest": "the cheapest by median {cost_metric} ({cost}{rest})",
        "bo_rest": " vs {costs}",
        "bo_cost": "{arm} {cost}",
        "bo_lost": " ({parts})",
        "bo_incomplete": "{n} incomplete block{s} left out",
        "bo_dropped": "{n} non-positive value{s} dropped",
        "bo_excluded": "; excluded: {reasons}",
        "bo_excluded_one": "{arm} {why}",
        "bo_no_usable": "reported no usable {metric}",
        "bo_guard": "guard {name} = {value} {breach}",
        "bo_guards": "{guards}",
        "bo_guard_missing": "guard {names} not reported",
        "bo_no_cost_value": "reported no {cost_metric}",
        "bo_over_cost": "costs {ratio}× {cheapest}'s {cost_metric}, over the {limit}× allowed",
        "bo_last_and": "{items} and {last}",
    },
    "ko": {
        "noisy": "측정 잡음: {reasons}; 수치가 재현되지 않을 수 있음",
        "noisy_load": "실행 중 load average {load} (코어 {cores}개)",
        "noisy_spread": "baseline 편차({where}, 중앙값 대비 IQR {spread})가 rule이 구분해야 할 {floor}보다 넓음 "
                        "({min_speedup}×)",
        "within_launch": "launch 안",
        "pair_to_pair": "pair 간",
        "and": ", ",
        "order_emitted": "arm 순서는 출력 순서에서 가져옴: pair {of}개 중 {first}개에서 baseline이 먼저 (bench가 "
                         "`first`를 주지 않음; kit.sample의 `first`로 어느 arm이 먼저 실행됐는지 지정)",
        "stall_reach": "candidate 호출 {calls}회 측정: {k}회에 1번 이상 일어나는 stall은 95% 확률로 잡혔을 것이고, "
                       "{calls}회에 1번인 stall은 {missed}의 확률로 놓침; run이 한 번도 만나지 못한 stall은 중앙값도 "
                       "총 시간도 움직이지 않음",
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
        "one_arm_emitted": "{speed}: pair {ordered}개 모두 {arm}의 sample이 먼저 나왔고 bench가 `first`를 주지 "
                           "않아 {arm}가 먼저 실행된 것으로 봄: warm-up이나 drift가 한쪽 arm에만 반영됨: 결정 안 함 "
                           "(kit.pairs처럼 arm 순서를 번갈아 실행하거나, sample이 arm 실행 순서와 다르게 나온다면 "
                           "sample마다 `first`를 지정)",
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
        "bo_none": "{metric} 기준으로 조건을 만족하는 config 없음{notes}",
        "bo_few": "{metric}: 완전한 block이 {need}개 이상 필요하나 {n}개뿐{lost}{notes}",
        "bo_only": "{only}: {metric} 기준으로 조건을 만족하는 유일한 config (중앙값 {median}, block {n}개){lost}{notes}",
        "bo_mcb": "MCB 95% ±{h}, block {n}개, margin {margin}",
        "bo_winner": "{best}: config {k}개 중 {metric} 최고 (중앙값 {median}); 나머지는 {low}–{high} 뒤지며 모두 "
                     "margin 밖 ({mcb}){lost}{notes}",
        "bo_set": "{pick}: {members}는 서로 구별되지 않고 모두 최고 {metric}의 {margin} 이내 ({highs}가 다른 config 중 "
                  "최고 대비; {mcb}); {pick} 선택, {how}{lost}{notes}",
        "bo_high": "{arm} ≤ {high}",
        "bo_leads": "{metric}: {best}가 앞서지만 {figures}와 구별되지 않음 ({mcb}); block 약 {needed}개 더 "
                    "필요{lost}{notes}",
        "bo_figure": "{arm} (최고 대비 {ratio}, MCB ≤ {high})",
        "bo_no_cost_metric": "rule에 비용 metric이 없어 겉보기 최고를 선택",
        "bo_no_cost": "아무도 {cost_metric}를 보고하지 않아 겉보기 최고를 선택",
        "bo_cheapest": "중앙값 {cost_metric}가 가장 낮음 ({cost}{rest})",
        "bo_rest": " 대 {costs}",
        "bo_cost": "{arm} {cost}",
        "bo_lost": " ({parts})",
        "bo_incomplete": "불완전한 block {n}개 제외",
        "bo_dropped": "0 이하 값 {n}개 버림",
        "bo_excluded": "; 제외: {reasons}",
        "bo_excluded_one": "{arm} {why}",
        "bo_no_usable": "쓸 수 있는 {metric} 보고 없음",
        "bo_guard": "guard {name} = {value} {breach}",
        "bo_guards": "{guards}",
        "bo_guard_missing": "guard {names} 보고 없음",
        "bo_no_cost_value": "{cost_metric} 보고 없음",
        "bo_over_cost": "{cheapest}의 {cost_metric} 대비 {ratio}× 비용, 허용치 {limit}× 초과",
        "bo_last_and": "{items}, {last}",
    },
}
"""key -> sentence, per language, as lifecycle/words.WORDS; `{s}` is the English plural's `s`."""
