"""The codec bench from Python: every mpiucc codec through pycodecs, beside the baselines.

    python bench/codec_bench.py                 # real GPT gradients (made on first use)
    python bench/codec_bench.py --quick         # small input, few repetitions (CI smoke test)
    python bench/codec_bench.py --file bench/data/acts_gpt.f32 --codecs ebq,int8 --csv

One table: memcpy (the physical limit), each pycodecs codec on the generic and the AVX2 path
(ebq at relative bounds; quantizers at their defaults, plain and with fused error feedback),
then the baselines a user would otherwise pick at the same absolute bound. MB/s count
uncompressed bytes (1e6) per second in both directions, best of --reps after a warm-up; the
calls reuse output buffers (out=), as the training hot path does. A second table gives the
per-call cost of tiny calls, where the binding's overhead shows.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import _baselines
import numpy as np
from _common import Row, Table, best_time, fill_error, load_input, measure, per_call_us

QUANTIZERS = ("fp16", "bf16", "int8", "int4", "sign", "qsgd", "topk")
# the library's defaults are qsgd s=16 and topk k=16/256; these rows keep the C bench's choices
QUANTIZER_KW = {
    "qsgd": ({"levels": 7, "rounding": "stochastic", "seed": 1}, " s=7"),
    "topk": ({"levels": 3}, " k=3/block"),
}
UNSUPPORTED = 9  # MPIUCC_ERR_UNSUPPORTED, pinned in mpiucc.h


def import_pycodecs():
    try:
        import pycodecs
    except ImportError as e:
        print(
            f"pycodecs is not importable ({e}): only memcpy and the baselines are measured.\n"
            "Build it first: pip install --no-build-isolation -e .  (or: make build)\n",
            file=sys.stderr,
        )
        return None
    return pycodecs


def engines(codecs: list[str], bounds: list[float]) -> list[tuple[str, str, dict, bool]]:
    """(row name, codec, keywords, error feedback) for every row of the mpiucc section."""
    out: list[tuple[str, str, dict, bool]] = []
    if "raw" in codecs:
        out.append(("raw", "raw", {}, False))
    if "ebq" in codecs:
        for i, rel in enumerate(bounds):
            for level in ("fast", "dense"):
                for pred in ("none", "delta"):
                    kw = {"error_bound": rel, "mode": "rel", "level": level, "predictor": pred}
                    out.append((f"ebq {level}/{pred} rel={rel:g}", "ebq", kw, False))
                    if i == 0 and level == "fast" and pred == "none":
                        out.append((f"ebq {level}/{pred} rel={rel:g} +ef", "ebq", kw, True))
    for q in QUANTIZERS:
        if q in codecs:
            kw, what = QUANTIZER_KW.get(q, ({}, ""))
            out += [(q + what, q, kw, False), (f"{q}{what} +ef", q, kw, True)]
    return out


def probe(pc, codec: str, kw: dict, x: np.ndarray) -> str | None:
    """None when the library can run this codec, else why not ("unsupported" or a message)."""
    try:
        pc.compress(x[:64], codec, **kw)
    except pc.CodecError as e:
        return "unsupported" if e.status == UNSUPPORTED else f"{e.status_name}: {e}"
    except (ValueError, TypeError) as e:
        return f"{type(e).__name__}: {e}"
    return None


def compressor(pc, x: np.ndarray, codec: str, kw: dict, buf: bytearray, residual):
    """A no-argument compress call into buf; with error feedback when residual is given."""
    if residual is None:
        return lambda: pc.compress(x, codec, out=buf, **kw)

    def comp():
        f = pc.compress_ef(x, residual, codec, out=buf, **kw)
        return f[0] if isinstance(f, tuple) else f

    return comp


def mpiucc_rows(pc, x: np.ndarray, names: list, reps: int) -> tuple[list[Row], list[str]]:
    rows, skipped = [], []
    levels = ["generic", "avx2"]
    initial = pc.simd_level()
    y = np.empty_like(x)
    try:
        for name, codec, kw, ef in names:
            why = probe(pc, codec, kw, x)
            if why == "unsupported":
                if codec not in skipped:
                    skipped.append(codec)
                continue
            if why:
                rows.append(Row(name, group="mpiucc (pycodecs)", note=why))
                continue
            buf = bytearray(pc.compress_bound(x.size, "float32", codec, **kw))
            residual = np.zeros_like(x)
            ref = None
            for level in levels:
                if pc.set_simd_level(level) != level:
                    continue
                comp = compressor(pc, x, codec, kw, buf, residual if ef else None)

                row = measure(
                    name,
                    x,
                    comp,
                    lambda f: pc.decompress(f, out=y),
                    len,
                    reps,
                    simd=level,
                    group="mpiucc (pycodecs)",
                )
                residual[:] = 0  # the frame measured for errors starts from a zero residual
                frame = bytes(comp())
                row.frame_bytes, row.ratio = len(frame), x.nbytes / len(frame)
                fill_error(row, x, pc.decompress(frame, out=y), pc.header(frame).bound)
                if ref is None:
                    ref = frame
                elif frame != ref:
                    row.note = "frame differs from generic!"
                rows.append(row)
    finally:
        pc.set_simd_level(initial)
    return rows, skipped


def memcpy_row(x: np.ndarray, reps: int) -> Row:
    dst, back = np.empty_like(x), np.empty_like(x)
    t_c = best_time(lambda: np.copyto(dst, x), 3 * reps)
    t_d = best_time(lambda: np.copyto(back, dst), 3 * reps)
    mb = x.nbytes / 1e6
    return Row(
        "memcpy (limit)",
        comp_MBps=mb / t_c,
        decomp_MBps=mb / t_d,
        ratio=1.0,
        frame_bytes=x.nbytes,
        max_abs_err=0.0,
        psnr_db=math.inf,
    )


def overhead_lines(pc, quick: bool) -> list[str]:
    """Microseconds per call for 1 element and 4 KiB: the fixed cost of one call."""
    budget = 0.01 if quick else 0.05
    xs = {n: np.linspace(-1, 1, n, dtype=np.float32) for n in (1, 1024)}
    calls: list[tuple[str, dict]] = []
    for codec, kw in (("raw", {}), ("ebq", {"error_bound": 1e-4}), ("fp16", {})):
        if pc is None or probe(pc, codec, kw, xs[1024]) is not None:
            continue
        for n, x in xs.items():
            buf = bytearray(pc.compress_bound(n, "float32", codec, **kw))
            frame = bytes(pc.compress(x, codec, **kw))
            y = np.empty_like(x)
            calls.append(
                (
                    f"pycodecs.compress {codec} out=",
                    {n: lambda x=x, b=buf, c=codec, k=kw: pc.compress(x, c, out=b, **k)},
                )
            )
            calls.append(
                (
                    f"pycodecs.decompress {codec} out=",
                    {n: lambda f=frame, y=y: pc.decompress(f, out=y)},
                )
            )
    try:
        import torch

        ts = {n: torch.from_numpy(x) for n, x in xs.items()}
        calls.append(("torch x.half() (reference)", {n: t.half for n, t in ts.items()}))
    except ImportError:
        pass
    calls.append(("numpy copy (reference)", {n: x.copy for n, x in xs.items()}))
    merged: dict[str, dict] = {}
    for name, fns in calls:
        merged.setdefault(name, {}).update(fns)
    lines = [f"{'per-call time (us)':<40} {'1 element':>10} {'4 KiB':>10}"]
    for name, fns in merged.items():
        t = [per_call_us(fns[n], budget) for n in (1, 1024)]
        lines.append(f"{name:<40} {t[0]:>10.2f} {t[1]:>10.2f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", type=Path, help="raw little-endian float32 input")
    ap.add_argument("--n", type=int, help="use only the first N elements")
    ap.add_argument("--quick", action="store_true", help="256Ki elements, 2 reps (smoke test)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--codecs", default="raw,ebq," + ",".join(QUANTIZERS))
    ap.add_argument("--bounds", default="1e-4", help="ebq relative bounds, comma-separated")
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument("--no-generate", action="store_true", help="never run make_gradients")
    fmt = ap.add_mutually_exclusive_group()
    fmt.add_argument("--csv", dest="fmt", action="store_const", const="csv")
    fmt.add_argument("--json", dest="fmt", action="store_const", const="json")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.reps = args.n or (1 << 18), min(args.reps, 2)
    bounds = [float(b) for b in args.bounds.split(",")]
    codecs = args.codecs.split(",")

    try:
        import torch

        torch.set_num_threads(1)  # the codecs run on one thread: compare like with like
    except ImportError:
        pass
    pc = import_pycodecs()
    generate = not (args.no_generate or args.quick)
    x, source = load_input(args.file, args.n, generate)
    simd = f"cpu {pc.simd_level()}" if pc else "pycodecs missing"
    table = Table(
        f"codec_bench: {source}, {x.nbytes / 1e6:.1f} MB, range [{x.min():.4g}, "
        f"{x.max():.4g}], best of {args.reps}, {simd}"
    )
    table.add(memcpy_row(x, args.reps))
    skipped: list[str] = []
    if pc is not None:
        rows, skipped = mpiucc_rows(pc, x, engines(codecs, bounds), args.reps)
        table.rows += rows
    if not args.no_baselines:
        for i, rel in enumerate(bounds):
            bound = rel * float(x.max() - x.min())
            for row in _baselines.all_rows(x, bound, args.reps, fixed_rate=i == 0):
                if len(bounds) > 1 and row.bound > 0:
                    row.engine += f" rel={rel:g}"
                table.add(row)
    table.write(args.fmt or "text")
    if args.fmt is None:
        for rel in bounds:
            print(f"baselines' absolute bound at rel={rel:g}: {rel * (x.max() - x.min()):.4g}")
        if skipped:
            print(f"not in this build of the library: {', '.join(skipped)}")
        print()
        print("\n".join(overhead_lines(pc, args.quick)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
