"""Pipeline send/recv on 2 ranks: the bound, the bytes, the bubble split, transfers that move
while both stages compute, and the engine's timeout.

mpiexec -n 2 python check_pipe_link.py
"""

import time

import torch
from mpi4py import MPI

import pycomm
from pycomm.train.config import parse_codec
from pycomm.train.meters import Meters
from pycomm.train.pipe_link import PipeLink

torch.set_num_threads(1)
world = MPI.COMM_WORLD
rank = world.Get_rank()
shape = (4, 16, 32)
x = torch.randn(shape, generator=torch.Generator().manual_seed(1))

for codec, bound in (("none", 0.0), ("ebq:abs:1e-3", 1e-3)):
    meters = Meters()
    link = PipeLink(world, parse_codec(codec), meters)
    pp = meters.ops["pp"]
    if rank == 0:
        link.send(x, 1, tag=0)
        link.send(2 * x, 1, tag=1)
        time.sleep(0.4)  # rank 1 waits for this send: the bubble, not communication
        link.send(-x, 1, tag=2)
        link.finish_sends()
        assert pp.calls == 3 and pp.raw_bytes == 3 * x.numel() * 4
        assert (pp.frame_bytes < pp.raw_bytes) == (codec != "none"), pp
    else:
        pending = [link.post_recv(shape, 0, tag) for tag in range(3)]
        got = [link.wait(p) for p in pending]
        for y, want in zip(got, (x, 2 * x, -x), strict=True):
            err = (y - want).abs().max().item()
            assert err <= bound, (codec, err)
            if bound:
                assert err > 0, "the codec was not applied"
        assert pp.wait_s > 0.3, pp
        assert pp.comm_s < 0.2, pp
    link.close()
    world.Barrier()

# A large tensor moves while neither stage calls the link: the engine's thread drives MPI.
big = torch.ones(1 << 21)  # 8 MiB: MPI moves it only while each side is inside MPI
for codec in ("none", "ebq:abs:1e-3"):
    link = PipeLink(world, parse_codec(codec), Meters())
    if rank == 0:
        link.send(big, 1, tag=0)
    else:
        pending = link.post_recv(big.shape, 0, tag=0)
    world.Barrier()
    time.sleep(1.0)  # both stages "compute"
    if rank == 1:
        assert pending.data.done() and pending.envelope.done(), f"{codec}: stalled"
        assert torch.equal(link.wait(pending), big) or codec != "none"
    link.close()

# A tensor that never comes: the engine's deadline, CommTimeout, the link marked broken.
pycomm.set_timeout(0.5)
link = PipeLink(world, parse_codec("none"), Meters())
if rank == 1:
    pending = link.post_recv((4,), 0, tag=7)
    try:
        link.wait(pending)
        raise AssertionError("a receive that nothing matches did not time out")
    except pycomm.CommTimeout as exc:
        assert "pipeline" in str(exc) and "rank 0" in str(exc), exc
    assert link.engine.broken is not None
    try:
        link.send(x, 0, tag=8)
        raise AssertionError("a broken link sent")
    except pycomm.CommTimeout:
        pass
world.Barrier()
link.close()

if rank == 0:
    print("pipe link: passed", flush=True)
