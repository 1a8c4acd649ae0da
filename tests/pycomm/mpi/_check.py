"""Helpers for the MPI test scripts (run under mpiexec, one process per rank)."""

from __future__ import annotations

import hashlib

import numpy as np
import pycodecs
from mpi4py import MPI

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()


#: Every quantizer the codec library has: each runs through every collective check.
QUANTIZERS = ("fp16", "bf16", "int8", "int4", "sign", "qsgd", "topk")
#: Parameters a codec needs here (qsgd's levels, topk's k per block); the rest take defaults.
PARAMS = {"ebq": {"error_bound": 1e-3}, "qsgd": {"levels": 8}, "topk": {"levels": 8}}


def params(codec: str) -> dict:
    return dict(PARAMS.get(codec, {}))


assert set(QUANTIZERS) | {"raw", "ebq"} == set(pycodecs.CODECS), "a codec is left unchecked"


def same_everywhere(a: np.ndarray, what: str) -> None:
    """Assert that a's bytes are identical on every rank."""
    digest = hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
    digests = COMM.allgather(digest)
    assert len(set(digests)) == 1, f"{what}: results differ across ranks: {digests}"


def everyone(x: np.ndarray) -> np.ndarray:
    """Every rank's x stacked in rank order (for references)."""
    return np.stack(COMM.allgather(x))


def max_error(got: np.ndarray, want: np.ndarray) -> float:
    """Max |got - want| over elements where want is finite; NaN/Inf must match exactly."""
    want = np.asarray(want, np.float64)
    got64 = got.astype(np.float64)
    finite = np.isfinite(want)
    assert np.array_equal(np.isnan(got64), np.isnan(want)), "NaN positions differ"
    assert np.array_equal(got64[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    return float(np.max(np.abs(got64[finite] - want[finite]), initial=0.0))
