"""The codecs' speeds on one core: measured by ``--measure-speeds`` into calibration/speeds.json
in the calibration session (one core, the best of 15), read back by the fit."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pycodecs

CODECS = {"ebq": dict(codec="ebq", error_bound=1e-3, mode="rel"), "int8": {}, "sign": {}}


def codec_speeds(mib: int = 16) -> dict:
    """Seconds per raw byte on one core of each step the collectives run:
    compress, decompress and decompress_add per codec, ebq_add of two ebq frames, the finite
    min/max pass of ebq's agreement, a float32 add and memcpy (the node steps). The best of 15:
    one core's speed, whatever else runs; the emulator's sharing is the fit's kappa."""
    x = np.random.default_rng(0).laplace(0, 1e-3, mib << 18).astype(np.float32)
    out = np.empty_like(x)

    def best(call) -> float:
        times = []
        for _ in range(15):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        return min(times) / x.nbytes

    speeds = {}
    for name, kw in CODECS.items():
        kw = {"codec": name, **kw}
        frame = pycodecs.compress(x, **kw)
        speeds[name] = dict(
            c=best(lambda: pycodecs.compress(x, **kw)),  # noqa: B023
            d=best(lambda: pycodecs.decompress(frame, out=out)),  # noqa: B023
            da=best(lambda: pycodecs.decompress_add(frame, out=out)),  # noqa: B023
            ratio=x.nbytes / len(frame),
        )
    frame = pycodecs.compress(x, **{"codec": "ebq", **CODECS["ebq"]})
    speeds["ebq"]["sum"] = best(lambda: pycodecs.ebq_add(frame, frame))
    speeds["ebq"]["stats"] = best(lambda: pycodecs.finite_stats(x, 0.0))
    speeds["add"] = best(lambda: np.add(x, out, out=out))
    speeds["memcpy"] = best(lambda: np.copyto(out, x))
    return speeds


def measure_speeds(path: Path) -> dict:
    """codec_speeds, written to path with the load it ran at (the fit reads that file)."""
    load = os.getloadavg()[0]
    speeds = codec_speeds()
    record = dict(cores=os.cpu_count() or 1, load=round(load, 2), speeds=speeds)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return record


def load_speeds(path: Path) -> dict:
    """The record measure_speeds wrote: cores, load and the speeds."""
    return json.loads(path.read_text())
