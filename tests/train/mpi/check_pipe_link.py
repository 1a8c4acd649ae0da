"""Compressed pipeline send/recv on 2 ranks: the bound, the bytes, and the bubble split.

mpiexec -n 2 python check_pipe_link.py
"""

import time

import torch
from mpi4py import MPI

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

if rank == 0:
    print("pipe link: passed", flush=True)
