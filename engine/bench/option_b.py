"""Option B lever: advantage samples/s of K=64 interleaved traversals vs the batch-1 driver, one CPU thread."""
from __future__ import annotations

import itertools
import statistics
import time
from typing import Callable, Sequence

import torch

from optseq.engine import kit
from optseq.engine.bench.envinfo import pick_device
from optseq.engine.games.leduc import LeducGame
from optseq.engine.nets.mlp import MLP, MLPConfig
from optseq.engine.traversal import option_b, sequential
from optseq.engine.traversal.generator import Traversal, TraversalResult, jobs_for
from optseq.engine.traversal.sequential import Net, exact_net

K = 64
# Traversals per player in one arm's measurement: long enough to swamp timer noise, short enough for CI.
TRAVERSALS = {"ci": 1000, "gpu": 4000}
REPEATS = {"ci": 8, "gpu": 10}
# The net when infra.model names none: small for CI, the seed's "large model" floor for GPU.
DEFAULT_MODEL = {"ci": {"hidden": 64, "layers": 3}, "gpu": {"hidden": 1024, "layers": 6}}

Driver = Callable[[LeducGame, Net, Sequence[Traversal]], list[TraversalResult]]


def model_config(infra: kit.Infra, game: LeducGame, size: str = "ci") -> MLPConfig:
    """The net the current stack trains (infra.model), else the size's default."""
    model = infra.model or {}
    dims = {}
    for key, default in DEFAULT_MODEL[size].items():
        value = model.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise SystemExit(f"OPTSEQ_INFRA: model.{key} must be a positive integer, got {value!r}")
        dims[key] = value
    return MLPConfig(game.info_state_size, dims["hidden"], dims["layers"], game.num_actions)


def make_net(config: MLPConfig, device: str, seed: int = 0) -> Net:
    torch.manual_seed(seed)
    model = MLP(config).to(device).eval()
    return lambda x: model(x.to(device)).float().cpu()


def pair_jobs(seed: int, pair: int, traversals: int) -> list[Traversal]:
    return [job for p in (0, 1) for job in jobs_for(seed, pair, p, traversals)]


def samples_per_s(driver: Driver, game: LeducGame, net: Net, jobs: Sequence[Traversal]) -> float:
    start = time.perf_counter()
    results = driver(game, net, jobs)
    elapsed = time.perf_counter() - start
    return sum(len(r.advantage) for r in results) / elapsed


def mismatches(a: Sequence[TraversalResult], b: Sequence[TraversalResult]) -> int:
    """Traversals whose advantage or strategy samples differ between two drivers."""
    if len(a) != len(b):
        return max(len(a), len(b))
    return sum((x.advantage, x.strategy) != (y.advantage, y.strategy) for x, y in zip(a, b))


def measure(args, config: MLPConfig, baseline: Driver, candidate: Driver, *,
            label: str) -> list[tuple[float, float]]:
    """Paired samples/s of two drivers; both arms of a pair run the same jobs, each pair new ones."""
    game = LeducGame()
    net = make_net(config, pick_device(args.device))
    traversals = TRAVERSALS[args.size]
    pair_index = itertools.count()
    jobs: list[Traversal] = []

    def run_baseline() -> float:
        jobs[:] = pair_jobs(0, next(pair_index), traversals)
        return samples_per_s(baseline, game, net, jobs)

    def run_candidate() -> float:
        return samples_per_s(candidate, game, net, jobs)

    return kit.pairs(run_baseline, run_candidate, repeats=args.repeats or REPEATS[args.size],
                           warmup=1 if args.warmup is None else args.warmup,
                           metric="advantage_samples_per_s", unit="samples/s", higher_is_better=True, label=label)


def report(pairs: list[tuple[float, float]], what: str) -> None:
    if pairs:
        ratio = statistics.median(b / a for a, b in pairs)
        print(f"{what}: median candidate/baseline ratio {ratio:.2f}x over {len(pairs)} pairs", flush=True)


def run(args, infra: kit.Infra) -> None:
    torch.set_num_threads(1)
    game = LeducGame()
    config = model_config(infra, game, args.size)
    seq: Driver = sequential.run
    b64: Driver = lambda g, n, jobs: option_b.run(g, n, jobs, k=K)
    baseline = b64 if infra.has("option_b") else seq

    # Parity first: with a net whose outputs are exact in any batch shape, batching must change nothing.
    jobs = pair_jobs(12345, 0, 100)
    reference = exact_net(game.info_state_size, game.num_actions)
    kit.quality("sample_mismatches", mismatches(seq(game, reference, jobs), b64(game, reference, jobs)), 0)

    pairs = measure(args, config, baseline, b64, label=f"option_b K={K}")
    report(pairs, f"option_b K={K} vs {'option_b' if baseline is b64 else 'sequential'}")
