"""Shared pieces of the Python benches: input data, timing, error metrics, table output."""

from __future__ import annotations

import csv
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
DEFAULT_GRADS = BENCH_DIR / "data" / "grads_gpt.f32"


# ---- sizes ----

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """Bytes from '8', '64K', '16MB', '1.5G'."""
    text = text.strip().upper().rstrip("B")
    unit = text[-1] if text[-1] in UNITS else ""
    return int(float(text[: len(text) - len(unit)]) * UNITS[unit])


def sizes_from(spec: str) -> list[int]:
    """'1M,16M' as listed, or 'LO:HI' as every power-of-4 step from LO to HI."""
    if ":" in spec:
        lo, hi = (parse_size(s) for s in spec.split(":"))
        out, s = [], lo
        while s <= hi:
            out.append(s)
            s *= 4
        return out
    return [parse_size(s) for s in spec.split(",")]


# ---- input data ----


def synthetic(n: int, seed: int = 0) -> np.ndarray:
    """Gradient-like stand-in: Laplace body with a few large entries, float32."""
    rng = np.random.default_rng(seed)
    x = rng.laplace(0.0, 4e-4, n)
    spikes = rng.integers(0, n, max(1, n // 10_000))
    x[spikes] *= 50.0
    return x.astype(np.float32)


def load_input(path: Path | None, n: int | None, generate: bool) -> tuple[np.ndarray, str]:
    """The benchmark input and a line saying where it came from.

    path given: read it (raw little-endian float32). Otherwise the default gradient file, made
    by make_gradients.py when missing and generate is set; synthetic data as the last resort.
    n, when given, keeps the first n elements.
    """
    if path is None:
        path = DEFAULT_GRADS
        if not path.exists() and generate:
            print(f"{path} is missing: running make_gradients.py (about 1-2 minutes) ...")
            try:
                import make_gradients

                make_gradients.main(["--out", str(path)])
            except Exception as e:  # torch missing or the run failed: fall back below
                print(f"make_gradients failed ({type(e).__name__}: {e})")
        if not path.exists():
            size = n or (1 << 22)
            note = f"SYNTHETIC data ({size} Laplace-distributed float32; no gradient file)"
            return synthetic(size), note
    x = np.fromfile(path, dtype="<f4")
    if n:
        x = x[:n]
    return np.ascontiguousarray(x, dtype=np.float32), f"{path} ({x.size} float32)"


# ---- timing and metrics ----


def best_time(fn: Callable[[], object], reps: int) -> float:
    """Seconds of the fastest of reps calls, after one warm-up call."""
    fn()
    best = math.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def slowest_median(call: Callable[[], object], reps: int, comm) -> float:
    """Median over reps of the slowest rank's seconds of call() on comm (an mpi4py
    communicator; one warm-up call first, a barrier before each)."""
    call()
    times = []
    for _ in range(reps):
        comm.Barrier()
        t0 = time.perf_counter()
        call()
        times.append(max(comm.allgather(time.perf_counter() - t0)))
    return float(np.median(times))


def per_call_us(fn: Callable[[], object], budget_s: float = 0.05) -> float:
    """Mean microseconds per call of a fast function, over about budget_s seconds."""
    fn()
    calls, t0 = 0, time.perf_counter()
    while True:
        for _ in range(100):
            fn()
        calls += 100
        t = time.perf_counter() - t0
        if t >= budget_s:
            return 1e6 * t / calls


@dataclass
class Row:
    engine: str
    simd: str = "-"
    comp_MBps: float = math.nan
    decomp_MBps: float = math.nan
    ratio: float = math.nan
    frame_bytes: int = 0
    max_abs_err: float = math.nan
    bound: float = math.nan
    err_over_bound: float = math.nan
    psnr_db: float = math.nan
    group: str = ""
    note: str = ""


def measure(
    engine: str,
    x: np.ndarray,
    compress: Callable[[], object],
    decompress: Callable[[object], np.ndarray],
    size_of: Callable[[object], int],
    reps: int,
    bound: float = math.nan,
    **extra: str,
) -> Row:
    """Time compress() and decompress(frame); measure ratio and error of the decoded array."""
    t_c = best_time(compress, reps)
    frame = compress()
    t_d = best_time(lambda: decompress(frame), reps)
    y = np.asarray(decompress(frame)).reshape(-1)
    row = Row(engine, comp_MBps=x.nbytes / 1e6 / t_c, decomp_MBps=x.nbytes / 1e6 / t_d, **extra)
    row.frame_bytes = int(size_of(frame))
    row.ratio = x.nbytes / row.frame_bytes
    fill_error(row, x, y, bound)
    return row


def fill_error(row: Row, x: np.ndarray, y: np.ndarray, bound: float) -> None:
    x64, y64 = x.astype(np.float64), np.asarray(y, dtype=np.float64)
    err = np.abs(x64 - y64)
    row.max_abs_err = float(err.max()) if err.size else 0.0
    rmse = math.sqrt(float(np.mean(err * err))) if err.size else 0.0
    span = float(x64.max() - x64.min()) if x.size else 0.0
    row.psnr_db = 20 * math.log10(span / rmse) if rmse > 0 else math.inf
    row.bound = bound
    if bound > 0 and math.isfinite(bound):
        row.err_over_bound = row.max_abs_err / bound


# ---- output ----

COLUMNS = [  # (header, attribute, width, format)
    ("engine", "engine", 34, "s"),
    ("simd", "simd", 7, "s"),
    ("comp MB/s", "comp_MBps", 10, ".1f"),
    ("decomp MB/s", "decomp_MBps", 11, ".1f"),
    ("ratio", "ratio", 7, ".2f"),
    ("max abs err", "max_abs_err", 11, ".3g"),
    ("err/bound", "err_over_bound", 9, ".3f"),
    ("PSNR dB", "psnr_db", 8, ".1f"),
]


def _cell(value: object, width: int, fmt: str) -> str:
    if fmt == "s":
        return f"{value!s:<{width}}"
    v = float(value)  # type: ignore[arg-type]
    if math.isnan(v):
        return f"{'-':>{width}}"
    if math.isinf(v):
        return f"{'inf':>{width}}"
    return f"{v:>{width}{fmt}}"


def _finite(v: object) -> object:
    """JSON has no NaN or infinity: NaN becomes null, infinities strings."""
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


@dataclass
class Table:
    title: str
    rows: list[Row] = field(default_factory=list)

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        return row

    def text(self) -> str:
        head = " ".join(f"{h:<{w}}" if f == "s" else f"{h:>{w}}" for h, _, w, f in COLUMNS)
        lines = [self.title, head, "-" * len(head)]
        group = None
        for r in self.rows:
            if r.group != group and r.group:
                lines.append(f"[{r.group}]")
            group = r.group
            cells = " ".join(_cell(getattr(r, a), w, f) for _, a, w, f in COLUMNS)
            lines.append(cells + (f"  {r.note}" if r.note else ""))
        return "\n".join(lines)

    def write(self, fmt: str, out=sys.stdout) -> None:
        if fmt == "json":
            rows = [{k: _finite(v) for k, v in asdict(r).items()} for r in self.rows]
            json.dump({"title": self.title, "rows": rows}, out, indent=1)
            out.write("\n")
        elif fmt == "csv":
            w = csv.DictWriter(out, fieldnames=list(asdict(Row("")).keys()))
            w.writeheader()
            for r in self.rows:
                w.writerow(asdict(r))
        else:
            out.write(self.text() + "\n")
