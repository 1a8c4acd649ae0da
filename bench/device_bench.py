"""Device codecs and staging on one GPU: throughput beside torch's casts and a device copy.

    python bench/device_bench.py --size 1G --out table.md
    python bench/device_bench.py --size 256M --tune --out shapes.md   # the launch shapes

Rows: ebq fast on the device (its payload left there, and the frame on the host), each device
quantizer (pycodecs.device, Triton) with and without fused error feedback, torch's own
fp16/bf16 casts, a device-to-device copy (clone), pinned device-to-host and host-to-device
copies, and the DDP hook on a 25 MB bucket on 1 rank (int8 and ebq through the device codecs,
uncompressed through staging, each against the same bucket on the CPU; a plain copy round trip).
A row that fails says so in its name; the others still run.
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
from pycodecs.device import ebq  # noqa: E402

PAYLOAD_BYTES = {"fp16": 2, "bf16": 2, "int8": 1, "int4": 0.5, "sign": 0.125}


def timed(rows: list, name: str, fn, moved: float, **bench) -> None:
    """Append (name, ms, bytes moved), or the error in the name: one failing row (a kernel
    that does not compile) leaves the others."""
    try:
        rows.append((name, do_bench(fn, **bench), moved))
    except Exception as exc:  # noqa: BLE001 (reported in the table)
        rows.append((f"{name}: FAILED {type(exc).__name__}: {str(exc)[:160]}", float("nan"), 0))


def kernel_rows(n: int) -> list[tuple[str, float, float]]:
    """(name, ms, bytes moved) per device kernel and baseline on n float32 elements."""
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(n, device="cuda", generator=g) * 1e-3
    r = torch.zeros_like(x)
    rows: list = []
    timed(rows, "device copy (clone)", lambda: x.clone(), 8 * n)
    timed(rows, "torch cast to fp16", lambda: x.to(torch.float16), 6 * n)
    timed(rows, "torch cast to bf16", lambda: x.to(torch.bfloat16), 6 * n)
    # ebq fast first (never run on a GPU before): the payload on the device (kernels and scan),
    # then end to end (widths, packed words and outliers copied to the host, the frame there)
    for eb in (1e-5, 1e-4):
        enc = lambda e=eb: ebq.encode(x, error_bound=e)  # noqa: E731
        timed(rows, f"device ebq fast abs {eb:g}, payload on the device", enc, 4 * n)
        timed(rows, f"device ebq fast abs {eb:g} + error feedback, payload on the device",
              lambda e=eb: ebq.encode(x, error_bound=e, residual=r), 12 * n)  # fmt: skip
    for mode, eb in (("abs", 1e-5), ("rel", 1e-3)):
        frame = lambda m=mode, e=eb: dc.compress(x, "ebq", error_bound=e, mode=m)  # noqa: E731
        timed(rows, f"device ebq fast {mode} {eb:g}, frame on the host", frame, 4 * n,
              warmup=5, rep=20)  # fmt: skip
    for codec in dc.CODECS:
        out = PAYLOAD_BYTES[codec] * n
        timed(rows, f"device {codec}", lambda c=codec: dc.encode(x, c), 4 * n + out)
        timed(rows, f"device {codec} + error feedback",
              lambda c=codec: dc.encode(x, c, residual=r), 12 * n + out)  # fmt: skip
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
                    name = f"{codec} + error feedback, tile {tile}, {warps} warps"
                    fn = lambda c=codec: dc.encode(x, c, residual=r)  # noqa: E731
                    timed(rows, name, fn, 12 * n + PAYLOAD_BYTES[codec] * n, warmup=10, rep=30)
    finally:
        dc.TUNING.update(default)
    return rows


def copy_rows(nbytes: int) -> list[tuple[str, float, float]]:
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    rows: list = []
    timed(rows, "pinned device-to-host", lambda: host.copy_(dev, non_blocking=True), nbytes)
    timed(rows, "pinned host-to-device", lambda: dev.copy_(host, non_blocking=True), nbytes)
    return rows


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
    """The hook on one rank, a CPU bucket against a CUDA bucket: int8 with error feedback and
    ebq (rel 1e-4, error feedback) through the device codecs, uncompressed through staging."""
    from pycomm.distributed import hooks

    n = nbytes // 4
    rows: list = []
    base = torch.randn(n) * 1e-3
    for codec, how in (("int8", "device codec"), ("ebq", "device codec"), ("none", "staged")):
        for where in ("cpu", "cuda"):
            name = f"hook {codec} on a {where} bucket" + (f" ({how})" if where == "cuda" else "")
            try:
                state = hooks.CompressHookState(codec, min_compress_numel=0)
                buf = base.clone().to(where)
                times = []
                for _ in range(reps + 2):
                    buf.copy_(base)
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    hooks._allreduce_bucket(state, Bucket(buf), compress=True).wait()
                    torch.cuda.synchronize()
                    times.append(time.perf_counter() - t0)
                rows.append((name, 1e3 * statistics.median(times[2:]), 4 * n))
            except Exception as exc:  # noqa: BLE001 (reported in the table)
                rows.append((f"{name}: FAILED {type(exc).__name__}: {exc}"[:200], float("nan"), 0))
    dev = base.cuda()
    host = torch.empty(n, pin_memory=True)

    def round_trip() -> None:
        host.copy_(dev, non_blocking=True)
        dev.copy_(host, non_blocking=True)

    timed(rows, "pinned copy there and back", round_trip, 8 * n)
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
    ap.add_argument("--tune", action="store_true", help="only sweep the kernels' launch shapes")
    ap.add_argument("--out", type=Path, help="also write the tables here (markdown)")
    args = ap.parse_args()
    n = parse_size(args.size) // 4
    nb = parse_size(args.bucket)
    name = torch.cuda.get_device_name()
    parts = [f"{name}; torch {torch.__version__}; {n} float32 elements ({4 * n / 1e9:.2f} GB)"]
    if args.tune:
        parts.append(table(n, tuning_rows(n), "Launch shapes"))
        return finish(parts, args.out)
    parts.append(table(n, kernel_rows(n), "Device kernels"))
    copies = copy_rows(4 * n)
    parts.append(table(n, copies, "Host-device copies"))
    parts.append(table(nb // 4, hook_rows(nb), f"The DDP hook's staging, {nb / 1e6:.0f} MB bucket"))
    finish(parts, args.out)


def finish(parts: list[str], out: Path | None) -> None:
    text = "\n\n".join(parts) + "\n"
    print(text)
    if out:
        out.write_text(text)


if __name__ == "__main__":
    main()
