"""Device codecs and staging on one GPU: throughput beside torch's casts and a device copy.

    python bench/device_bench.py --size 1G --out table.md

Rows: each device quantizer (pycodecs.device, Triton) with and without fused error feedback,
torch's own fp16/bf16 casts, a device-to-device copy (clone), pinned device-to-host and
host-to-device copies, and the DDP hook's staging on a 25 MB bucket (int8 on 1 rank: the CUDA
bucket through pinned mirrors against the same bucket on the CPU, and a plain copy round trip).
GB/s counts input bytes (4 per float32 element) per second, 1e9; "moved" counts every byte
read or written. Kernel times are CUDA-event medians from triton.testing.do_bench.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import parse_size  # noqa: E402
from pycodecs import device as dc  # noqa: E402

PAYLOAD_BYTES = {"fp16": 2, "bf16": 2, "int8": 1, "int4": 0.5, "sign": 0.125}


def kernel_rows(n: int) -> list[tuple[str, float, float]]:
    """(name, ms, bytes moved) per device kernel and baseline on n float32 elements."""
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(n, device="cuda", generator=g) * 1e-3
    r = torch.zeros_like(x)
    rows = []
    copy_ms = do_bench(lambda: x.clone())
    rows.append(("device copy (clone)", copy_ms, 8 * n))
    rows.append(("torch cast to fp16", do_bench(lambda: x.to(torch.float16)), 6 * n))
    rows.append(("torch cast to bf16", do_bench(lambda: x.to(torch.bfloat16)), 6 * n))
    for codec in dc.CODECS:
        out = PAYLOAD_BYTES[codec] * n
        ms = do_bench(lambda c=codec: dc.encode(x, c))
        rows.append((f"device {codec}", ms, 4 * n + out))
        ms = do_bench(lambda c=codec: dc.encode(x, c, residual=r))
        rows.append((f"device {codec} + error feedback", ms, 12 * n + out))
    # ebq end to end: the device kernels, the copies of widths, packed blocks and outliers to
    # the host, the records and the header there (the frame is on the host when it returns)
    for mode, eb in (("abs", 1e-5), ("rel", 1e-3)):
        ms = do_bench(lambda m=mode, e=eb: dc.compress(x, "ebq", error_bound=e, mode=m))
        rows.append((f"device ebq fast {mode} {eb:g}, frame on the host", ms, 4 * n))
    ms = do_bench(lambda: dc.compress(x, "ebq", error_bound=1e-5, residual=r))
    rows.append(("device ebq fast abs 1e-05 + error feedback, frame on the host", ms, 12 * n))
    return rows


def tuning_rows(n: int) -> list[tuple[str, float, float]]:
    """Each codec with error feedback under each launch shape (the default is in TUNING)."""
    x = torch.randn(n, device="cuda") * 1e-3
    r = torch.zeros_like(x)
    default, rows = {c: dict(t) for c, t in dc.TUNING.items()}, []
    try:
        for codec in dc.CODECS:
            for tile in (1024, 2048, 4096, 8192):
                for warps in (4, 8):
                    dc.TUNING[codec] = {"tile": tile, "num_warps": warps}
                    ms = do_bench(lambda c=codec: dc.encode(x, c, residual=r), warmup=10, rep=30)
                    name = f"{codec} + error feedback, tile {tile}, {warps} warps"
                    rows.append((name, ms, 12 * n + PAYLOAD_BYTES[codec] * n))
    finally:
        dc.TUNING.update(default)
    return rows


def copy_rows(nbytes: int) -> list[tuple[str, float, float]]:
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    d2h = do_bench(lambda: host.copy_(dev, non_blocking=True))
    h2d = do_bench(lambda: dev.copy_(host, non_blocking=True))
    return [("pinned device-to-host", d2h, nbytes), ("pinned host-to-device", h2d, nbytes)]


class Bucket:
    """What the hook reads of a dist.GradBucket."""

    def __init__(self, buf: torch.Tensor) -> None:
        self.buf = buf

    def buffer(self) -> torch.Tensor:
        return self.buf

    def index(self) -> int:
        return 0

    def parameters(self) -> list[torch.Tensor]:
        return [self.buf]

    def is_last(self) -> bool:
        return True


def hook_rows(nbytes: int, reps: int = 20) -> list[tuple[str, float, float]]:
    """The hook (int8, error feedback, 1 rank) on a CPU bucket and on a CUDA bucket."""
    from pycomm.distributed import hooks

    n = nbytes // 4
    rows = []
    base = torch.randn(n) * 1e-3
    for where in ("cpu", "cuda"):
        state = hooks.CompressHookState("int8", min_compress_numel=0)
        buf = base.clone().to(where)
        times = []
        for _ in range(reps + 2):
            buf.copy_(base)
            if where == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            hooks._allreduce_bucket(state, Bucket(buf), compress=True).wait()
            if where == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        rows.append((f"hook int8 on a {where} bucket", 1e3 * statistics.median(times[2:]), 4 * n))
    dev = base.cuda()
    host = torch.empty(n, pin_memory=True)

    def round_trip() -> None:
        host.copy_(dev, non_blocking=True)
        dev.copy_(host, non_blocking=True)

    rows.append(("pinned copy there and back", do_bench(round_trip), 8 * n))
    return rows


def table(n: int, rows: list[tuple[str, float, float]], title: str) -> str:
    lines = [
        f"### {title}",
        "",
        "| what | ms | GB/s of input | GB/s moved |",
        "|---|---:|---:|---:|",
    ]
    for name, ms, moved in rows:
        lines.append(f"| {name} | {ms:.3f} | {4 * n / ms / 1e6:.0f} | {moved / ms / 1e6:.0f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="1G", help="input bytes of the kernel rows (float32)")
    ap.add_argument("--bucket", default="25M", help="bucket bytes of the hook rows")
    ap.add_argument("--tune", action="store_true", help="also sweep the kernels' launch shapes")
    ap.add_argument("--out", type=Path, help="also write the tables here (markdown)")
    args = ap.parse_args()
    n = parse_size(args.size) // 4
    nb = parse_size(args.bucket)
    name = torch.cuda.get_device_name()
    parts = [f"{name}; torch {torch.__version__}; {n} float32 elements ({4 * n / 1e9:.2f} GB)"]
    parts.append(table(n, kernel_rows(n), "Device kernels"))
    copies = copy_rows(4 * n)
    parts.append(table(n, copies, "Host-device copies"))
    parts.append(table(nb // 4, hook_rows(nb), f"The DDP hook's staging, {nb / 1e6:.0f} MB bucket"))
    if args.tune:
        parts.append(table(n // 4, tuning_rows(n // 4), "Launch shapes (a quarter of the input)"))
    text = "\n\n".join(parts) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
