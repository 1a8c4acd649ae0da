"""The accuracy guard: the error each compressed stream introduces, measured, and kept small.

On a sampled step (the first, then every ``--guard-every`` steps) each compressed stream also
computes the exact result of what it compressed and adds up ``|compressed - exact|^2`` and
``|exact|^2`` over that step's calls: the TP all_reduce against a plain MPI_Allreduce of the
same input, the pipeline's sends against the input itself (the codec's round trip, done by
the sender), the DDP buckets against a plain allreduce of the bucket. At the step's end one
allreduce over the world sums these, so every rank reads the same relative error per stream,
``sqrt(sum err^2 / sum exact^2)``, and takes the same decision: a stream above its threshold
is tightened (an ebq bound divided by ``TIGHTEN_FACTOR``; any other codec replaced by ``none``)
and the change is logged. No warm-up is set by hand: the first step is sampled.

The thresholds are relative norm errors per step, measured (BENCHMARKS.md, issue 19) on dp 2 x
tp 2: DP gradients at 2-7% per step (ebq rel 1e-3) cost +2.6% of validation loss alone and +6.9%
with TP backward compression, at about 0.5% (rel 1e-4) nothing; TP backward errors of 8-16% (rel
1e-2) alone cost nothing (activation gradients are summed over many tokens). Over 300 steps,
with DP held near 1%, TP forward at 0.6% and TP backward at 5% per step still left +2.1%: the
forward streams are held to 0.5%, TP backward to 5%. On dp 2 alone (2 layers x 128, 200 steps)
DP errors of 0.7-1% per step (ebq rms 1e-2, or rel held near 1% by this guard) moved the final
loss by -2.6 to -3.1% (the runs left the baseline's trajectory at its loss spike near step
50), 0.15% (rms 2e-3) by +0.55%; on the accuracy matrix's plateau cells 0.15% per step moved it
by -1.6 to -2.5% and 0.04-0.08% (rms 5e-4, the default) by at most -1.0%: DP is held to 0.1%.

Under ``--fsdp`` the gradients' reduce-scatter (and the TP-replicated bucket) are held to DP's
0.1%. The weights' all-gather is held to 1%: its error does not accumulate (every step gathers
the exact masters afresh), and blockwise int8 (block 64) errs by about 0.6% on weights.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from mpi4py import MPI

import pycomm
from pycomm.train.config import format_codec
from pycomm.train.meters import OPERATORS

#: Relative norm error per step above which a stream is tightened.
THRESHOLDS = {
    "tp_fwd": 0.005,
    "tp_bwd": 0.05,
    "pp": 0.005,
    "dp": 0.001,
    "fsdp_rs": 0.001,
    "fsdp_ag": 0.01,
}
#: An ebq bound over the threshold is divided by this.
TIGHTEN_FACTOR = 4.0
#: No ebq bound is tightened below this (the codec then sends nearly raw data anyway).
SMALLEST_BOUND = 1e-6


class ErrorSample:
    """Squared error and squared norm of one stream's sampled calls on this rank."""

    __slots__ = ("err2", "norm2")

    def __init__(self) -> None:
        self.err2 = self.norm2 = 0.0

    def add(self, got: torch.Tensor | np.ndarray, exact: torch.Tensor | np.ndarray) -> None:
        g = torch.as_tensor(got).reshape(-1).double()
        e = torch.as_tensor(exact).reshape(-1).double()
        self.err2 += float(torch.sum((g - e) ** 2))
        self.norm2 += float(torch.sum(e**2))


def tightened(spec: pycomm.CodecSpec) -> pycomm.CodecSpec:
    """The next tighter setting of a codec (the same codec where it can be)."""
    if spec.codec in ("ebq", "auto") and spec.error_bound is not None:
        bound = max(SMALLEST_BOUND, spec.error_bound / TIGHTEN_FACTOR)
        return spec.replace(error_bound=bound)
    return pycomm.CodecSpec()


class Guard:
    """This run's sampling switch, per-stream samples, history and tightening decisions.

    ``streams`` maps a stream name to a getter and a setter of its CodecSpec (the streams
    the run has: TP without a TP group has none). ``every`` 0 turns the guard off.
    """

    def __init__(
        self,
        streams: dict[str, tuple[Callable[[], pycomm.CodecSpec], Callable]],
        every: int,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.streams = streams
        self.every = every
        self.log = log or (lambda text: None)
        self.samples = {k: ErrorSample() for k in OPERATORS}
        self.sampling = False
        self.history: list[tuple[int, dict[str, float]]] = []  #: (step, relative error)
        self.events: list[str] = []  #: what was tightened, when and why
        self._comm = MPI.COMM_WORLD.Dup()

    def sample(self, name: str) -> ErrorSample | None:
        """The accumulator of ``name`` while this step is sampled and the stream compressed."""
        if not self.sampling or name not in self.streams:
            return None
        return self.samples[name] if self.streams[name][0]().compressed else None

    def begin_step(self, step: int) -> None:
        self.sampling = self.every > 0 and step % self.every == 0
        for s in self.samples.values():
            s.err2 = s.norm2 = 0.0

    def end_step(self, step: int) -> None:
        """Reduce the step's samples over the world; tighten the streams over threshold."""
        if not self.sampling:
            return
        self.sampling = False
        v = np.array([[s.err2, s.norm2] for s in self.samples.values()])
        self._comm.Allreduce(MPI.IN_PLACE, v, op=MPI.SUM)
        errors = {}
        for (name, _), (err2, norm2) in zip(self.samples.items(), v, strict=True):
            if name in self.streams and norm2 > 0 and self.streams[name][0]().compressed:
                errors[name] = math.sqrt(err2 / norm2)
        self.history.append((step + 1, errors))
        for name, err in errors.items():
            limit = THRESHOLDS[name]
            get, put = self.streams[name]
            if err > limit and get() != tightened(get()):
                old, new = get(), tightened(get())
                put(new)
                text = (
                    f"guard: after step {step + 1}, {name} error {100 * err:.2f}% > "
                    f"{100 * limit:g}%: {format_codec(old)} -> {format_codec(new)}"
                )
                self.events.append(text)
                self.log(text)

    def summary(self) -> dict[str, dict]:
        """Per stream: mean and largest sampled error, threshold, final codec."""
        out = {}
        for name, (get, _) in self.streams.items():
            errs = [e[name] for _, e in self.history if name in e]
            out[name] = {
                "mean_error": float(np.mean(errs)) if errs else float("nan"),
                "max_error": float(np.max(errs)) if errs else float("nan"),
                "last_error": errs[-1] if errs else float("nan"),
                "samples": len(errs),
                "threshold": THRESHOLDS[name],
                "codec": format_codec(get()),
            }
        return out

    def state_dict(self) -> dict:
        """Each stream's codec as it stands (tightened or not), the history and the events."""
        codecs = {name: get() for name, (get, _) in self.streams.items()}
        return {"codecs": codecs, "history": list(self.history), "events": list(self.events)}

    def load_state_dict(self, state: dict) -> None:
        for name, spec in state["codecs"].items():
            self.streams[name][1](spec)
        self.history, self.events = list(state["history"]), list(state["events"])

    def close(self) -> None:
        self._comm.Free()
