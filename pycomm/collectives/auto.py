"""codec="auto": per message, the codec that this link, this CPU and these data make fastest,
by measurement.

The user gives a contract, not a codec: a bound (``auto:rel:1e-3``, ``CodecSpec("auto",
error_bound=..., mode=...)``) or none, which means lossless: then every message goes raw. With
a bound, the candidates are

    raw, fp16, bf16, ebq fast, ebq dense

those whose bound proof holds for the plan that will run: a cast only where its worst-case
error, summed over the ranks, is proven within the bound (``cast_error``); ebq always keeps it
(``bound``); raw sums in float64 where float32's own roundings could exceed it. For each key
(a kind of call: size, dtype, op, contract) they are *tried on real calls*: each call times its
exchange, the next call's agreement carries that time (the slowest rank's counts), and once
raw and the model's ``TRIED`` best others (``cost.ranked``: predicted encode, decode, latency
and bytes, from ``calibration``, ``link`` and the key's last frames) are measured, the fastest
is kept; a compressed one must beat raw's time by ``MARGIN``. The model orders the trials and
skips hopeless ones (``HOPELESS``); it never overrides a measurement. The kept candidate runs
until timing the others again would cost ``RECHECK_SHARE`` of its calls' time (``_refresh``:
``REFRESH`` to ``MAX_REFRESH`` calls), then the candidates are measured again: a bounded share
of the time re-checks them as the link or the data change.

Every input to the choice goes through the agreement every collective makes anyway (one MAX
allreduce, ``Engine.agree``): the times, the bound's statistics and this rank's figures, so the
choice is a pure function of agreed values. Every rank thus takes the same decision, and
identical bits and the final bound hold whatever it is. Frames decoded as sent (allgather,
bcast, send) are ``auto_frames``' (by the model alone).
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from pycomm.collectives import calibration
from pycomm.collectives.bound import (
    call_label,
    contract,
    final_kwargs,
    largest,
    local_range,
    local_statistics,
)
from pycomm.collectives.cost import (
    CAST_ROUNDOFF,
    LEVELS,
    MARGIN,
    Figures,
    budget,
    cast_proven,
    choose,
    ranked,
    raw_error,
    raw_within_rms,
    wire_time,
)
from pycomm.collectives.engine import Engine
from pycomm.collectives.link import MIN_SAMPLE_BYTES, WINDOW, quantile
from pycomm.collectives.source import Source
from pycomm.collectives.spec import CodecSpec

#: Message sizes (bytes) ``preview`` (``mpiucc info``) shows the choice for.
PREVIEW_SIZES = (1 << 16, 1 << 20, 1 << 26)
#: Keys of ratio history kept per communicator before the oldest are dropped.
MAX_KEYS = 4096
#: Calls of a key that take its kept candidate before the next full decision: ``REFRESH`` at
#: first, doubled (up to ``MAX_REFRESH``) each time a full decision repeats the last one.
REFRESH, MAX_REFRESH = 16, 1024
#: The share of a key's time that timing its other candidates again may take: the kept pick
#: runs until the trials' measured excess over it is this share of its calls (``_refresh``).
#: Small, as a pick that becomes slower gives way at once (``STRIKES``): a round only finds
#: another candidate that became faster.
RECHECK_SHARE = 0.02
#: Candidates besides raw a key's measurements try: the model's fastest.
TRIED = 2
#: Calls each tried candidate is timed in (``Seen.measured``).
TIMINGS = 2
#: A candidate predicted to take this many times the fastest prediction is not tried.
HOPELESS = 8.0
#: How far inside the bound a sum in the dtype must be, on this call's data, for raw to be
#: kept (later calls' data may be less kind; a proof for any data, ``raw_within_rms``, needs none).
RAW_MARGIN = 16.0
#: A kept pick's calls: when the fastest of this rank's last ``STRIKES`` (agreed: the slowest
#: rank's) took longer than the round's runner-up (``Seen.give_up``), the pick measured slower
#: than another candidate and the key decides again with that time (``Seen.slower``).
STRIKES = 3
#: One small uncompressed call in this many is a sample of the link and of auto's overhead
#: (``record_raw``).
RAW_SAMPLING = 8
#: Codecs whose cost is measured as they run (the calibration stands in until then).
CODEC_COSTS = ("ebq_fast", "ebq_dense", "cast")

NONE = CodecSpec()
CASTS = {name: CodecSpec(name) for name in CAST_ROUNDOFF}


@dataclass(frozen=True, slots=True)
class Choice:
    """What ``agreed_choice`` resolved: the candidate's name, its spec and pycodecs keywords
    (None: uncompressed; with an ebq spec, summed in float64) and the key of its history."""

    name: str
    spec: CodecSpec
    kw: dict | None
    key: int


#: Candidate codes in a ``Seen.token`` (0: none).
CODES = {None: 0, "raw": 1, "fp16": 2, "bf16": 3, "ebq_fast": 4, "ebq_dense": 5}


class Seen:
    """What auto keeps of one key (a call's settings digest: what, size, dtype, op,
    contract): the ratio each ebq level reached (this rank's frames) and, from agreed values
    only (the same on every rank), the candidate the last full decision kept (None: decide
    in full), how many calls ago that was, the last kept pick and how many calls a kept pick
    is kept for (``refresh``)."""

    __slots__ = (
        "ratio_fast", "ratio_dense", "kept", "since", "last", "refresh", "raw", "times",
        "trying", "samples", "elapsed", "timings", "tried", "recent", "give_up",
    )  # fmt: skip

    def __init__(self, key: int) -> None:
        self.raw = Choice("raw", NONE, None, key)  # what a settled raw call returns
        self.ratio_fast = self.ratio_dense = 0.0
        self.elapsed = 0.0  # this rank's time of the key's last exchange (``ran``)
        self.recent: deque[float] = deque(maxlen=STRIKES)  # this rank's last kept calls'
        self.forget()

    def current(self) -> str | None:
        """The kept candidate this call takes, or None: decide in full."""
        return self.kept if self.since < self.refresh else None

    def token(self) -> float:
        """This key's agreed state as one number (exact in a double): ranks whose tokens are
        equal hold the same state (the count of agreed times stands for the times), so they
        take the same path and the same decision."""
        kept, last, trying = CODES[self.current()], CODES[self.last], CODES[self.trying]
        state = self.since + 2048 * (self.refresh + 2048 * (self.samples % 1024))
        return 1.0 + kept + 8 * last + 64 * trying + 512 * state

    def forget(self) -> None:
        """Back to a new key's state (the ratios, this rank's own figures, stay)."""
        self.kept = self.last = self.trying = None
        self.since, self.refresh, self.samples = 0, REFRESH, 0
        self.give_up = float("inf")
        self.recent.clear()
        self.new_round()

    def new_round(self) -> None:
        """Measure afresh: no times, the candidates to try chosen at the next decision."""
        self.tried: tuple[str, ...] = ()  # this round's candidates, in the model's order
        self.times: dict[str, float] = {}  # agreed seconds of a call of each candidate
        self.timings: dict[str, int] = {}  # how many calls each time is made of

    def measured(self, seconds: float) -> None:
        """The agreed time of the last call, which tried ``trying``. Of this round's times
        (``timings``) raw keeps its least and a compressed candidate its most, so that noise
        (a busy machine only ever adds to a call) cannot make compressing look faster."""
        name = self.trying
        pick = min if name == "raw" else max
        self.times[name] = pick(seconds, self.times.get(name, seconds))
        self.timings[name] = self.timings.get(name, 0) + 1
        self.samples += 1
        self.trying = None

    def kept_time(self) -> float:
        """What this rank's kept calls took: the fastest of its last ``STRIKES`` (0 before
        there are that many), so that one slow call (a busy machine) is not a strike."""
        return min(self.recent) if len(self.recent) == STRIKES else 0.0

    def slower(self, seconds: float) -> None:
        """The kept pick's calls took ``seconds`` (agreed), longer than the runner-up: that
        is its time now, and the next decision weighs it against the round's others (a
        trial can mislead: a link that lets a burst through after a pause, data that
        changed); the round's candidates are not timed again."""
        self.times[self.kept] = max(seconds, self.times.get(self.kept, seconds))
        self.kept = None

    def trial(self, name: str) -> None:
        """This call tries ``name`` (its time is agreed by the next call)."""
        self.kept, self.trying, self.since = None, name, 0

    def decided(self, name: str, keep: bool, refresh: int | None = None) -> None:
        """A full decision picked ``name``, kept (``keep``) for ``refresh`` calls; without
        one (a sender's key, ``auto_frames``), ``REFRESH`` calls, twice as long as the last
        time where it repeats the last kept pick (up to ``MAX_REFRESH``)."""
        repeated = keep and name == self.last
        if refresh is None:
            refresh = min(2 * self.refresh, MAX_REFRESH) if repeated else REFRESH
        self.refresh = refresh
        self.kept = self.last = name if keep else None
        self.since = 0
        others = [t for n, t in self.times.items() if n != name]
        self.give_up = min(others) if keep and others else float("inf")
        self.recent.clear()


class Observed:
    """What auto learns on one communicator: per key a ``Seen``, per codec its measured
    cost, per kind of call (raw, ebq, cast) its overhead, and the last agreed figures."""

    __slots__ = ("keys", "sends", "codec_costs", "overheads", "agreed", "probes", "raw_calls")

    def __init__(self) -> None:
        self.probes = 0  # link probes made (agreed decisions: the same count on every rank)
        self.raw_calls = 0
        self.keys: dict[int, Seen] = {}  # collectives' keys
        self.sends: dict[int, Seen] = {}  # a point-to-point sender's own (never agreed)
        self.codec_costs = {name: deque(maxlen=WINDOW) for name in CODEC_COSTS}
        self.overheads = {kind: deque(maxlen=WINDOW) for kind in ("raw", "ebq", "cast")}
        self.agreed: Figures | None = None

    def key(self, key: int, table: dict[int, Seen] | None = None) -> Seen:
        """key's entry in ``table`` (the collectives' by default), made on first use; the
        table is emptied when full. Nothing here need be the same on every rank: a call
        agrees on its entry's ``token`` before it relies on it."""
        table = self.keys if table is None else table
        entry = table.get(key)
        if entry is None:
            if len(table) >= MAX_KEYS:
                table.clear()
            entry = table[key] = Seen(key)
        return entry


def observed(eng: Engine) -> Observed:
    """The engine's ``Observed``, made on first use."""
    got = eng.observed
    if got is None:
        got = eng.observed = Observed()
    return got


def local_figures(eng: Engine, key: int | None = None) -> Figures:
    """This rank's figures: its link's, its codecs' (measured in its own calls, else the
    calibration's) and, for key, the ratios its last frames reached."""
    latency, per_byte = eng.link.figures()
    speeds = calibration.codec_speeds()
    seen = observed(eng)
    costs = [quantile(seen.codec_costs[name], speeds[name]) for name in CODEC_COSTS]
    entry = seen.keys.get(key)
    fast, dense = (0.0, 0.0) if entry is None else (entry.ratio_fast, entry.ratio_dense)
    raw = quantile(seen.overheads["raw"], 0.0)
    # A compressed call costs at least what a raw call does beyond the model (its path has
    # all of raw's), measured or not.
    over = [raw, *(max(raw, quantile(seen.overheads[k], raw)) for k in ("ebq", "cast"))]
    bound = eng.link.per_byte_bound()
    return Figures(latency, per_byte, *costs, speeds["dense_share"], fast, dense, *over, bound)


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
    residual: np.ndarray | None = None,
    agreed: list | None = None,
) -> Choice:
    """Agree (one allreduce, as ``bound.agreed_kwargs``) and resolve spec="auto" for a.

    ``algorithm_of(spec)`` names the algorithm the collective would run for spec (the proofs
    and the model are that algorithm's); ``ef``: a residual is sent along (casts are then left
    out: the residual's size is not part of the proven bound); ``residual``: the host residual
    added to a before compression (the bound's statistics are those of a + residual).

    The candidate a full decision on this key chose (raw only where a sum in the dtype kept
    the bound with room to spare, ``RAW_MARGIN``) is kept for the next ``REFRESH`` calls of
    the key (more while full decisions repeat it: ``Seen.decided``), without this rank's
    figures and the model. Every call agrees, and the agreement carries the key's state
    (``Seen.token``): the kept candidate is taken only where every rank's state is the same,
    else every rank forgets the key and decides in full (a second agreement with the figures),
    so no rank-local memory (a table emptied on one rank, a call that failed on one) can lead
    ranks down different paths. The statistics are still agreed, and a kept candidate that
    they no longer prove within the bound gives way to raw (``_kept``); a sum in the dtype
    that could now exceed the bound is made in float64 instead. With an rms bound loose
    enough to hold for any data (``cost.raw_within_rms``) a kept raw needs no statistics: its
    agreement carries the settings and the token alone; with a bound relative to the range,
    or absolute, a kept raw that the agreed statistics prove within the bound in the dtype
    returns the entry's own ``raw`` too, and the compiled path (``hot``) takes the key on,
    with the statistics computed in C. One rank takes raw at once: its "sum"
    is its input, exact. ``agreed``: the first agreement, made already (by the compiled path,
    ``hot``) and found to carry tokens that differ.
    """
    sig = key = spec.signature(what, a.dtype.str, a.size, op, *extra)  # the settings digest
    ranks = comm.Get_size()
    label = call_label(what, "auto", a.dtype, a.size, op)
    if spec.lossless or a.size == 0 or ranks < 2:  # one rank: the "sum" is x itself, exact
        eng.agree(label, sig)
        return Choice("raw", NONE, None, key)
    seen = observed(eng)
    entry = seen.key(key)
    kept, token = entry.current(), entry.token()
    figures = ()
    # a kept raw that an rms bound keeps for any data has only overflow left to prove: the
    # range, as the compiled path carries it (``cost.raw_proof``)
    any_data = kept == "raw" and spec.mode == "rms" and raw_within_rms(
        spec.error_bound, a.size, ranks, op == "mean", a.dtype
    )  # fmt: skip
    if any_data:
        stats = local_range(a, source, residual)
    else:
        stats = local_statistics(a, spec, source, residual)
        figures = () if kept else local_figures(eng, key).agreed_vector()
    # the last call's time if it was a trial; a kept pick's recent calls' (``STRIKES``)
    elapsed = entry.elapsed if entry.trying else entry.kept_time() if kept else 0.0
    if agreed is None:
        maxima = (token, -token, elapsed, *stats, *figures)
        v = eng.agree(label, sig, maxima).tolist()  # Python floats
    else:
        v = agreed[3:]
    differ = v[0] != -v[1]
    if differ or (kept and v[2] > entry.give_up):
        if differ:  # the ranks remember this key differently: all decide afresh
            entry.forget()
        else:  # the kept pick measured slower than the round's runner-up: decide again
            entry.slower(v[2])
        if any_data:
            stats = local_statistics(a, spec, source, residual)
        figures = local_figures(eng, key).agreed_vector()
        v = eng.agree(label, sig, (0.0, 0.0, 0.0, *stats, *figures)).tolist()
    elif kept:
        entry.since += 1
        if any_data:  # summed in the dtype unless its partial sums could overflow it
            if ranks * max(abs(v[3]), abs(v[4])) <= largest(a.dtype):
                return entry.raw
            return Choice("raw", ebq_spec(spec, "ebq_fast"), None, key)
        choice = _kept(kept, spec, v[3:5], ranks, op, a, key, entry, algorithm_of)
        if kept == "raw" and choice.spec is NONE and spec.mode != "rms":
            return entry.raw  # summed in the dtype: the compiled path may take the key
        return choice
    elif entry.trying:
        entry.measured(v[2])
    return _decide(eng, comm, a, spec, op, key, v[3:5], v[5:], ef, algorithm_of, entry)


def _decide(
    eng: Engine, comm: MPI.Comm, a: np.ndarray, spec: CodecSpec, op: str, key: int,
    agreed: list, agreed_figures: list, ef: bool, algorithm_of: Callable[[CodecSpec], str],
    entry: Seen,
) -> Choice:  # fmt: skip
    """A full decision from the agreed statistics and figures (the same on every rank)."""
    seen, ranks, mean = observed(eng), comm.Get_size(), op == "mean"
    bound, top = contract(spec, agreed)
    limit = budget(bound, top, ranks, mean, a.dtype)
    fig = seen.agreed = Figures.from_agreed(agreed_figures)
    levels = {name: final_kwargs(ebq_spec(spec, name), agreed, ranks, op, a) for name in LEVELS}
    ranking = ranked(
        fig, count=a.size, dtype=a.dtype, ranks=ranks, mean=mean, bound=bound, top=top,
        rank_bound=None if levels["ebq_fast"] is None else levels["ebq_fast"]["error_bound"],
        casts=not ef and a.dtype == np.float32,
        algorithm_of=lambda name: algorithm_of(spec_of(spec, name)),
    )  # fmt: skip
    if entry.kept is not None:  # a kept candidate's calls are over: measure afresh
        entry.new_round()
    name, keep = _measured(entry, ranking)
    if keep:  # raw only with room to spare in the bound
        room = name != "raw" or raw_error(top, ranks, a.dtype) * RAW_MARGIN <= limit
        entry.decided(name, keep=room, refresh=_refresh(entry, name))
    else:
        entry.trial(name)
    if name == "raw":
        return _raw(spec, top, ranks, a.dtype, limit, key)
    chosen = spec_of(spec, name)
    return Choice(name, chosen, levels.get(name) or chosen.codec_kwargs(), key)


def _refresh(entry: Seen, kept: str) -> int | None:
    """The calls a kept pick runs before its candidates are timed again: as many as make the
    next round's measured excess (each other candidate's time over the kept one's, ``TIMINGS``
    times) ``RECHECK_SHARE`` of their time, within [``REFRESH``, ``MAX_REFRESH``]. Candidates
    much slower than the pick are re-timed rarely; close ones often. None where the pick was
    the only candidate timed (the model found the others hopeless): then only the full
    decision itself is repeated, at intervals that double while it keeps the same pick
    (``Seen.decided``)."""
    if len(entry.times) < 2:
        return None
    best = entry.times[kept]
    excess = TIMINGS * sum(max(t - best, 0.0) for t in entry.times.values())
    calls = excess / (RECHECK_SHARE * best) if best > 0 else MAX_REFRESH
    return int(min(max(REFRESH, calls), MAX_REFRESH))


def _measured(entry: Seen, ranking: list[tuple[str, float]]) -> tuple[str, bool]:
    """(the candidate this call takes, whether it is kept): raw first, then the next to time
    of raw and the model's ``TRIED`` fastest others that are not hopeless once raw's call has
    measured the link (each ``TIMINGS`` times, in turns in the model's order), else the
    fastest by the agreed times, a compressed one only where it beats raw by ``MARGIN``.
    Agreed values only."""
    if not entry.tried:  # a round's candidates are chosen once, after raw's first call
        if "raw" not in entry.timings:  # (the model's link figures are guesses before it)
            return "raw", False
        fastest = ranking[0][1]
        others = [n for n, t in ranking if n != "raw" and t <= HOPELESS * fastest][:TRIED]
        entry.tried = tuple(n for n, _ in ranking if n == "raw" or n in others)
    allowed = {n for n, _ in ranking}  # the bound's proofs, on this call's statistics
    tried = [n for n in entry.tried if n in allowed]
    timed = [entry.timings.get(n, 0) for n in tried]
    if min(timed) < TIMINGS:  # the next of the least timed, in the model's order
        return tried[timed.index(min(timed))], False
    best = min(tried, key=entry.times.__getitem__)
    if best != "raw" and entry.times[best] >= entry.times["raw"] * MARGIN:
        best = "raw"
    return best, True


def _raw(spec: CodecSpec, top: float, ranks: int, dtype: np.dtype, limit: float, key: int):
    """Uncompressed, summed wide (``plain``) where the dtype's roundings could exceed the
    bound, or its partial sums overflow."""
    wide = raw_error(top, ranks, dtype) > limit or ranks * top > largest(dtype)
    return Choice("raw", ebq_spec(spec, "ebq_fast") if wide else NONE, None, key)


def _kept(
    name: str, spec: CodecSpec, agreed: list, ranks: int, op: str, a: np.ndarray, key: int,
    entry: Seen, algorithm_of: Callable[[CodecSpec], str],
) -> Choice:  # fmt: skip
    """The kept candidate without figures or model, where this call's agreed statistics
    still prove its bound (ebq: a per-rank bound exists; a cast: ``cast_error`` of the
    algorithm that will run within the budget); else raw, and the next call decides in full.
    Agreed values only: the same on every rank."""
    bound, top = contract(spec, agreed)
    limit = budget(bound, top, ranks, op == "mean", a.dtype)
    if name in LEVELS:
        kw = final_kwargs(ebq_spec(spec, name), agreed, ranks, op, a)
        if kw is not None:
            return Choice(name, ebq_spec(spec, name), kw, key)
    elif name in CASTS:
        if cast_proven(name, top, ranks, a.dtype, algorithm_of(CASTS[name]), limit):
            return Choice(name, CASTS[name], CASTS[name].codec_kwargs(), key)
    if name != "raw":  # and the next full decision's pick counts as new
        entry.kept = entry.last = None
    return _raw(spec, top, ranks, a.dtype, limit, key)


def ran(eng: Engine, choice: Choice, seconds: float) -> None:
    """A call of choice's key took ``seconds`` of this rank's own work (all of the call but
    its agreements, where a rank waits for the others: checks, statistics, decision, codec
    and exchange, so the Python path's cost counts against the compiled one's): what the
    next call's agreement carries if this one was a trial, and a kept pick's recent time."""
    entry = observed(eng).keys.get(choice.key)
    if entry is not None:
        entry.elapsed = seconds
        if entry.kept is not None and entry.trying is None:
            entry.recent.append(seconds)


def record(
    eng: Engine,
    choice: Choice,
    raw_bytes: int,
    frame_bytes: int,
    encode_s: float,
    elapsed: float,
    algorithm: str,
) -> None:
    """After a compressed call that took ``elapsed`` (compress, exchange, decode), its first
    compression ``encode_s``: the ratio its ebq level reached on its key, its codec's cost
    per input byte (encode and decode counted as twice the encode), and its overhead: the
    time the model with this call's own agreed figures leaves unexplained."""
    if choice.name == "raw" or not raw_bytes:
        return
    seen, ranks = observed(eng), eng.link.ranks
    kind = "cast" if choice.name in CAST_ROUNDOFF else "ebq"
    cost = 2 * encode_s / raw_bytes
    seen.codec_costs["cast" if kind == "cast" else choice.name].append(cost)
    if seen.agreed is not None:
        codec = raw_bytes * cost * ((ranks + 1) / 2 if kind == "cast" else 1)
        model = codec + wire_time(seen.agreed, algorithm, ranks, frame_bytes)
        seen.overheads[kind].append(max(elapsed - model, 0.0))
    if choice.name in LEVELS and frame_bytes:
        entry = seen.key(choice.key)
        if choice.name == "ebq_dense":
            entry.ratio_dense = frame_bytes / raw_bytes
        else:
            entry.ratio_fast = frame_bytes / raw_bytes


def record_raw(eng: Engine, moved_raw: int, elapsed: float) -> None:
    """After an uncompressed auto call: the link's sample and its overhead beyond the link's
    figures. A call of fewer than ``MIN_SAMPLE_BYTES`` counts one time in ``RAW_SAMPLING``:
    a settled key's calls are many and alike, and each pays for its record."""
    seen = observed(eng)
    seen.raw_calls += 1
    if moved_raw < MIN_SAMPLE_BYTES and seen.raw_calls % RAW_SAMPLING != 1:
        return
    sample_raw(eng, moved_raw, elapsed)


def record_settled(eng: Engine, moved_raw: int, agree_s: float, elapsed: float) -> None:
    """A sampled call of a settled raw key on the compiled path (``hot``, which samples): its
    agreement's latency and ``sample_raw``."""
    eng.link.add_latency(agree_s)
    sample_raw(eng, moved_raw, elapsed)


def sample_raw(eng: Engine, moved_raw: int, elapsed: float) -> None:
    """An uncompressed call's time as the link's sample and auto's raw overhead."""
    seen = observed(eng)
    eng.link.add_transfer("raw", moved_raw, elapsed)
    if seen.agreed is not None:
        model = wire_time(seen.agreed, "raw", eng.link.ranks, moved_raw)
        seen.overheads["raw"].append(max(elapsed - model, 0.0))


@functools.lru_cache(maxsize=256)
def ebq_spec(spec: CodecSpec, name: str) -> CodecSpec:
    """The ebq spec of an auto contract at level ``ebq_fast`` or ``ebq_dense``."""
    return CodecSpec("ebq", **{**spec.options(), "level": name.removeprefix("ebq_")})


def spec_of(spec: CodecSpec, name: str) -> CodecSpec:
    """The spec of candidate ``name`` (a cast, or an ebq level) under an auto contract."""
    return CASTS[name] if name in CASTS else ebq_spec(spec, name)


def preview(comm: MPI.Comm | None = None, text: str = "auto:rel:1e-3", sizes=PREVIEW_SIZES) -> dict:
    """What auto's model would try first now on comm (COMM_WORLD; taken as 2 ranks when
    alone) for a float32 mean of each of ``sizes`` bytes of data spanning [-1, 1], from this
    rank's figures alone (no communication): for ``mpiucc info``."""
    from pycomm.collectives.bound import rank_bound
    from pycomm.collectives.engine import engine_of
    from pycomm.collectives.plan import choose as plan
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
            algorithm_of=lambda name, count=count: plan(spec_of(spec, name), ranks, count),
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
