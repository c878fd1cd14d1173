"""What `make` installs (issue 32, point 10), read from the real Makefile with `make -n` (nothing is run): a machine
with no NVIDIA driver gets PyTorch's CPU wheel index for torch, said before the download with its size; PyPI's
default is one variable away; `make test-fast` installs no ray, `make test` does.

NVIDIA= and NVIDIA=yes stand for what the Makefile finds on a machine without and with a driver (nvidia-smi or
/proc/driver/nvidia), so the test says the same on this CPU machine and on a GPU one.
"""
from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import ROOT

CPU_INDEX = "https://download.pytorch.org/whl/cpu"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def recipe(tmp_path, target: str, *variables: str) -> str:
    """The commands `make TARGET` would run into a venv that does not exist yet."""
    venv = tmp_path / "venv"
    proc = subprocess.run(["make", "-n", "-B", f"VENV={venv}", *variables, target.replace("VENV", str(venv))],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def torch_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "torch==" in line]


def test_a_cpu_machine_gets_the_cpu_build_and_is_told_its_size_first(tmp_path):
    out = recipe(tmp_path, "VENV/.optseq-installed", "NVIDIA=")
    [line] = torch_lines(out)
    # the build's index on the command that downloads, and the sentence said before it, sizes included
    assert f'pip install -q --index-url {CPU_INDEX} "torch==2.13.0"' in line
    said = line.index("installing torch==2.13.0 CPU build (about 200 MB to download)")
    assert said < line.index(f"--index-url {CPU_INDEX} \"torch")
    assert "make TORCH_INDEX= for PyPI's default" in line and "about 2.7 GB" in line
    # a build already on the machine (pip's find-links, as in this project's CI) is tried first, without an index
    assert line.index('--no-index --no-deps "torch==2.13.0"') < said


def test_pypis_default_is_one_variable_away_and_says_its_size(tmp_path):
    for variables in (("NVIDIA=", "TORCH_INDEX="), ("NVIDIA=yes",)):
        [line] = torch_lines(recipe(tmp_path, "VENV/.optseq-installed", *variables))
        assert "--index-url" not in line, variables
        assert "from PyPI's default index: on Linux a CUDA build and its CUDA libraries, about 2.7 GB" in line
        assert f"make TORCH_INDEX={CPU_INDEX} for the CPU build" in line


def test_another_index_is_passed_as_given(tmp_path):
    index = "https://download.pytorch.org/whl/cu130"
    [line] = torch_lines(recipe(tmp_path, "VENV/.optseq-installed", "NVIDIA=yes", f"TORCH_INDEX={index}"))
    assert f'--index-url {index} "torch==2.13.0"' in line and f"installing torch==2.13.0 from {index}" in line


def test_test_fast_installs_no_ray_and_test_does(tmp_path):
    fast = recipe(tmp_path, "test-fast", "NVIDIA=")
    assert '-e ".[engine,dev]"' in fast
    assert "ray" not in fast.replace(str(tmp_path), "").replace("OPTSEQ_REQUIRE_RAY", "")
    full = recipe(tmp_path, "test", "NVIDIA=")
    assert '-e ".[engine,dev,ray]"' in full and "OPTSEQ_REQUIRE_RAY=1" in full
    assert '-e ".[engine]"' in recipe(tmp_path, "run", "NVIDIA=")  # `make`: the console and the reference levers
