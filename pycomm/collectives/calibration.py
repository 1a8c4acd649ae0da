"""How fast the codecs run on this CPU: measured once (a fraction of a second), then cached.

The figures are seconds per input byte (float32) of each codec step codec="auto" weighs, and
how much smaller ebq's dense frames are than its fast ones on gradient-like data. They are
kept in ``$MPIUCC_CACHE_DIR/codec_speed.json`` (default ``~/.cache/mpiucc``), keyed by the
machine, the codecs' version and SIMD level, so each machine measures once; every rank of a job
reads or measures its own, and the collectives agree on the slowest.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pycodecs

#: What is measured: seconds per input byte to encode and decode at each ebq level and through
#: an fp16 cast, and ``dense_share``, a dense frame's size over a fast one's.
FIGURES = ("ebq_fast", "ebq_dense", "cast", "dense_share")
SAMPLE_COUNT = 1 << 18  # 1 MiB of float32
REPEATS = 3

_lock = threading.Lock()
_speeds: dict[str, float] | None = None


def cache_path() -> Path:
    root = os.environ.get("MPIUCC_CACHE_DIR") or Path.home() / ".cache" / "mpiucc"
    return Path(root) / "codec_speed.json"


def machine_key() -> str:
    version = getattr(pycodecs, "__version__", "?")
    return f"{platform.machine()} {platform.processor()} {os.cpu_count()} {version} " + (
        pycodecs.simd_level()
    )


def codec_speeds() -> dict[str, float]:
    """This CPU's figures: from memory, else the cache file, else measured (and cached)."""
    global _speeds
    if _speeds is None:
        with _lock:
            if _speeds is None:
                _speeds = _load() or _store(measure())
    return _speeds


def measure(count: int = SAMPLE_COUNT, repeats: int = REPEATS) -> dict[str, float]:
    """Measure the figures now (best of ``repeats``, on Laplace-distributed data)."""
    x = np.random.default_rng(16).laplace(0, 1e-3, count).astype(np.float32)
    e = 1e-3 * float(x.max() - x.min())
    nbytes = x.nbytes

    def best(fn) -> float:
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times) / nbytes

    out = np.empty_like(x)

    def round_trip(**kw) -> None:
        pycodecs.decompress(pycodecs.compress(x, **kw), out=out)

    fast = pycodecs.compress(x, "ebq", error_bound=e, level="fast")
    dense = pycodecs.compress(x, "ebq", error_bound=e, level="dense")
    return {
        "ebq_fast": best(lambda: round_trip(codec="ebq", error_bound=e, level="fast")),
        "ebq_dense": best(lambda: round_trip(codec="ebq", error_bound=e, level="dense")),
        "cast": best(lambda: round_trip(codec="fp16")),
        "dense_share": len(dense) / len(fast),
    }


def forget() -> None:
    """Drop the figures held in memory (the next use reads the cache or measures again)."""
    global _speeds
    with _lock:
        _speeds = None


def _load() -> dict[str, float] | None:
    try:
        entry = json.loads(cache_path().read_text()).get(machine_key())
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(entry, dict) or set(entry) != set(FIGURES):
        return None
    if not all(isinstance(v, float) and v > 0 for v in entry.values()):
        return None
    return entry


def _store(speeds: dict[str, float]) -> dict[str, float]:
    """Add this machine's figures to the cache file (atomically: ranks may race); a cache
    that cannot be written is skipped, the figures are still used."""
    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            table = json.loads(path.read_text())
            table = table if isinstance(table, dict) else {}
        except (OSError, ValueError):
            table = {}
        table[machine_key()] = speeds
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".codec_speed.")
        with os.fdopen(fd, "w") as f:
            json.dump(table, f, indent=1)
        os.replace(tmp, path)
    except OSError:
        pass
    return speeds
