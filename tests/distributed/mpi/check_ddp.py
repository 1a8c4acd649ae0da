"""DDP on the mpiucc backend trains exactly like DDP on gloo (same data, same model)."""

from __future__ import annotations

import torch
import torch.distributed as dist
from _dist import init, passed, same_bits_everywhere
from torch.nn.parallel import DistributedDataParallel as DDP

RANK, SIZE, GLOO = init()


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(16, 64)
        self.b = torch.nn.Linear(64, 64)
        self.c = torch.nn.Linear(64, 4)
        self.unused = torch.nn.Linear(64, 4)  # used only when skip is False

    def forward(self, x: torch.Tensor, skip: bool = True) -> torch.Tensor:
        h = torch.relu(self.b(torch.relu(self.a(x))))
        return self.c(h) if skip else self.c(h) + self.unused(h)


def train(group: dist.ProcessGroup | None, steps: int, accumulate: bool, **ddp_kw) -> list:
    torch.manual_seed(0)
    model = DDP(Net(), process_group=group, bucket_cap_mb=0.005, **ddp_kw)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    skip_some = ddp_kw.get("find_unused_parameters", False)
    for step in range(steps):
        g = torch.Generator().manual_seed(100 * RANK + step)
        x, y = torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)
        skip = skip_some and step % 2 == 0
        if accumulate and step % 2 == 0:
            with model.no_sync():  # gradients accumulate locally, synced on the next step
                torch.nn.functional.mse_loss(model(x, skip), y).backward()
            continue
        torch.nn.functional.mse_loss(model(x, skip), y).backward()
        opt.step()
        opt.zero_grad()
    return [p.detach().clone() for p in model.parameters()]


CONFIGS = [
    ("several buckets", False, {}),
    ("no_sync", True, {}),
    ("find_unused_parameters", False, {"find_unused_parameters": True}),
    ("static_graph", False, {"static_graph": True}),
    ("gradient_as_bucket_view", False, {"gradient_as_bucket_view": True}),
]
for name, accumulate, kw in CONFIGS:
    ours = train(None, 6, accumulate, **kw)
    ref = train(GLOO, 6, accumulate, **kw)
    for p, q in zip(ours, ref, strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=f"DDP {name}")
        same_bits_everywhere(p, f"DDP {name} parameters", GLOO)
    untrained = [p.detach() for p in (torch.manual_seed(0), Net())[1].parameters()]
    assert any(not torch.equal(p, q) for p, q in zip(ours, untrained, strict=True)), name
passed("DDP")
