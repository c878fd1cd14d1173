"""Training toggles: each value maps to the right context, and the Stepper trains under all of them."""
import contextlib

import pytest
import torch
from torch import nn

from optseq.engine.kit import Infra
from optseq.engine.nets.mlp import MLP, MLPConfig
from optseq.engine.train.toggles import Stepper, Toggles



def regression_batch(n=128, dim=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, dim, generator=g)
    target = torch.stack([x[:, 0] - x[:, 1], x[:, 2] * 0.5, x[:, 3:5].sum(1)], dim=1)
    weight = torch.rand(n, generator=g) + 0.5
    return x, target, weight


def test_from_infra_follows_the_adopted_levers():
    assert Toggles.from_infra(Infra()) == Toggles()
    t = Toggles.from_infra(Infra(adopted=frozenset({"amp", "compile", "option_b"})), "cpu")
    assert t == Toggles(amp="bf16", compile=True, device="cpu")
    assert Toggles.from_infra(Infra(adopted=frozenset({"amp"}), model={"amp_dtype": "fp16"})).amp == "fp16"
    assert Toggles.from_infra(Infra(adopted=frozenset({"compile"}))) == Toggles(compile=True)


def test_bad_amp_value_names_the_field():
    with pytest.raises(ValueError, match="Toggles.amp: 'fp8'"):
        Toggles(amp="fp8")


def test_amp_off_is_a_null_context_in_fp32():
    t = Toggles()
    assert isinstance(t.autocast(), contextlib.nullcontext) and t.dtype is None
    assert not t.grad_scaler().is_enabled()
    with t.autocast():
        assert nn.Linear(4, 4)(torch.randn(2, 4)).dtype == torch.float32


def test_bf16_autocast_changes_the_dtype_inside_on_cpu():
    t = Toggles(amp="bf16")
    layer = nn.Linear(4, 4)
    with t.autocast():
        assert layer(torch.randn(2, 4)).dtype == torch.bfloat16
    assert layer(torch.randn(2, 4)).dtype == torch.float32
    assert not t.grad_scaler().is_enabled()  # bf16 needs no loss scaling


def test_fp16_turns_the_grad_scaler_on():
    t = Toggles(amp="fp16")
    assert t.dtype == torch.float16 and t.grad_scaler().is_enabled()
    with t.autocast():
        assert nn.Linear(4, 4)(torch.randn(2, 4)).dtype == torch.float16


@pytest.mark.parametrize("toggles", [Toggles(), Toggles(amp="bf16"), Toggles(amp="fp16")], ids=str)
def test_stepper_learns_under_each_amp_mode(toggles):
    torch.manual_seed(0)
    stepper = Stepper(MLP(MLPConfig(10, hidden=32, layers=2)), toggles, lr=3e-3)
    x, target, weight = regression_batch()
    first = stepper.step(x, target, weight)
    for _ in range(150):
        last = stepper.step(x, target, weight)
    assert last < 0.2 * first


def test_loss_is_weighted_mse_summed_over_actions():
    model = nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.eye(2))
    stepper = Stepper(model, Toggles())
    x = torch.tensor([[1.0, 2.0], [0.0, 1.0]])
    target = torch.tensor([[0.0, 0.0], [0.0, 0.0]])
    weight = torch.tensor([1.0, 3.0])
    # ((1 + 4) * 1 + (0 + 1) * 3) / 2
    assert stepper.loss(x, target, weight).item() == pytest.approx(4.0)


@pytest.mark.slow  # torch.compile
def test_compile_path_runs_and_trains():
    torch.manual_seed(0)
    module = MLP(MLPConfig(10, hidden=16, layers=2))
    stepper = Stepper(module, Toggles(compile=True), lr=3e-3)
    assert stepper.model is not stepper.module and stepper.module is module
    assert isinstance(stepper.model, torch._dynamo.eval_frame.OptimizedModule)
    x, target, weight = regression_batch()
    first = stepper.step(x, target, weight)
    for _ in range(30):
        last = stepper.step(x, target, weight)
    assert last < first
    # The compiled callable computes what the module computes.
    with torch.no_grad():
        assert torch.allclose(stepper.model(x), module(x), atol=1e-5)


def test_reset_gives_the_same_fresh_weights_for_the_same_seed():
    stepper = Stepper(MLP(MLPConfig(10, hidden=16, layers=2)), Toggles())
    x, target, weight = regression_batch()
    stepper.reset(5)
    fresh = [p.detach().clone() for p in stepper.module.parameters()]
    stepper.step(x, target, weight)
    assert stepper.optimizer.state
    stepper.reset(5)
    assert all(torch.equal(a, b) for a, b in zip(fresh, stepper.module.parameters()))
    assert not stepper.optimizer.state
