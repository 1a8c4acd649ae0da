"""One chooser for every choice pycomm makes by measurement.

A choice is made per *key* (a kind of call: the codec of an allreduce of one size, dtype, op
and contract; the library of a torch collective of one size class) among candidates, the
first of them the default. The chooser owns one rule for all of them:

1. a *round* times each of its candidates on real calls, in turns (``warmup`` untimed calls,
   then ``samples`` timed ones each); the times it is given are agreed already (the slowest
   rank's), so every rank holds the same ones;
2. the fastest is kept, one other than the default only where it beats the default's time by
   ``margin``;
3. the pick is kept for as many calls as make the next round's excess over it
   ``recheck_share`` of its calls' time (candidates far slower than the pick are timed again
   rarely, close ones often), within ``keep`` and ``max_keep``; where nothing else was timed
   (or no share is set) ``keep`` calls, doubled while rounds repeat the pick;
4. where the fastest of a kept pick's last ``strikes`` calls (agreed) takes longer than the
   round's runner-up took, the pick gives way at once, its own time now its calls'.

What a kept choice relies on is decided from agreed values only (``token``: the state as one
number the agreement carries), so every rank takes the same candidate on every call. The
policy is data, ``KNOBS``: one row per kind of choice. What the candidates are, and which of
them keep the user's bound (the proofs), is the caller's.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Knobs:
    """How one kind of choice measures (see the module's docstring)."""

    samples: int  #: timed calls of each candidate in a round
    warmup: int  #: untimed calls of each candidate before its samples
    keep: int  #: calls a new pick is kept before the next round
    max_keep: int  #: the longest keep
    recheck_share: float  #: the share of a pick's time that re-timing the others may cost
    strikes: int  #: kept calls timed to see the pick give way (0: never)
    margin: float  #: a non-default candidate must take less than the default's time x this
    guarded: bool  #: the default's least sample against the others' most (else medians)


#: The chooser's policy, one row per kind of choice: codec="auto" (the codec of each kind of
#: call, raw the default: ``collectives.auto``) and MPIUCC_COLLECTIVES=auto (MPI or UCC per
#: torch collective and size class, MPI the default: ``distributed.ucc_auto``).
# fmt: off
KNOBS = {
    #                samples warmup keep  max_keep recheck_share strikes margin guarded
    "codec":   Knobs(2,      0,     16,   1024,    0.02,         3,      0.9,   True),
    "library": Knobs(3,      1,     64,   4096,    0.0,          0,      1.0,   False),
}
# fmt: on


class Chooser:
    """One key's measured choice among ``names`` (every candidate it may ever take, the
    default first; a round's, in the order to time them, are given to ``new_round``)."""

    __slots__ = ("knobs", "names", "codes", "kept", "last", "since", "keep", "trying", "order",
                 "samples", "worse", "timed", "give_up", "recent")  # fmt: skip

    def __init__(self, knobs: Knobs, names: tuple[str, ...]) -> None:
        self.knobs, self.names = knobs, names
        self.codes = {name: i + 1 for i, name in enumerate(names)}  # in the token; 0: none
        self.recent: deque[float] = deque(maxlen=max(1, knobs.strikes))  # this rank's kept calls
        self.forget()

    def forget(self) -> None:
        """Back to a new key's state."""
        self.kept = self.last = self.trying = None  # the pick; the last round's; on trial now
        self.since, self.keep, self.timed = 0, self.knobs.keep, 0  # timed: agreed samples ever
        self.give_up = float("inf")  # the round's runner-up's time
        self.recent.clear()
        self.new_round(())

    def new_round(self, order: tuple[str, ...]) -> None:
        """Time ``order`` afresh (() : chosen at the next decision)."""
        self.order = order
        self.samples: dict[str, list[float]] = {name: [] for name in order}
        self.worse: dict[str, float] = {}  # a pick's calls' time once it gave way

    def plan(self, order: tuple[str, ...]) -> None:
        """The round's candidates once known, keeping what is timed."""
        self.samples = {name: self.samples.get(name, []) for name in order}
        self.order = order

    def current(self) -> str | None:
        """The kept pick this call takes, or None: a trial or a decision is due."""
        return self.kept if self.since < self.keep else None

    def next_trial(self, allowed: list[str] | None = None) -> str | None:
        """The round's candidate to time next (the least timed, in order; of ``allowed``
        ones only, where given); None once every one has its samples."""
        order = [n for n in self.order if allowed is None or n in allowed]
        calls = [len(self.samples[name]) for name in order]
        if not calls or min(calls) >= self.knobs.warmup + self.knobs.samples:
            return None
        return order[calls.index(min(calls))]

    def trial(self, name: str) -> None:
        """This call tries ``name`` (its agreed time comes to ``measured``)."""
        self.kept, self.trying, self.since = None, name, 0

    def measured(self, name: str, seconds: float) -> None:
        """A call of ``name`` took ``seconds`` (agreed, or this rank's where the round's
        times are agreed at its end: ``times``)."""
        self.samples.setdefault(name, []).append(seconds)
        self.timed += 1
        self.trying = None

    def times(self) -> dict[str, float]:
        """Each timed candidate's time this round: where ``guarded``, the default's least
        sample and the others' most (noise only adds to a call, so it cannot make a
        candidate look faster than the default), else the median; a pick that gave way,
        its calls' time if longer."""
        out = {}
        for name, got in self.samples.items():
            got = got[self.knobs.warmup :]
            if got:
                if self.knobs.guarded:
                    out[name] = min(got) if name == self.names[0] else max(got)
                else:
                    out[name] = statistics.median(got)
        for name, seconds in self.worse.items():
            out[name] = max(seconds, out.get(name, seconds))
        return out

    def decide(self, times: dict[str, float], hold: Callable[[str], bool] = bool) -> str:
        """Pick from the round's ``times`` (agreed): the fastest, the default unless another
        beats it by ``margin``; kept for as long as rule 3 says where ``hold(pick)`` (else
        decided again at the next call)."""
        default = self.names[0]
        best = min(times, key=times.__getitem__)
        if default in times and not times[best] < times[default] * self.knobs.margin:
            best = default
        paid = self._paid_by(times, best)
        if paid is None:  # nothing else timed to weigh: doubled while rounds repeat the pick
            paid = 2 * self.keep if best == self.last else self.knobs.keep
        self.keep = min(max(self.knobs.keep, paid), self.knobs.max_keep)
        held = hold(best)
        self.kept = self.last = best if held else None
        self.since = 0
        others = [t for name, t in times.items() if name != best]
        self.give_up = min(others) if held and others and self.knobs.strikes else float("inf")
        self.recent.clear()
        return best

    def _paid_by(self, times: dict[str, float], best: str) -> int | None:
        """The calls of ``best`` whose time the next round's excess (the others' time over
        its own, ``samples`` each) is ``recheck_share`` of; None without a share or others."""
        share, t = self.knobs.recheck_share, times[best]
        if not share or len(times) < 2:
            return None
        excess = self.knobs.samples * sum(max(s - t, 0.0) for s in times.values())
        return int(excess / (share * t)) if t > 0 else self.knobs.max_keep

    def kept_time(self) -> float:
        """The fastest of this rank's last ``strikes`` kept calls (0 before there are as
        many), so that one slow call (a busy machine) is no strike."""
        full = self.knobs.strikes and len(self.recent) == self.knobs.strikes
        return min(self.recent) if full else 0.0

    def slower(self, seconds: float) -> None:
        """The kept pick's calls took ``seconds`` (agreed), longer than the runner-up: that
        is its time now; the next decision weighs it against the round's others."""
        self.worse[self.kept] = seconds
        self.kept = None

    def token(self) -> float:
        """The agreed state as one number, exact in a double: ranks whose tokens are equal
        take the same path and the same decision (the count of agreed samples stands for
        them)."""
        base, step = self._token_parts()
        return base + self.since * step

    def _token_parts(self) -> tuple[float, float]:
        """The token at since 0 and its step per call of the kept pick, so that the compiled
        path can count calls itself (``compiled_state``)."""
        span, room = len(self.names) + 1, 2 * self.knobs.max_keep
        value = (self.timed % 1024) * room + self.keep
        value *= room  # since's place, counted by the step
        for part in (self.trying, self.last, self.current()):
            value = value * span + self.codes.get(part, 0)
        return 1.0 + value, float(span**3)

    def compiled_state(self) -> tuple:
        """What the compiled path copies of a kept pick to count its calls alone: the token
        at since 0 and its step, since, keep, give_up, strikes and the recent times."""
        base, step = self._token_parts()
        return (base, step, self.since, self.keep, self.give_up, self.knobs.strikes,
                tuple(self.recent))  # fmt: skip
