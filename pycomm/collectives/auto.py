"""codec="auto": per message, the codec that the link, the CPU and the data make fastest.

The user gives a contract, not a codec: a bound (``auto:rel:1e-3``, ``CodecSpec("auto",
error_bound=..., mode=...)``) or none, which means lossless: then every message goes raw. With
a bound, each call weighs

    raw, fp16, bf16, ebq fast, ebq dense

by predicted time = encode and decode (``calibration``: this CPU's codec speeds, measured once)
+ rounds x latency + bytes moved x seconds per byte (``link``: measured from this
communicator's own transfers) where the bytes follow from the compression ratio of the last
frames of the same key (what, size, dtype, contract), first guessed from the bound. A cast is a
candidate only where its worst-case error, summed over the ranks, is proven within the bound
(``cast_error``); ebq always keeps it (``bound``); raw sums in float64 where float32's own
roundings could exceed it. A compressed codec must beat raw by ``MARGIN``.

Every input to the choice goes through the agreement every collective makes anyway (one MAX
allreduce, ``Engine.agree``): the bound's statistics and this rank's figures, so the slowest
rank's figures count and ``choose`` is a pure function of agreed values. Every rank thus takes
the same decision, and identical bits and the final bound hold whatever it is.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pycodecs
from mpi4py import MPI

from pycomm.collectives import calibration
from pycomm.collectives.bound import contract, final_kwargs, local_statistics, unit_roundoff
from pycomm.collectives.buffers import finite_min_max, finite_rms
from pycomm.collectives.engine import Engine
from pycomm.collectives.link import exchange_rounds, moved_bytes
from pycomm.collectives.source import Source
from pycomm.collectives.spec import CodecSpec
from pycomm.collectives.waits import SettingsMismatchError

CANDIDATES = ("raw", "fp16", "bf16", "ebq_fast", "ebq_dense")
#: A compressed codec is chosen only if predicted faster than raw by this factor.
MARGIN = 0.9
#: Unit roundoff of each cast, and half the spacing of its subnormals (the absolute floor).
CAST_ROUNDOFF = {"fp16": 2.0**-11, "bf16": 2.0**-8}
CAST_FLOOR = {"fp16": 2.0**-25, "bf16": 2.0**-134}
#: Largest partial sum an fp16 cast may meet (65504 is the largest finite half).
FP16_LIMIT = 65000.0
HEADER_BYTES = 64
#: Message sizes (bytes) ``preview`` (``mpiucc info``) shows the choice for.
PREVIEW_SIZES = (1 << 16, 1 << 20, 1 << 26)
#: Keys of ratio history kept per communicator before the oldest are dropped.
MAX_KEYS = 4096

NONE = CodecSpec()
CASTS = {name: CodecSpec(name) for name in CAST_ROUNDOFF}


@dataclass(frozen=True, slots=True)
class Figures:
    """What a choice weighs: link (s per round, s per byte), codec s per input byte (encode
    and decode), a dense frame's size over a fast one's, and the frame size over the input
    of each ebq level (0: unknown yet)."""

    latency_s: float
    per_byte: float
    ebq_fast: float
    ebq_dense: float
    cast: float
    dense_share: float
    ratio_fast: float = 0.0
    ratio_dense: float = 0.0

    def vector(self) -> tuple[float, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)


@dataclass(frozen=True, slots=True)
class Choice:
    """What ``agreed_choice`` resolved: the candidate's name, its spec and pycodecs keywords
    (None: uncompressed; with an ebq spec, summed in float64) and the key of its history."""

    name: str
    spec: CodecSpec
    kw: dict | None
    key: tuple


_history: weakref.WeakKeyDictionary[Engine, dict] = weakref.WeakKeyDictionary()


def local_figures(eng: Engine, key: tuple | None = None) -> Figures:
    """This rank's figures: its link's, its CPU's and, for key, its last frames' ratios."""
    latency, per_byte = eng.link.figures()
    speeds = calibration.codec_speeds()
    fast, dense = _history.get(eng, {}).get(key, (0.0, 0.0))
    return Figures(
        latency,
        per_byte,
        speeds["ebq_fast"],
        speeds["ebq_dense"],
        speeds["cast"],
        speeds["dense_share"],
        fast,
        dense,
    )


def agreed_choice(
    eng: Engine,
    comm: MPI.Comm,
    a: np.ndarray,
    spec: CodecSpec,
    op: str,
    what: str,
    *extra: object,
    ef: bool,
    algorithm_of: Callable[[CodecSpec], str],
    source: Source | None = None,
) -> Choice:
    """Agree (one allreduce, as ``bound.agreed_kwargs``) and resolve spec="auto" for a.

    ``algorithm_of(spec)`` names the algorithm the collective would run for spec ("ring" or
    "allgather"); ``ef``: a residual is sent along (casts are then left out: the residual's
    size is not part of the proven bound).
    """
    sig = spec.signature(what, a.dtype.str, a.size, op, *extra)
    label = f"{what} auto {a.dtype} x{a.size} {op}"
    key = (what, a.size, a.dtype.str, spec)
    if spec.lossless or a.size == 0:
        eng.agree(label, sig)
        return Choice("raw", NONE, None, key)
    stats = local_statistics(a, spec, source)
    v = eng.agree(label, sig, (*stats, *local_figures(eng, key).vector()))
    ranks, mean = comm.Get_size(), op == "mean"
    fig = Figures(*v[2:])
    bound, top = contract(spec, v[:2])
    levels = {name: final_kwargs(_ebq(spec, name), v[:2], ranks, op, a) for name in LEVELS}
    name = choose(
        fig,
        count=a.size,
        dtype=a.dtype,
        ranks=ranks,
        mean=mean,
        bound=bound,
        top=top,
        rank_bound=None if levels["ebq_fast"] is None else levels["ebq_fast"]["error_bound"],
        casts=not ef and a.dtype == np.float32,
        algorithm_of=lambda name: algorithm_of(_spec_of(spec, name)),
    )
    if name == "raw":
        wide = raw_error(top, ranks, a.dtype) > budget(bound, top, ranks, mean, a.dtype)
        return Choice(name, _ebq(spec, "ebq_fast") if wide else NONE, None, key)
    chosen = _spec_of(spec, name)
    return Choice(name, chosen, levels.get(name) or chosen.codec_kwargs(), key)


def agreed_gather_choice(
    eng: Engine, comm: MPI.Comm, a: np.ndarray, spec: CodecSpec, what: str, *extra: object,
    root: int | None = None,
) -> Choice:  # fmt: skip
    """Agree and resolve spec="auto" for an allgather (or, with ``root``, a bcast): each rank's
    frame is decoded as sent, so ebq keeps the bound per frame by itself; a cast is proven for
    every rank from the largest |x| and the smallest scale of the bound (range, rms) agreed."""
    sig = spec.signature(what, a.dtype.str, a.size, root)
    label = f"{what} auto {a.dtype} x{a.size}"
    key = (what, a.size, a.dtype.str, spec)
    if spec.lossless or a.size == 0:
        eng.agree(label, sig)
        return Choice("raw", NONE, None, key)
    mine = root is None or comm.Get_rank() == root
    stats = _gather_statistics(a, spec) if mine else (0.0, -np.inf)
    v = eng.agree(label, sig, (*stats, *local_figures(eng, key).vector()))
    fig, top = Figures(*v[2:]), v[0]
    smallest = spec.error_bound * -v[1]
    ranks = 2 if root is not None else comm.Get_size()  # a bcast moves about one copy
    best = choose_frame(fig, count=a.size, dtype=a.dtype, ranks=ranks, top=top, bound=smallest)
    chosen = NONE if best == "raw" else _spec_of(spec, best)
    return Choice(best, chosen, None if best == "raw" else chosen.codec_kwargs(), key)


def choose_frame(
    fig: Figures, *, count: int, dtype: np.dtype, ranks: int, top: float, bound: float
) -> str:
    """The candidate of least predicted time for frames decoded as sent (allgather, bcast,
    send: ``ranks`` - 1 copies move), where every |x| <= top and every frame's bound is at
    least ``bound`` (a pure function)."""
    itemsize = np.dtype(dtype).itemsize
    best, best_t = "raw", predict(fig, "raw", count, itemsize, ranks, "allgather")
    threshold = best_t * MARGIN
    for name in CANDIDATES[1:]:
        if name in CAST_ROUNDOFF:
            err = CAST_ROUNDOFF[name] * top + CAST_FLOOR[name]
            if dtype != np.float32 or not err <= bound or name == "fp16" and top > FP16_LIMIT:
                continue
        t = predict(fig, name, count, itemsize, ranks, "allgather", bound, top)
        if t < threshold and (best == "raw" or t < best_t):
            best, best_t = name, t
    return best


def sender_choice(eng: Engine, a: np.ndarray, spec: CodecSpec) -> CodecSpec:
    """spec="auto" resolved by a sender alone (point-to-point: the frame says what it is)."""
    if spec.lossless or a.size == 0:
        return NONE
    top, scale = _gather_statistics(a, spec)
    bound = spec.error_bound * -scale
    fig = local_figures(eng, ("send", a.size, a.dtype.str, spec))
    name = choose_frame(fig, count=a.size, dtype=a.dtype, ranks=2, top=top, bound=bound)
    return NONE if name == "raw" else _spec_of(spec, name)


def _gather_statistics(a: np.ndarray, spec: CodecSpec) -> tuple[float, float]:
    """(max |x|, -scale of the bound): the range for rel, the rms for rms, 1 for abs."""
    lo, hi = finite_min_max(a)
    top = max(hi, -lo, 0.0)
    if spec.mode == "rel":
        return top, -(hi - lo)
    return top, -(finite_rms(a, top) if spec.mode == "rms" else 1.0)


class AnyFrame:
    """What a receiver with codec="auto" accepts (``frames.Expect``'s interface): a frame of
    any codec auto may choose (raw only for a lossless contract) of ``count`` ``dtype``."""

    def __init__(self, spec: CodecSpec, dtype: str, count: int) -> None:
        self.dtype, self.count = dtype, count
        self.codecs = ("raw",) if spec.lossless else ("raw", "ebq", *CAST_ROUNDOFF)
        self.codec = "/".join(self.codecs)
        self._ebq = None if spec.lossless else _ebq(spec, "ebq_dense").codec_kwargs()

    def max_size(self) -> int:
        sizes = [pycodecs.compress_bound(self.count, dtype=self.dtype, codec="raw")]
        if self._ebq is not None:
            for level in ("fast", "dense"):
                kw = {**self._ebq, "level": level}
                sizes.append(pycodecs.compress_bound(self.count, dtype=self.dtype, **kw))
        return max(sizes)

    def check(self, frame: object, source: str) -> object:
        try:
            h = pycodecs.header(frame)
        except pycodecs.CodecError as exc:
            raise SettingsMismatchError(f"pycomm: corrupt frame from {source}: {exc}") from None
        if h.codec not in self.codecs or (h.dtype, h.count) != (self.dtype, self.count):
            raise SettingsMismatchError(
                f"pycomm: received a {h.codec} frame of {h.count} {h.dtype} from {source}, "
                f"expected one of {self.codec} of {self.count} {self.dtype}"
            )
        return frame


def choose(
    fig: Figures,
    *,
    count: int,
    dtype: np.dtype,
    ranks: int,
    mean: bool,
    bound: float,
    top: float,
    rank_bound: float | None,
    casts: bool,
    algorithm_of: Callable[[str], str],
) -> str:
    """The candidate of least predicted time that keeps the bound (a pure function).

    ``bound`` and ``top``: the user's bound on the result and the largest |x| (agreed);
    ``rank_bound``: ebq's per-rank bound (None: ebq cannot keep the bound at this magnitude);
    ``casts``: whether fp16/bf16 may be weighed at all.
    """
    if ranks < 2:
        return "raw"
    itemsize = np.dtype(dtype).itemsize
    limit = budget(bound, top, ranks, mean, dtype)
    wide = raw_error(top, ranks, dtype) > limit
    best, best_t = "raw", predict(fig, "raw", count, itemsize, ranks, "raw", wide=wide)
    threshold = best_t * MARGIN
    for name in CANDIDATES[1:]:
        if name in CAST_ROUNDOFF:
            err = cast_error(name, top, ranks, dtype) if casts else None
            if err is None or not err <= limit:
                continue
        elif rank_bound is None:
            continue
        t = predict(fig, name, count, itemsize, ranks, algorithm_of(name), rank_bound, top)
        if t < threshold and (best == "raw" or t < best_t):
            best, best_t = name, t
    return best


def predict(
    fig: Figures,
    name: str,
    count: int,
    itemsize: int,
    ranks: int,
    algorithm: str,
    rank_bound: float = 0.0,
    top: float = 0.0,
    *,
    wide: bool = False,
) -> float:
    """Predicted seconds of an allreduce of count elements through candidate ``name``."""
    nbytes = count * itemsize
    if name == "raw":
        frame, codec = nbytes * (2 if wide else 1), 0.0
    elif name in CAST_ROUNDOFF:
        frame = count * 2 + HEADER_BYTES
        codec = nbytes * fig.cast * (ranks + 1) / 2  # a ring or a gather decodes ~N/2 more
    else:
        share = ratios(fig, rank_bound, top, itemsize)[name == "ebq_dense"]
        frame = nbytes * share + HEADER_BYTES
        codec = nbytes * (fig.ebq_dense if name == "ebq_dense" else fig.ebq_fast)
    wire = moved_bytes(algorithm, ranks, frame) * fig.per_byte
    return codec + exchange_rounds(algorithm, ranks) * fig.latency_s + wire


def ratios(fig: Figures, rank_bound: float, top: float, itemsize: int) -> tuple[float, float]:
    """Frame over input size of ebq (fast, dense): from history, else a first guess from the
    bound (the fast level packs each index in about log2(top / 2e) + 2 bits)."""
    fast = fig.ratio_fast
    if not fast:
        bits = math.log2(top / (2 * rank_bound) + 1) + 2 if rank_bound > 0 else 8 * itemsize
        fast = min(1.0, bits / (8 * itemsize))
    return fast, fig.ratio_dense or fast * fig.dense_share


def cast_error(name: str, top: float, ranks: int, dtype: np.dtype) -> float | None:
    """Worst |result - exact sum| of a cast allreduce on N ranks with |x| <= top (None: a
    partial sum could overflow fp16).

    Either algorithm rounds at most N(N+1)/2 values of at most k*top (k <= N contributions,
    grown by earlier roundings), each by u*|v| + floor, and adds in the dtype at most N^2
    times units of top: the ring casts its partial sums after each of N-1 steps, the gathered
    algorithm casts N inputs and adds them in rank order.
    """
    u, n = CAST_ROUNDOFF[name], float(ranks)
    grow = (1 + u) ** n
    if name == "fp16" and not n * top * grow <= FP16_LIMIT:
        return None
    casts = n * (n + 1) / 2 * (u * top * grow + CAST_FLOOR[name])
    return casts + n * n * unit_roundoff(dtype) * top * grow


def raw_error(top: float, ranks: int, dtype: np.dtype) -> float:
    """Worst error of MPI's own sum in the dtype: N-1 additions of at most N*top each."""
    return ranks * ranks * unit_roundoff(dtype) * top


def budget(bound: float, top: float, ranks: int, mean: bool, dtype: np.dtype) -> float:
    """What the sum's error may be for the result to keep ``bound`` (a mean divides by N and
    rounds once more)."""
    if not mean:
        return bound
    return (bound - unit_roundoff(dtype) * (top + bound)) * ranks


def record(eng: Engine, choice: Choice, raw_bytes: int, frame_bytes: int) -> None:
    """Keep the ratio an ebq level reached on this key, for the next call's prediction."""
    if choice.name not in LEVELS or not raw_bytes or not frame_bytes:
        return
    table = _history.setdefault(eng, {})
    if len(table) >= MAX_KEYS and choice.key not in table:
        table.clear()
    fast, dense = table.get(choice.key, (0.0, 0.0))
    share = frame_bytes / raw_bytes
    table[choice.key] = (share, dense) if choice.name == "ebq_fast" else (fast, share)


LEVELS = ("ebq_fast", "ebq_dense")


@functools.lru_cache(maxsize=256)
def _ebq(spec: CodecSpec, name: str) -> CodecSpec:
    return CodecSpec("ebq", **{**spec.options(), "level": name.removeprefix("ebq_")})


def _spec_of(spec: CodecSpec, name: str) -> CodecSpec:
    return CASTS[name] if name in CASTS else _ebq(spec, name)


def preview(comm: MPI.Comm | None = None, text: str = "auto:rel:1e-3", sizes=PREVIEW_SIZES) -> dict:
    """What auto would choose now on comm (COMM_WORLD; taken as 2 ranks when alone) for a
    float32 mean of each of ``sizes`` bytes of data spanning [-1, 1], from this rank's figures
    alone (no communication): for ``mpiucc info``."""
    from pycomm.collectives.bound import rank_bound
    from pycomm.collectives.engine import engine_of
    from pycomm.collectives.reduction import _algorithm_name
    from pycomm.collectives.spec import make_spec

    comm = MPI.COMM_WORLD if comm is None else comm
    eng = engine_of(comm)
    spec, ranks, dtype = make_spec(text), max(2, comm.Get_size()), np.dtype(np.float32)
    fig = local_figures(eng)
    bound, top = contract(spec, (1.0, 1.0))
    e = rank_bound(bound, ranks, top, True, dtype)
    choices = {}
    for size in sizes:
        count = size // dtype.itemsize
        choices[_bytes_label(size)] = choose(
            fig, count=count, dtype=dtype, ranks=ranks, mean=True, bound=bound, top=top,
            rank_bound=e, casts=True,
            algorithm_of=lambda name, count=count: _algorithm_name(
                eng, comm, _spec_of(spec, name), "auto", count, False
            ),
        )  # fmt: skip
    return {
        "link": eng.link.describe(),
        "ranks": ranks,
        "contract": text,
        "codec_speeds": calibration.codec_speeds(),
        "choices": choices,
    }


def _bytes_label(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
