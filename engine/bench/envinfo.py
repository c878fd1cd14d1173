"""Facts about the stack a bench ran on; optseq folds them into the run's fingerprint.

Standard library at import: torch is imported only inside pick_device and env_facts. The arms driver
(engine/arms) imports cpu_model from here and runs where torch is not installed (the base install);
tests/test_wheel.py runs it in a venv without torch.
"""
from __future__ import annotations

import hashlib
import platform
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def pick_device(requested: str | None) -> str:
    import torch

    if requested:
        return requested
    return "cuda" if torch.cuda.is_available() else "cpu"


def code_hash() -> str:
    """Hash of the workload's sources (engine/ and native/): a changed workload is worth a warning."""
    digest = hashlib.sha256()
    for folder in ("engine", "native"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in (".py", ".pyx", ".pxd") and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(ROOT)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def env_facts(requested_device: str | None = None) -> dict:
    import torch

    device = pick_device(requested_device)
    facts = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "device": device,
        "cpu": cpu_model(),
        "threads": torch.get_num_threads(),
        "code_hash": code_hash(),
    }
    if device.startswith("cuda"):
        facts["gpu"] = torch.cuda.get_device_name(0)
        facts["cuda"] = torch.version.cuda
    try:
        import optseq.native  # noqa: F401

        from optseq.engine.bots import backend

        facts["bot_backend"] = backend.name()
    except Exception:  # the bot module may be absent in early builds
        pass
    return facts
