"""What one rank does in each allreduce, counted from what the code sends (pycomm/collectives:
ring.py, twophase.py, gathered.py, hierarchy.py, frames.py), pipeline segment by segment
(8 MiB of float32 each):

- rounds: message steps one after another. The reduce-scatter of frames receives N-1 frames
  one at a time; an allgather of frames is one exchange on 2 ranks, else MPICH's Iallgatherv
  (a ring of N-1 steps; recursive doubling, log2 N steps, under 512 KiB in all), after an
  allgather of the sizes (log2 N steps) for ebq, whose frame sizes are not fixed;
  MPI_Allreduce is MPICH's reduce-scatter + allgather (2·log2 N steps);
- link: bytes through the busiest node's link, each way. Ranks are placed in node order; a
  frame to a rank of the same node never reaches the link, and the ranks of a node share it;
- stack: bytes the rank hands to or takes from the network stack (the emulator's TCP), and
  local: bytes the hierarchy's node steps move (the node's reduce-scatter and allgather);
- work: single-core seconds of compressing, decoding, adding frames (ebq) or decoded values.

Per algorithm, for B raw bytes per rank, ratio r, ebq's growth g(N) of the reduced frames:

    ring (ebq)   scatter of B/r, allgather of B/r·g(N)/N per rank; work B·(c + d) + (N-1)/N·B·e
    twophase     scatter of B/r, allgather of B/(rN) per rank;      work B·(c + a + c/N + d)
    allgather    allgather of B/r per rank;                          work B·(c + N·a)
    hierarchy    the node reduce-scatter (float64 for ebq) and allgather, and between them the
                 flat algorithm plan.choose picks on the nodes' ranks of each local index, for
                 a slice of B/k each (the k slices of a node share its link)

(c, d, a, e: seconds per raw byte of compress, decompress, decompress_add, ebq_add.) Every
pycomm call first agrees on its settings (a small allreduce: log2 N steps; for ebq after a
min/max pass over the input).
"""

from __future__ import annotations

import math
from dataclasses import astuple, dataclass

from pycomm.collectives.plan import choose
from pycomm.collectives.spec import make_spec

from .speeds import CODECS

SEGMENT_BYTES = 4 << 21  # pycomm's pipeline segment (2^21 float32)
RECURSIVE_BELOW = 512 << 10  # MPICH's allgather(v): recursive doubling below (2^k ranks)


@dataclass(frozen=True)
class Counts:
    """One rank's share of a collective, before any machine figure."""

    rounds: float = 0.0  #: message steps, one after another
    link: float = 0.0  #: bytes through the busiest node's link, each way
    stack: float = 0.0  #: bytes sent plus received through the network stack
    local: float = 0.0  #: bytes sent plus received by the hierarchy's node steps
    work: float = 0.0  #: single-core seconds of codec work and sums
    segments: int = 1  #: pipeline segments: the link of one overlaps the CPU of the next

    def __add__(self, other: Counts) -> Counts:
        pairs = zip(astuple(self)[:-1], astuple(other)[:-1], strict=True)
        return Counts(*(a + b for a, b in pairs), max(self.segments, other.segments))

    def times(self, k: float) -> Counts:
        return Counts(*(a * k for a in astuple(self)[:-1]), self.segments)


def crossing_distances(n: int, per: int) -> list[int]:
    """The partner distances 1, 2, 4, ... < n of a recursive exchange on n ranks that leave
    a node of per consecutive ranks (per a power of 2)."""
    return [1 << i for i in range(max(0, math.ceil(math.log2(n)))) if 1 << i >= per]


def scatter(n: int, nodes: int, frames: float) -> Counts:
    """frames_scatter: this rank's chunk frames (frames bytes in all) to their owners."""
    per = n // nodes
    return Counts(rounds=n - 1, link=per * (n - per) / n * frames, stack=2 * (n - 1) / n * frames)


def allgather(n: int, nodes: int, each: float, sized: bool) -> Counts:
    """allgather_frames of one frame of each bytes per rank (sized: sizes gathered first)."""
    if n == 2:
        return Counts(rounds=1, link=each if nodes == 2 else 0.0, stack=2 * each)
    sizes = Counts(rounds=math.ceil(math.log2(n))) if sized else Counts()
    per = n // nodes
    if n * each < RECURSIVE_BELOW and n & (n - 1) == 0:
        dist = crossing_distances(n, per)
        frames = Counts(rounds=math.log2(n), link=per * sum(dist) * each)
    else:  # a ring: each node's one outgoing edge carries every frame but one
        frames = Counts(rounds=n - 1, link=(n - 1) * each if nodes > 1 else 0.0)
    return sizes + frames + Counts(stack=2 * (n - 1) * each)


def mpi_allreduce(n: int, nodes: int, b: float, sp: dict) -> Counts:
    """MPICH's MPI_Allreduce of b bytes: recursive halving then doubling (distance 1 first)."""
    if n <= 1:
        return Counts()
    per = n // nodes
    link = 2 * per * sum(b / (2 * d) for d in crossing_distances(n, per))
    return Counts(
        rounds=2 * math.ceil(math.log2(n)),
        link=link,
        stack=4 * (n - 1) / n * b,
        work=(n - 1) / n * b * sp["add"],
    )


def growth(n: int, g: tuple[float, float]) -> float:
    """How many times wider ebq's reduced frames are than one rank's, on n ranks."""
    return g[0] + g[1] * math.log2(max(n, 2))


def flat(alg: str, codec: str, n: int, nodes: int, b: float, sp: dict, g, ratio=None) -> Counts:
    """One flat compressed allreduce of b bytes per rank on n ranks in nodes nodes (ratio: the
    codec's on these data, else the one in sp)."""
    if n <= 1:
        return Counts()
    s = sp[codec]
    r = ratio or s["ratio"]
    segments = max(1, math.ceil(b / SEGMENT_BYTES))
    seg = b / segments
    if alg == "ring":
        wire = scatter(n, nodes, seg / r) + allgather(n, nodes, seg / r * growth(n, g) / n, True)
        work = seg * (s["c"] + s["d"]) + (n - 1) / n * seg * s["sum"]
    elif alg == "twophase":
        wire = scatter(n, nodes, seg / r) + allgather(n, nodes, seg / r / n, codec == "ebq")
        work = seg * (s["c"] * (1 + 1 / n) + s["da"] + s["d"])
    elif alg == "allgather" and codec == "ebq":
        wire = allgather(n, nodes, seg / r, True)
        work = seg * (s["c"] + s["d"] + (n - 1) * s["sum"])
    elif alg == "allgather":
        wire = allgather(n, nodes, seg / r, False)
        work = seg * (s["c"] + n * s["da"])
    else:
        raise ValueError(alg)
    return (wire + Counts(work=work, segments=segments)).times(segments)


def leader_algorithm(codec: str, leaders: int, b: float) -> str:
    """The flat algorithm pycomm runs between nodes for b bytes of float32 (plan.choose)."""
    options = {k: v for k, v in CODECS[codec].items() if k != "codec"}
    return choose(make_spec(codec, **options), leaders, int(b // 4))


def agreement(codec: str, n: int, b: float, sp: dict) -> Counts:
    """What every pycomm call does first: one small allreduce of the settings (and of ebq's
    input range, after a pass over the input)."""
    work = b * sp[codec]["stats"] if "stats" in sp[codec] else 0.0
    return Counts(rounds=math.ceil(math.log2(max(n, 2))), work=work)


def counts_of(variant: str, n: int, nodes: int, b: float, sp: dict, g, ratio=None) -> Counts:
    """The counts of a variant ('mpi', 'ebq ring', 'int8 hierarchy', ...) on n ranks in nodes
    nodes, b bytes of float32 per rank."""
    if variant == "mpi":
        return mpi_allreduce(n, nodes, b, sp)
    codec, alg = variant.split()
    if alg != "hierarchy":
        return agreement(codec, n, b, sp) + flat(alg, codec, n, nodes, b, sp, g, ratio)
    per = n // nodes
    wide = 2 if codec == "ebq" else 1  # ebq's node sum is float64
    share = (per - 1) / per
    node = Counts(  # reduce-scatter (pairwise, per-1 steps) and allgather (a ring)
        rounds=2 * (per - 1),
        local=2 * share * b * (wide + 1),
        work=share * b * wide * sp["add"] + (wide - 1) * b * sp["memcpy"],
    )
    alg = leader_algorithm(codec, nodes, b / per)
    between = flat(alg, codec, nodes, nodes, b / per, sp, g, ratio)  # k slices share the link
    return agreement(codec, n, b, sp) + node + Counts(link=(per - 1) * between.link) + between
