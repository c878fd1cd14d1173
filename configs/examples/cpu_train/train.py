"""A small CPU training run for optseq's cpu_train example: each TRAIN_* toggle is one lever, off by default.

Prints `samples/s: X`, `final loss: Y` and a last JSON line; TRAIN_DEBUG=1 also prints what the toggles did.
"""
import json
import os
import statistics
import time

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset

THREADS = int(os.environ.get("TRAIN_THREADS", "1"))  # pinned, not torch's default: no toggle means one thread
CHANNELS_LAST = os.environ.get("TRAIN_CHANNELS_LAST") == "1"
BF16 = os.environ.get("TRAIN_BF16") == "1"
WORKERS = int(os.environ.get("TRAIN_WORKERS", "0"))
DEBUG = os.environ.get("TRAIN_DEBUG") == "1"
BATCH, WARM_STEPS, STEPS, HELD_OUT = 32, 2, 16, 256
torch.set_num_threads(THREADS)


class Synthetic(Dataset):
    """Images made from their index alone, so every arm and every worker count sees the very same batches; each
    costs real CPU time on purpose (blur, crop): that is the work a DataLoader worker can take off the step."""

    def __init__(self, length, offset=0):
        self.length, self.offset = length, offset
        # one 5x5 pattern per class, planted somewhere in smooth noise: a conv net learns it in a few dozen steps
        self.patterns = torch.randn(10, 3, 5, 5, generator=torch.Generator().manual_seed(1)) * 2
        self.blur = torch.ones(3, 1, 5, 5) / 25

    def __len__(self):
        return self.length

    def __getitem__(self, idx):
        g = torch.Generator().manual_seed(self.offset + idx)
        x = F.conv2d(torch.randn(1, 3, 36, 36, generator=g) * 2, self.blur, padding=2, groups=3)[0]
        label, dy, dx, row, col = (int(v) for v in torch.randint(0, 28, (5,), generator=g))
        x = x[:, dy % 5:dy % 5 + 32, dx % 5:dx % 5 + 32].clone()
        x[:, row:row + 5, col:col + 5] += self.patterns[label % 10]
        return x, label % 10, os.getpid()


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 24, 3, padding=1), nn.BatchNorm2d(24), nn.ReLU(),
        nn.Conv2d(24, 48, 3, stride=2, padding=1), nn.BatchNorm2d(48), nn.ReLU(),
        nn.Conv2d(48, 48, 3, stride=2, padding=1), nn.BatchNorm2d(48), nn.ReLU(),
        # max, not mean: the pattern is in one place, and averaging would wash it out
        nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(48, 10))


class Adam:
    """Adam by hand: torch.optim imports torch._dynamo on first use, which costs more than the whole timed loop."""

    def __init__(self, params, lr, b1=0.9, b2=0.999):
        self.params, self.lr, self.b1, self.b2, self.t = list(params), lr, b1, b2, 0
        self.m, self.v = [torch.zeros_like(p) for p in self.params], [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def step(self):
        self.t += 1
        b1, b2, t = self.b1, self.b2, self.t
        for p, m, v in zip(self.params, self.m, self.v):
            m.mul_(b1).add_(p.grad, alpha=1 - b1)
            v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
            p.addcdiv_(m, v.sqrt().add_(1e-8), value=-self.lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t))
            p.grad = None


def prepare(x):
    return x.contiguous(memory_format=torch.channels_last) if CHANNELS_LAST else x


def main():
    torch.manual_seed(0)
    model = make_model()
    if CHANNELS_LAST:
        model = model.to(memory_format=torch.channels_last)
    opt = Adam(model.parameters(), lr=3e-3)
    # a seeded shuffle keeps the batch order identical across worker counts
    loader = DataLoader(Synthetic((WARM_STEPS + STEPS) * BATCH), batch_size=BATCH, shuffle=True,
                        num_workers=WORKERS, generator=torch.Generator().manual_seed(0))
    seen = {"pids": set()}
    model.train()
    ticks = []  # end of each step, so a step's time includes waiting for its batch
    for x, y, pids in loader:
        x = prepare(x)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=BF16):
            logits = model(x)
        loss = F.cross_entropy(logits.float(), y)
        loss.backward()
        opt.step()
        ticks.append(time.perf_counter())
        seen.update(pids=seen["pids"] | set(pids.tolist()), dtype=logits.dtype,
                    input_cl=x.is_contiguous(memory_format=torch.channels_last))
    # the first steps pay for allocation, oneDNN kernel choice and worker start-up: not steady state; and the median
    # step, not the mean: on a shared machine a step that lost its core to another process says nothing of the toggle
    step_s = statistics.median(b - a for a, b in zip(ticks[WARM_STEPS - 1:], ticks[WARM_STEPS:]))
    # scored on held-out images in fp32, so arms that trained differently are judged alike
    model.eval()
    xs, ys, _ = zip(*(Synthetic(HELD_OUT, offset=10 ** 6)[i] for i in range(HELD_OUT)))
    with torch.no_grad():
        final = float(F.cross_entropy(model(prepare(torch.stack(xs))), torch.tensor(ys)))
    if DEBUG:
        cl = model[0].weight.is_contiguous(memory_format=torch.channels_last)
        print(f"debug: threads={torch.get_num_threads()} weights_channels_last={cl} "
              f"input_channels_last={seen['input_cl']} logits_dtype={seen['dtype']} "
              f"loader_processes={len(seen['pids'] - {os.getpid()})}")
    rate = BATCH / step_s
    print(f"samples/s: {rate:.1f}")
    print(f"final loss: {final:.5f}")
    print(json.dumps({"samples_per_s": round(rate, 2), "final_loss": round(final, 6)}))


if __name__ == "__main__":
    main()
