"""A run's sentences that the store keeps and the export quotes, in every language the export writes: the noise
line (run_record.noise_line). A run keeps the English (what the CLI and the console print) and, beside it, its said
(lifecycle/words.say), which the export says in its own language; report/labels.py takes this table in as RUNS."""
from __future__ import annotations

WORDS: dict[str, dict[str, str]] = {
    "en": {
        "noisy": "noisy: {reasons}; its figures may not repeat",
        "noisy_load": "load average {load} on {cores} core{s} while it ran",
        "noisy_spread": "the baseline's spread within a launch (IQR {spread} of its median) is wider than the "
                        "{floor} the rule must resolve ({min_speedup}×)",
        "and": " and ",
    },
    "ko": {
        "noisy": "측정 잡음: {reasons}; 수치가 재현되지 않을 수 있음",
        "noisy_load": "실행 중 load average {load} (코어 {cores}개)",
        "noisy_spread": "launch 안의 baseline 편차 (중앙값 대비 IQR {spread})가 rule이 구분해야 할 {floor}보다 넓음 "
                        "({min_speedup}×)",
        "and": ", ",
    },
}
"""key -> sentence, per language, as lifecycle/words.WORDS; `{s}` is the English plural's `s`."""
