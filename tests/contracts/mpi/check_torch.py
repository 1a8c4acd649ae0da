"""The contract matrix's torch part (issue 26): bf16 and fp16 tensors through the ``mpiucc``
backend's all_reduce with a compression policy (``set_compression``): identical bits on every
rank, and for ebq and auto the bound on the values the user gets (in the tensor's dtype), as
``check_matrix`` checks numpy arrays. The same lockstep hypothesis mechanics; ``EXAMPLES``.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import torch
import torch.distributed as dist
from contract import FAMILIES, Bound, Sent, check_reduction, digest, inputs
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import pycomm
import pycomm.distributed  # noqa: F401  (registers "mpiucc" and "mpi://")
from pycomm.distributed import set_compression

dist.init_process_group("mpiucc", init_method="mpi://")
RANK, SIZE = dist.get_rank(), dist.get_world_size()
EXAMPLES = int(os.environ.get("CONTRACT_EXAMPLES", "40"))
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}
SPECS = ("none", "ebq", "auto", "int8", "bf16")
FAILED: list[str] = []


def tensor_of(family: str, seed: int, rank: int, n: int, dtype: str) -> torch.Tensor:
    x = inputs(family, seed, rank, n, "float32").astype(np.float64)
    if family == "near_overflow":  # around the dtype's own largest values
        x = x / 1e38 * float(torch.finfo(DTYPES[dtype]).max) / 3
    return torch.from_numpy(x).to(DTYPES[dtype])


@settings(
    derandomize=True, database=None, phases=[Phase.explicit, Phase.generate], deadline=None,
    max_examples=EXAMPLES, suppress_health_check=list(HealthCheck),
)  # fmt: skip
@given(
    spec=st.sampled_from(SPECS), mode=st.sampled_from(["abs", "rel", "rms"]),
    bound=st.sampled_from([1e-1, 1e-2, 1e-3]), dtype=st.sampled_from(list(DTYPES)),
    op=st.sampled_from(["sum", "mean"]), family=st.sampled_from(FAMILIES),
    size=st.one_of(st.sampled_from([1, 2, 7, 257]), st.integers(1, 5000)),
    seed=st.integers(0, 2**31 - 1),
)  # fmt: skip
def test_backend(spec, mode, bound, dtype, op, family, size, seed) -> None:
    if spec in ("ebq", "auto"):
        codec = pycomm.CodecSpec(spec, error_bound=bound, mode=mode)
    else:
        codec = spec
    set_compression(all_reduce=codec, min_numel=1) if spec != "none" else set_compression()
    ts = [tensor_of(family, seed, r, size, dtype) for r in range(SIZE)]
    t, fails, dig = ts[RANK].clone(), [], ""
    try:
        dist.all_reduce(t, op=dist.ReduceOp.SUM if op == "sum" else dist.ReduceOp.AVG)
        got = t.float().numpy()
        if t.dtype != DTYPES[dtype] or t.shape != (size,):
            fails.append(f"dtype/shape {t.dtype} {tuple(t.shape)}")
        dig = digest(t.view(torch.int16).numpy())
        sent = Sent([x.float().numpy() for x in ts])
        kind = {"none": "float", "ebq": mode, "auto": mode}.get(spec)
        contract = None if kind is None else Bound(kind, bound, sent, op, dtype)
        lo, hi = RANK * size // SIZE, (RANK + 1) * size // SIZE
        if spec in ("ebq", "auto"):  # reduced in float32 within the bound, then stored
            bad = check_reduction(got, sent, op, contract, "float32", lo, hi, stored=dtype)
        else:
            bad = check_reduction(got, sent, op, contract, dtype, lo, hi)
        fails += [] if bad is None else [bad]
    except Exception as exc:  # noqa: BLE001
        fails.append(f"raised {type(exc).__name__}: {exc}")
    gathered = dist.group.WORLD and _allgather((fails, dig))
    found = [f"rank {r}: {f}" for r, (fs, _) in enumerate(gathered) for f in fs]
    if len({d for _, d in gathered}) > 1:
        found.append(f"results differ across ranks: {[d for _, d in gathered]}")
    if found:
        what = f"{spec} {mode} {bound} {dtype} {op} {family} size {size} seed {seed}"
        FAILED.append(what)
        if RANK == 0:
            print(f"FAIL torch all_reduce {what}\n  " + "\n  ".join(found), flush=True)


def _allgather(obj: object) -> list:
    out = [None] * SIZE
    dist.all_gather_object(out, obj)
    return out


if __name__ == "__main__":
    test_backend()
    if RANK == 0:
        print(f"torch: {SIZE} ranks, {len(FAILED)} failed" + ("" if FAILED else "; passed"))
    dist.destroy_process_group()
    sys.exit(1 if FAILED else 0)
