"""ONNX export of a model, and its check against eager with onnxruntime on CPU."""
from __future__ import annotations

import copy
import warnings
from pathlib import Path

import torch
from torch import nn

INPUT, OUTPUT = "input", "output"
OPSET = 17


def export_onnx(model: nn.Module, example_batch: torch.Tensor, path: str | Path) -> Path:
    """Write `model` as ONNX with a dynamic batch axis; inputs named INPUT, outputs OUTPUT."""
    path = Path(path)
    model.eval()
    with warnings.catch_warnings():
        # The TorchScript exporter is deprecated in favour of the dynamo one, which needs
        # onnxscript (not a dependency); an MLP exports exactly with either.
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            model, (example_batch,), str(path), input_names=[INPUT], output_names=[OUTPUT],
            dynamic_axes={INPUT: {0: "batch"}, OUTPUT: {0: "batch"}}, opset_version=OPSET, dynamo=False,
        )
    return path


def onnxruntime_missing() -> str | None:
    """Why the ONNX check cannot run here, or None when it can."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        return f"onnxruntime not importable ({exc})"
    return None


def max_abs_error(model: nn.Module, batch: torch.Tensor, path: str | Path) -> float:
    """Export `model` to `path`, run the file with onnxruntime on CPU, return max |onnx - eager|."""
    import onnxruntime as ort

    cpu_model = copy.deepcopy(model).to("cpu").eval()  # leave the caller's model where it is
    batch = batch.detach().to("cpu", torch.float32)
    export_onnx(cpu_model, batch, path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got,) = session.run([OUTPUT], {INPUT: batch.numpy()})
    with torch.inference_mode():
        want = cpu_model(batch)
    return float((torch.from_numpy(got) - want).abs().max())
