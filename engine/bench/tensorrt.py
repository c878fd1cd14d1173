"""TensorRT lever: inference throughput and batch-1 latency, current stack (eager or compiled) vs TensorRT.

The ONNX export TensorRT builds from is checked first against eager with onnxruntime on CPU
(guard `onnx_max_abs_error`), so that part is measured even where TensorRT cannot run.
"""
from __future__ import annotations

import time

import torch

from optseq.engine import kit
from optseq.engine.bench import net_workload as wl
from optseq.engine.bench.envinfo import pick_device
from optseq.engine.infer import BackendUnavailable, make_backend
from optseq.engine.infer.onnx_check import max_abs_error, onnxruntime_missing
from optseq.engine.nets.mlp import MLP

ONNX_LIMIT = 1e-4
TRT_LIMIT = 1e-3
CALLS_PER_SAMPLE = {"ci": 200, "gpu": 500}


def run(args, infra: kit.Infra) -> None:
    device = pick_device(args.device)
    size = wl.SIZES[args.size]
    repeats, warmup = wl.repeats_and_warmup(args, args.size)
    config = wl.model_config(args.size, infra)
    torch.manual_seed(wl.SEED)
    model = MLP(config).eval()
    x, _, _ = wl.fixed_batch(size.batch, config.actions)
    print(f"tensorrt: model {config}, batch {size.batch}", flush=True)

    why_not = onnxruntime_missing()
    if why_not is None:
        error = max_abs_error(model, x, kit.artifacts_dir() / "model.onnx")
        kit.quality("onnx_max_abs_error", error, ONNX_LIMIT)
    else:
        print(f"tensorrt: ONNX check skipped: {why_not}", flush=True)

    model, x = model.to(device), x.to(device)
    try:
        candidate = make_backend("tensorrt", model, x)
    except BackendUnavailable as exc:
        raise kit.Unavailable(str(exc)) from None
    baseline_name = "compile" if infra.has("compile") else "eager"
    baseline = make_backend(baseline_name, model, x)
    print(f"tensorrt: engine built in {candidate.build_s:.1f} s; baseline {baseline_name} "
          f"built in {baseline.build_s:.1f} s", flush=True)
    kit.quality("tensorrt_max_abs_error", float((candidate(x) - baseline(x)).abs().max()), TRT_LIMIT)

    calls = CALLS_PER_SAMPLE[args.size]
    kit.pairs(lambda: _throughput(baseline, x, calls, device), lambda: _throughput(candidate, x, calls, device),
                    repeats=repeats, warmup=warmup, metric="infer_samples_per_s", unit="samples/s",
                    higher_is_better=True, label="tensorrt batch")
    one = x[:1].contiguous()
    kit.pairs(lambda: _latency_ms(baseline, one, calls, device), lambda: _latency_ms(candidate, one, calls, device),
                    repeats=repeats, warmup=warmup, metric="infer_latency_ms", unit="ms",
                    higher_is_better=False, label="tensorrt batch-1")


def _elapsed(backend, x, calls: int, device: str) -> float:
    wl.sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        backend(x)
    wl.sync(device)
    return time.perf_counter() - start


def _throughput(backend, x, calls: int, device: str) -> float:
    return calls * x.shape[0] / _elapsed(backend, x, calls, device)


def _latency_ms(backend, x, calls: int, device: str) -> float:
    return 1e3 * _elapsed(backend, x, calls, device) / calls
