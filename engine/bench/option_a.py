"""Option A lever: advantage samples/s of the current stack vs the same plus a central inference server.

Without Option B adopted the candidate is plain Option A (worker threads, one traversal each); with it,
A+B (each worker interleaves traversals, the server merges the workers' batches). Beside samples/s the
candidate reports the server's mean batch size and request latency p50/p99 as "metric" events.
"""
from __future__ import annotations

import torch

from optseq.engine import kit
from optseq.engine.bench.option_b import K, measure, mismatches, model_config, pair_jobs, report
from optseq.engine.games.leduc import LeducGame
from optseq.engine.traversal import option_a, option_b, sequential
from optseq.engine.traversal.sequential import exact_net

WORKERS = 8


def run(args, infra: kit.Infra) -> None:
    torch.set_num_threads(1)
    game = LeducGame()
    config = model_config(infra, game, args.size)
    stacked = infra.has("option_b")
    # A+B keeps the same number of traversals in flight as Option B alone: WORKERS x (K / WORKERS).
    k = max(1, K // WORKERS) if stacked else 1
    runs: list[option_a.ServerStats] = []

    def baseline(g, net, jobs):
        return option_b.run(g, net, jobs, k=K) if stacked else sequential.run(g, net, jobs)

    def candidate(g, net, jobs):
        runs.append(option_a.ServerStats())
        return option_a.run(g, net, jobs, workers=WORKERS, k=k, stats=runs[-1])

    jobs = pair_jobs(12345, 0, 100)
    reference = exact_net(game.info_state_size, game.num_actions)
    kit.quality("sample_mismatches", mismatches(sequential.run(game, reference, jobs),
                                                     candidate(game, reference, jobs)), 0)
    runs.clear()

    name = "option_a+b" if stacked else "option_a"
    pairs = measure(args, config, baseline, candidate, label=f"{name} workers={WORKERS} k={k}")
    for pair, stats in enumerate(runs[len(runs) - len(pairs):]):
        kit.emit("metric", arm="candidate", pair=pair, name="mean_batch", value=stats.mean_batch, unit="rows")
        for q in (0.5, 0.99):
            kit.emit("metric", arm="candidate", pair=pair, name=f"latency_p{round(q * 100)}",
                          value=stats.latency_quantile(q) * 1e3, unit="ms")
    report(pairs, f"{name} vs {'option_b' if stacked else 'sequential'}")
    if runs:
        last = runs[-1]
        print(f"{name}: mean batch {last.mean_batch:.1f} rows, latency p50 {last.latency_quantile(0.5) * 1e3:.2f} ms"
              f" p99 {last.latency_quantile(0.99) * 1e3:.2f} ms (last pair)", flush=True)
