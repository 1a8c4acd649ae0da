"""codec="auto" for frames decoded as sent: allgather, bcast and point-to-point.

Each frame keeps its own bound (ebq by itself; a cast where u*max|x| + floor is within the
smallest bound any rank's data set), so no error budget is split over ranks. The collectives
agree on the statistics and figures as ``auto.agreed_choice`` does; a point-to-point sender
chooses alone (the frame says what it is) and the receiver takes any frame the contract
allows (``frames.AnyFrame``).
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from pycomm.collectives.auto import spec_of
from pycomm.collectives.auto_state import NONE, Choice, local_figures, observed
from pycomm.collectives.buffers import finite_min_max, finite_top_rms
from pycomm.collectives.cost import Figures, choose_frame
from pycomm.collectives.engine import Engine
from pycomm.collectives.spec import CodecSpec


def agreed_gather_choice(
    eng: Engine, comm: MPI.Comm, a: np.ndarray, spec: CodecSpec, what: str, *extra: object,
    root: int | None = None,
) -> Choice:  # fmt: skip
    """Agree and resolve spec="auto" for an allgather (or, with ``root``, a bcast): each rank's
    frame is decoded as sent, so ebq keeps the bound per frame by itself; a cast is proven for
    every rank from the largest |x| and the smallest scale of the bound (range, rms) agreed."""
    sig = spec.signature(what, a.dtype.str, a.size, root)
    label = f"{what} auto {a.dtype} x{a.size}"
    key = sig
    if spec.lossless or a.size == 0:
        eng.agree(label, sig)
        return Choice("raw", NONE, None, key)
    mine = root is None or comm.Get_rank() == root
    stats = _gather_statistics(a, spec) if mine else (0.0, -np.inf)
    agreed = eng.agree(
        label, sig, statistics=stats, figures=local_figures(eng, key).agreed_vector()
    )
    fig, (top, neg_scale) = Figures.from_agreed(agreed["figures"]), agreed["statistics"]
    smallest = spec.error_bound * -neg_scale
    ranks = 2 if root is not None else comm.Get_size()  # a bcast moves about one copy
    best = choose_frame(fig, count=a.size, dtype=a.dtype, ranks=ranks, top=top, bound=smallest)
    chosen = NONE if best == "raw" else spec_of(spec, best)
    return Choice(best, chosen, None if best == "raw" else chosen.codec_kwargs(), key)


def sender_choice(eng: Engine, a: np.ndarray, spec: CodecSpec) -> CodecSpec:
    """spec="auto" resolved by a sender alone (point-to-point: the frame says what it is); a
    raw decision is kept for the next sends of the same size, dtype and contract, as long as
    its chooser keeps it (``Chooser.decide``)."""
    if spec.lossless or a.size == 0:
        return NONE
    seen = observed(eng)  # its own table: the collectives' keys are agreed, these never are
    entry = seen.key(spec.signature("send", a.dtype.str, a.size), seen.sends)
    if entry.current() == "raw":
        entry.since += 1
        return NONE
    top, scale = _gather_statistics(a, spec)
    bound = spec.error_bound * -scale
    fig = local_figures(eng)
    name = choose_frame(fig, count=a.size, dtype=a.dtype, ranks=2, top=top, bound=bound)
    entry.decide({name: 0.0}, hold=lambda pick: pick == "raw")
    return NONE if name == "raw" else spec_of(spec, name)


def _gather_statistics(a: np.ndarray, spec: CodecSpec) -> tuple[float, float]:
    """(max |x|, -scale of the bound): the range for rel, the rms for rms, 1 for abs."""
    if spec.mode == "rms":
        top, rms = finite_top_rms(a)
        return top, -rms
    lo, hi = finite_min_max(a)
    return max(hi, -lo, 0.0), -(hi - lo if spec.mode == "rel" else 1.0)
