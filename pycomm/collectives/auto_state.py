"""What codec="auto" learns on one communicator: each key's chooser state (``Seen``: agreed,
so the same on every rank, and what the compiled path counts on) and this rank's own
measurements (the ratio each ebq level reached, each codec's cost, each kind of call's
overhead beyond the model, the link's samples), which feed the model's figures. ``auto``
decides from them; this module only keeps them."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from mpi4py import MPI

from pycomm.chooser import KNOBS, Chooser
from pycomm.collectives import calibration
from pycomm.collectives.cost import CANDIDATES, CAST_ROUNDOFF, LEVELS, Figures, wire_time
from pycomm.collectives.engine import Engine
from pycomm.collectives.link import MIN_SAMPLE_BYTES, SAMPLING, WINDOW, quantile
from pycomm.collectives.spec import CodecSpec

#: Keys of ratio history kept per communicator before the oldest are dropped.
MAX_KEYS = 4096
#: The chooser's knobs for codecs (``pycomm.chooser.KNOBS``): timings, keeps, strikes, margin.
CODEC = KNOBS["codec"]

#: Codecs whose cost is measured as they run (the calibration stands in until then).
CODEC_COSTS = ("ebq_fast", "ebq_dense", "cast")

NONE = CodecSpec()


@dataclass(frozen=True, slots=True)
class Choice:
    """What ``agreed_choice`` resolved: the candidate's name, its spec and pycodecs keywords
    (None: uncompressed; with an ebq spec, summed in float64) and the key of its history."""

    name: str
    spec: CodecSpec
    kw: dict | None
    key: int


class Seen(Chooser):
    """What auto keeps of one key (a call's settings digest: what, size, dtype, op,
    contract): the chooser's state, agreed (``pycomm.chooser``), and this rank's own: the
    ratio each ebq level's frames reached and the time of the key's last call."""

    __slots__ = ("raw", "ratio_fast", "ratio_dense", "elapsed", "label", "compiled", "parked")

    def __init__(self, key: int, label: str = "") -> None:
        self.label = label  # the kind of call, for ``choices``
        self.compiled: Any = None  # the compiled plan counting the kept raw's calls (``hot``)
        self.parked: Any = None  # the last one, retired while Python handles a call
        self.raw = Choice("raw", NONE, None, key)  # what a settled raw call returns
        self.ratio_fast = self.ratio_dense = 0.0
        self.elapsed = 0.0  # this rank's time of the key's last exchange (``ran``)
        super().__init__(CODEC, CANDIDATES)

    def forget(self) -> None:
        """Back to a new key's state, the compiled plan's copy too (the ratios stay)."""
        self.reclaim()
        super().forget()

    def reclaim(self) -> None:
        """Take the key's state back from its compiled plan (retired: the Python path owns
        the key again) before reading or changing it."""
        plan, self.compiled = self.compiled, None
        if plan is not None:
            self.parked = plan
            self.since, recent = plan.retire()
            self.recent.clear()
            self.recent.extend(recent)

    def rearm(self) -> None:
        """After a call on the Python path: hand the key back to its last compiled plan where
        it still keeps raw (the plan tests the range of each call's data itself)."""
        if self.parked is not None and self.compiled is None and self.current() == "raw":
            self.parked.adopt(self.compiled_state())
            self.compiled = self.parked


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

    def key(self, key: int, table: dict[int, Seen] | None = None, label: str = "") -> Seen:
        """key's entry in ``table`` (the collectives' by default), made on first use; the
        table is emptied when full. Nothing here need be the same on every rank: a call
        agrees on its entry's ``token`` before it relies on it."""
        table = self.keys if table is None else table
        entry = table.get(key)
        if entry is None:
            if len(table) >= MAX_KEYS:
                for old in table.values():
                    old.reclaim()
                table.clear()
            entry = table[key] = Seen(key, label)
        return entry


def observed(eng: Engine) -> Observed:
    """The engine's ``Observed``, made on first use."""
    got = eng.observed
    if got is None:
        got = eng.observed = Observed()
    return got


def forget(eng: Engine) -> None:
    """Forget what auto learned on eng: every key (its compiled plan retired with it, so no
    call runs on what was forgotten) and the figures."""
    seen = eng.observed
    if seen is not None:
        for table in (seen.keys, seen.sends):
            for entry in table.values():
                entry.reclaim()
    eng.observed = None


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
        entry.rearm()


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
    figures. A call of fewer than ``MIN_SAMPLE_BYTES`` counts one time in ``SAMPLING``:
    a settled key's calls are many and alike, and each pays for its record."""
    seen = observed(eng)
    seen.raw_calls += 1
    if moved_raw < MIN_SAMPLE_BYTES and seen.raw_calls % SAMPLING != 1:
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


def choices(comm: MPI.Comm | None = None) -> dict[str, dict]:
    """What auto chose on comm (COMM_WORLD by default) so far, per kind of call: ``on`` (the
    kept codec, or "measuring"), this round's agreed times (µs), the calls the pick is kept
    for and how many of them have run. This rank's view; every rank holds the same."""
    from pycomm.collectives.engine import engine_of

    seen = engine_of(comm).observed
    out = {}
    for entry in [] if seen is None else seen.keys.values():
        out[entry.label or str(entry.raw.key)] = {
            "on": entry.current() or "measuring",
            "times_us": {n: round(t * 1e6, 1) for n, t in entry.times().items()},
            "keep": entry.keep,
            "since": entry.since,
        }
    return out
