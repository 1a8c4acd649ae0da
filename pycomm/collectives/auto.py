"""codec="auto": per message, the codec that this link, this CPU and these data make fastest,
by measurement.

The user gives a contract, not a codec: a bound (``auto:rel:1e-3``, ``CodecSpec("auto",
error_bound=..., mode=...)``) or none, which means lossless: then every message goes raw. With
a bound, the candidates are

    raw, fp16, bf16, ebq fast, ebq dense

those whose bound proof holds for the plan that will run: a cast only where its worst-case
error, summed over the ranks, is proven within the bound (``cast_error``); ebq always keeps it
(``bound``); raw sums in float64 where float32's own roundings could exceed it. For each key
(a kind of call: size, dtype, op, contract) the chooser (``pycomm.chooser``, knobs ``CODEC``)
times them on real calls: each call times its own work, the next call's agreement carries
that time (the slowest rank's counts). A round times raw first, then raw and the model's
``TRIED`` fastest others (``cost.ranked``: predicted encode, decode, latency and bytes, from
``calibration``, ``link`` and the key's last frames), skipping hopeless ones (``HOPELESS``);
the fastest is kept. The model orders the trials; it never overrides a measurement.

Every input to the choice goes through the agreement every collective makes anyway (one MAX
allreduce, ``Engine.agree``): the times, the bound's statistics and this rank's figures, so the
choice is a pure function of agreed values. Every rank thus takes the same decision, and
identical bits and the final bound hold whatever it is. Frames decoded as sent (allgather,
bcast, send) are ``auto_frames``' (by the model alone).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from pycomm.collectives import calibration
from pycomm.collectives.auto_state import NONE, Choice, Seen, local_figures, observed
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
    Figures,
    budget,
    cast_proven,
    choose,
    ranked,
    raw_error,
    raw_within_rms,
)
from pycomm.collectives.engine import Engine
from pycomm.collectives.source import Source
from pycomm.collectives.spec import CodecSpec, ebq_spec

#: Message sizes (bytes) ``preview`` (``mpiucc info``) shows the choice for.
PREVIEW_SIZES = (1 << 16, 1 << 20, 1 << 26)
#: Candidates besides raw a round tries: the model's fastest ones that are not hopeless
#: (predicted to take ``HOPELESS`` times the fastest prediction).
TRIED, HOPELESS = 2, 8.0
#: How far inside the bound a sum in the dtype must be, on this call's data, for raw to be
#: kept (later calls' data may be less kind; a proof for any data, ``raw_within_rms``, needs none).
RAW_MARGIN = 16.0
CASTS = {name: CodecSpec(name) for name in CAST_ROUNDOFF}


@dataclass(frozen=True, slots=True)
class _Call:
    """What one auto call's decision reads: the data and contract, the ranks, the key, where
    the statistics come from, and the algorithm each candidate would run."""

    eng: Engine
    a: np.ndarray
    spec: CodecSpec
    op: str
    ranks: int
    key: int
    ef: bool
    algorithm_of: Callable[[CodecSpec], str]
    source: Source | None
    residual: np.ndarray | None

    def statistics(self) -> tuple:
        return local_statistics(self.a, self.spec, self.source, self.residual)

    def figures(self) -> tuple:
        return local_figures(self.eng, self.key).agreed_vector()

    def contract(self, stats: list) -> tuple[float, float, float]:
        """(the bound on the result, the largest |x|, the sum's error budget) from the
        agreed statistics."""
        bound, top = contract(self.spec, stats)
        return bound, top, budget(bound, top, self.ranks, self.op == "mean", self.a.dtype)


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
    agreed: np.void | None = None,
) -> Choice:
    """Agree (one allreduce, as ``bound.agreed_kwargs``) and resolve spec="auto" for a.

    ``algorithm_of(spec)`` names the algorithm the collective would run for spec (the proofs
    and the model are that algorithm's); ``ef``: a residual is sent along (casts are then left
    out: the residual's size is not part of the proven bound); ``residual``: the host residual
    added to a before compression (the bound's statistics are those of a + residual).

    Every call agrees once, carrying the key's state (``Chooser.token``): a kept candidate is
    taken only where every rank's state is the same, else every rank forgets the key and
    decides in full in a second agreement; a kept pick that measured slower than the round's
    runner-up gives way there too. A kept candidate still needs this call's agreed statistics
    to prove it (``_kept``); a kept raw summed in the dtype returns the entry's own ``raw``,
    which the compiled path (``hot``) may take on. One rank takes raw at once (its "sum" is
    its input, exact). ``agreed``: the first agreement, made already by the compiled path.
    """
    key = spec.signature(what, a.dtype.str, a.size, op, *extra)  # the settings digest
    label = call_label(what, "auto", a.dtype, a.size, op)
    ranks = comm.Get_size()
    if spec.lossless or a.size == 0 or ranks < 2:  # one rank: the "sum" is x itself, exact
        eng.agree(label, key)
        return Choice("raw", NONE, None, key)
    call = _Call(eng, a, spec, op, ranks, key, ef, algorithm_of, source, residual)
    entry = observed(eng).key(key, label=label)
    entry.reclaim()
    kept = entry.current()
    # a kept raw that an rms bound keeps for any data has only overflow left to prove
    any_data = kept == "raw" and spec.mode == "rms" and raw_within_rms(
        spec.error_bound, a.size, ranks, op == "mean", a.dtype
    )  # fmt: skip
    if agreed is None:
        agreed = eng.agree(label, key, **_sent(call, entry, kept, any_data))
    if _decide_again(entry, kept, agreed):
        agreed = eng.agree(label, key, statistics=call.statistics(), figures=call.figures())
    elif kept:
        entry.since += 1
        return _kept(call, entry, kept, any_data, agreed["statistics"].tolist())
    elif entry.trying:
        entry.measured(entry.trying, float(agreed["elapsed"]))
    return _decide(call, entry, agreed["statistics"].tolist(), agreed["figures"].tolist())


def _sent(call: _Call, entry: Seen, kept: str | None, any_data: bool) -> dict:
    """What this rank puts in the agreement: the key's state, the last trial's time or the
    kept pick's recent calls', the statistics (only the range, for ``any_data``) and, where
    a full decision is due, this rank's figures."""
    token = entry.token()
    elapsed = entry.elapsed if entry.trying else entry.kept_time() if kept else 0.0
    sent = dict(token=token, neg_token=-token, elapsed=elapsed)
    if any_data:
        sent["statistics"] = local_range(call.a, call.source, call.residual)
        return sent
    sent["statistics"] = call.statistics()
    if not kept:
        sent["figures"] = call.figures()
    return sent


def _decide_again(entry: Seen, kept: str | None, agreed: np.void) -> bool:
    """Whether the agreement calls for a full decision in a second one: the ranks remember
    the key differently (all forget it), or the kept pick measured slower than the round's
    runner-up (it gives way)."""
    if agreed["token"] != -agreed["neg_token"]:
        entry.forget()
        return True
    slowest = float(agreed["elapsed"])
    if kept and slowest > entry.give_up:
        entry.slower(slowest)
        return True
    return False


def _decide(call: _Call, entry: Seen, stats: list, figures: list) -> Choice:
    """A full decision from the agreed statistics and figures (the same on every rank)."""
    a, spec, ranks, key = call.a, call.spec, call.ranks, call.key
    bound, top, limit = call.contract(stats)
    fig = observed(call.eng).agreed = Figures.from_agreed(figures)
    levels = {n: final_kwargs(ebq_spec(spec, n), stats, ranks, call.op, a) for n in LEVELS}
    fast = levels["ebq_fast"]
    ranking = ranked(
        fig, count=a.size, dtype=a.dtype, ranks=ranks, mean=call.op == "mean", bound=bound,
        top=top, rank_bound=None if fast is None else fast["error_bound"],
        casts=not call.ef and a.dtype == np.float32,
        algorithm_of=lambda name: call.algorithm_of(spec_of(spec, name)),
    )  # fmt: skip
    if entry.kept is not None:  # a kept candidate's calls are over: measure afresh
        entry.new_round(())
    allowed = [n for n, _ in ranking]  # the bound's proofs, on this call's statistics
    name = _next_trial(entry, ranking, allowed)
    if name is None:  # raw kept only with room to spare in the bound
        room = raw_error(top, ranks, a.dtype) * RAW_MARGIN <= limit
        times = {n: t for n, t in entry.times().items() if n in allowed}
        name = entry.decide(times, hold=lambda best: best != "raw" or room)
    else:
        entry.trial(name)
    if name == "raw":
        return _raw(spec, top, ranks, a.dtype, limit, key)
    chosen = spec_of(spec, name)
    return Choice(name, chosen, levels.get(name) or chosen.codec_kwargs(), key)


def _next_trial(entry: Seen, ranking: list[tuple[str, float]], allowed: list[str]) -> str | None:
    """The candidate this call times, or None: the round is complete. Raw first; once its
    call has measured the link, the round is raw and the model's ``TRIED`` fastest others
    that are not hopeless (the model's link figures are guesses before that call), each
    timed in turns in the model's order; a candidate the bound no longer allows is skipped.
    Agreed values only."""
    if not entry.order:  # a round's candidates are chosen once, after raw's first call
        if not entry.samples.get("raw"):
            return "raw"
        fastest = ranking[0][1]
        others = [n for n, t in ranking if n != "raw" and t <= HOPELESS * fastest][:TRIED]
        entry.plan(tuple(n for n, _ in ranking if n == "raw" or n in others))
    return entry.next_trial(allowed)


def _raw(spec: CodecSpec, top: float, ranks: int, dtype: np.dtype, limit: float, key: int):
    """Uncompressed, summed wide (``plain``) where the dtype's roundings could exceed the
    bound, or its partial sums overflow."""
    wide = raw_error(top, ranks, dtype) > limit or ranks * top > largest(dtype)
    return Choice("raw", ebq_spec(spec, "ebq_fast") if wide else NONE, None, key)


def _kept(call: _Call, entry: Seen, name: str, any_data: bool, stats: list) -> Choice:
    """The kept candidate without figures or model, where this call's agreed statistics
    still prove its bound (ebq: a per-rank bound exists; a cast: ``cast_error`` of the
    algorithm that will run within the budget; raw: a sum in the dtype keeps it and cannot
    overflow, else it is summed wide); else raw, and the next call decides in full. A raw in
    the dtype is the entry's own ``raw`` choice, which the compiled path may take on. Agreed
    values only: the same on every rank."""
    a, spec, ranks, key = call.a, call.spec, call.ranks, call.key
    if any_data:  # (max, -min): summed in the dtype unless its partial sums could overflow
        if ranks * max(abs(stats[0]), abs(stats[1])) <= largest(a.dtype):
            return entry.raw
        return Choice("raw", ebq_spec(spec, "ebq_fast"), None, key)
    _, top, limit = call.contract(stats)
    if name in LEVELS:
        kw = final_kwargs(ebq_spec(spec, name), stats, ranks, call.op, a)
        if kw is not None:
            return Choice(name, ebq_spec(spec, name), kw, key)
    elif name in CASTS:
        if cast_proven(name, top, ranks, a.dtype, call.algorithm_of(CASTS[name]), limit):
            return Choice(name, CASTS[name], CASTS[name].codec_kwargs(), key)
    if name != "raw":  # and the next full decision's pick counts as new
        entry.kept = entry.last = None
    choice = _raw(spec, top, ranks, a.dtype, limit, key)
    in_dtype = name == "raw" and choice.spec is NONE and spec.mode != "rms"
    return entry.raw if in_dtype else choice


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
