"""DDP step time with mpiucc's hooks beside plain DDP and PyTorch's own hooks, in one run.

Run under MPI, e.g. ``mpiexec -n 4 python bench/ddp_bench.py`` (or through bench/slow_net.sh
for an emulated 1 Gbit/s network). Every variant trains the same GPT-like model on the same
data with DDP on gloo (mpiucc's hooks move their bytes through MPI); "T_local" skips the
communication, so T - T_local is each variant's communication overhead. Rank 0 prints a table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from make_gradients import TinyGPT, batch, stdlib_corpus
from mpi4py import MPI
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
from torch.nn.parallel import DistributedDataParallel as DDP

from pycomm.collectives import auto_state
from pycomm.collectives.engine import engine_of
from pycomm.distributed.hooks import CompressHookState, mpiucc_compress_hook

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()


def local_hook(_state, bucket):
    """No communication at all: the step's compute time (T_local)."""
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


def variants(args) -> dict:
    eb = args.bound
    return {
        "T_local (no communication)": (local_hook, None),
        "DDP gloo, no hook": (None, None),
        "torch fp16_compress_hook": (default_hooks.fp16_compress_hook, None),
        "torch powerSGD_hook (rank 1)": (
            powerSGD_hook.powerSGD_hook,
            lambda: powerSGD_hook.PowerSGDState(
                process_group=None, matrix_approximation_rank=1, start_powerSGD_iter=2
            ),
        ),  # one bucket: see ONE_BUCKET
        f"mpiucc ebq rel {eb:g}": (
            mpiucc_compress_hook,
            lambda: CompressHookState("ebq", error_bound=eb, mode="rel"),
        ),
        f"mpiucc auto rel {eb:g}": (
            mpiucc_compress_hook,
            lambda: CompressHookState("auto", error_bound=eb, mode="rel"),
        ),
        "mpiucc int8": (mpiucc_compress_hook, lambda: CompressHookState("int8")),
        "mpiucc sign": (mpiucc_compress_hook, lambda: CompressHookState("sign")),
    }


# PowerSGD's future callbacks issue allreduces from gloo's thread while the next bucket's hook
# issues its own from the main thread: with several buckets the ranks' orders can differ and
# gloo aborts ("Received data size doesn't match expected size"), as seen at 1 Gbit/s. With
# all gradients in one bucket there is one hook call per step and no race.
ONE_BUCKET = {powerSGD_hook.powerSGD_hook}


def run(name, hook, make_state, data, args) -> dict:
    if RANK == 0:
        print(f"running {name}", file=sys.stderr, flush=True)
    torch.manual_seed(0)
    model = TinyGPT(args.layers, args.width, args.heads, args.seq)
    grads_mb = sum(p.numel() * p.element_size() for p in model.parameters()) / 2**20
    bucket_mb = max(args.bucket_mb, grads_mb + 1) if hook in ONE_BUCKET else args.bucket_mb
    ddp = DDP(model, bucket_cap_mb=bucket_mb)
    state = make_state() if make_state else None
    if hook is not None:
        ddp.register_comm_hook(state, hook)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(1 + RANK)
    times, losses = [], []
    for step in range(args.warmup + args.steps):
        x, y = batch(data, args.batch, args.seq, gen)
        COMM.Barrier()
        t0 = time.perf_counter()
        logits, _ = ddp(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        dt = COMM.allreduce(time.perf_counter() - t0, op=MPI.MAX)
        if step >= args.warmup:
            times.append(dt)
        losses.append(loss.item())
    stats = getattr(state, "stats", None)
    ratio = stats.ratio if stats is not None and stats.frame_bytes else None
    mean_loss = COMM.allreduce(statistics.fmean(losses[-5:]), op=MPI.SUM) / SIZE
    row = {"name": name, "step": statistics.median(times), "loss": mean_loss, "ratio": ratio}
    if isinstance(state, CompressHookState) and state.codec.auto:
        row["auto"] = auto_picks(state)
    return row


def auto_picks(state: CompressHookState) -> str:
    """What auto keeps for each bucket's key, of the candidates its round tried, and their
    agreed times (ms)."""
    seen = auto_state.observed(engine_of(state.communicator()))
    return "; ".join(
        f"{e.kept or e.last} of {', '.join(e.order)} "
        f"({', '.join(f'{n} {1e3 * t:.0f}' for n, t in e.times.items())})"
        for e in seen.keys.values()
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument(
        "--bucket-mb", type=float, default=25.0, help="DDP bucket_cap_mb (25: DDP's default)"
    )
    p.add_argument("--bound", type=float, default=1e-3)
    p.add_argument(
        "--only",
        help="comma-separated words: run the variants whose names hold one (T_local and "
        "plain DDP always run)",
    )
    args = p.parse_args()
    torch.set_num_threads(1)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    store_dir = COMM.bcast(tempfile.mkdtemp() if RANK == 0 else None)
    dist.init_process_group(
        "gloo", init_method=f"file://{store_dir}/store", rank=RANK, world_size=SIZE
    )
    data, _ = stdlib_corpus(1 << 20)
    chosen = variants(args)
    if args.only:
        words = args.only.split(",")
        keep = list(chosen)[:2]
        chosen = {k: v for k, v in chosen.items() if k in keep or any(w in k for w in words)}
    rows = [run(name, h, s, data, args) for name, (h, s) in chosen.items()]
    if RANK == 0:
        report(rows, args)
    dist.destroy_process_group()


def report(rows: list[dict], args) -> None:
    n_params = sum(
        p.numel() for p in TinyGPT(args.layers, args.width, args.heads, args.seq).parameters()
    )
    local = rows[0]["step"]
    plain = rows[1]["step"] - local
    print(
        f"DDP on {SIZE} ranks, GPT {n_params / 1e6:.1f}M params ({n_params * 4 / 2**20:.1f} MiB "
        f"of gradients), batch {args.batch}x{args.seq}, median of {args.steps} steps"
    )
    head = ("variant", "step ms", "comm ms", "comm removed", "ratio", "loss")
    print(f"{head[0]:<30} {head[1]:>8} {head[2]:>8} {head[3]:>12} {head[4]:>6} {head[5]:>7}")
    for r in rows:
        comm = r["step"] - local
        removed = "" if r is rows[0] or r is rows[1] else f"{1 - comm / plain:>11.0%}"
        ratio = f"{r['ratio']:.1f}" if r["ratio"] else ""
        print(
            f"{r['name']:<30} {r['step'] * 1e3:>8.1f} {comm * 1e3:>8.1f} {removed:>12} "
            f"{ratio:>6} {r['loss']:>7.3f}"
        )
    print(f"plain DDP spends {plain / rows[1]['step']:.0%} of its step communicating")
    for r in rows:
        if "auto" in r:
            print(f"{r['name']} kept, per bucket (the round's tried and times, ms): {r['auto']}")


if __name__ == "__main__":
    main()
