"""Compressed point-to-point between pipeline stages, progressed by the communicator's engine.

Each tensor goes as one pycodecs frame through ``pycomm.isend`` / ``pycomm.irecv`` (the
``--pp-codec``; with ``none``, the tensor's own bytes through plain MPI), preceded by an 8-byte
envelope holding the sender's clock when the data was handed to MPI. Receives are posted early.
Every request is handed to the engine of the link's communicator (``pycomm.collectives.engine``):
its thread drives MPI while transfers are outstanding (MPI moves large messages only while some
thread of each side is inside MPI), napping when nothing completes, so a transfer neither
stalls nor spins a core while the stage computes; and the engine's deadline, broken mark and
``CommTimeout`` apply to every wait, as to pycomm's own operations.

The envelope splits the receiver's wait into the pipeline bubble (the sender had not yet sent:
``wait_s``) and communication (``comm_s``). The clocks are ``time.time()``: exact between
processes of one host, NTP-close across hosts.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pycodecs
import torch
from mpi4py import MPI

import pycomm
from pycomm.collectives.auto_frames import sender_choice
from pycomm.collectives.engine import engine_of
from pycomm.collectives.requests import Posted, Request
from pycomm.train.guard import Guard
from pycomm.train.meters import Meters


class PendingRecv:
    """A posted receive of one tensor; ``PipeLink.wait`` turns it into the tensor."""

    def __init__(self, envelope: Request, stamp: np.ndarray, data: Request, out: torch.Tensor):
        self.envelope, self.stamp, self.data, self.out = envelope, stamp, data, out


class PipeLink:
    """Sends and receives of one stage on its pipeline communicator (a private duplicate)."""

    def __init__(self, comm: MPI.Intracomm, spec: pycomm.CodecSpec, meters: Meters) -> None:
        self.comm = comm.Dup()
        self.engine = engine_of(self.comm)
        self.spec = spec
        self.meters = meters
        self.guard: Guard | None = None  #: measures the codec's error on sampled steps
        self._sends: list[Request] = []

    def send(self, x: torch.Tensor, dest: int, tag: int) -> None:
        """Compress x (on this thread) and start sending it to ``dest``."""
        self.engine.check_usable()
        meter = self.meters["pp"]
        src = x.detach().to(torch.float32).contiguous()
        t0 = time.perf_counter()
        codec_s = 0.0
        if self.spec.compressed:
            stats = pycomm.CommStats()
            req = pycomm.isend(src, dest, 2 * tag + 1, self.comm, self.spec, stats=stats)
            codec_s, wire = stats.compress_seconds, stats.frame_bytes
            sample = None if self.guard is None else self.guard.sample("pp")
            if sample is not None:
                sample.add(_round_trip(src.numpy(), self.spec, self.comm), src)
        else:
            req = self._posted(self.comm.Isend(src.numpy(), dest, 2 * tag + 1), src, dest)
            wire = src.nbytes
        stamp = np.array([time.time()])
        env = self._posted(self.comm.Isend(stamp, dest, 2 * tag), stamp, dest)
        meter.codec_s += codec_s
        meter.comm_s += time.perf_counter() - t0 - codec_s
        meter.calls += 1
        meter.raw_bytes += src.nbytes
        meter.frame_bytes += wire
        for r in (req, env):
            r.progress_in_background()
            self._sends.append(r)

    def post_recv(self, shape: tuple[int, ...], source: int, tag: int) -> PendingRecv:
        """Post the receive of a float32 tensor of ``shape`` from ``source``."""
        self.engine.check_usable()
        out = torch.empty(shape, dtype=torch.float32)
        stamp = np.zeros(1)
        env = self._posted(self.comm.Irecv(stamp, source, 2 * tag), stamp, source)
        if self.spec.compressed:
            data = pycomm.irecv(out, source, 2 * tag + 1, self.comm, self.spec)
        else:
            data = self._posted(self.comm.Irecv(out.numpy(), source, 2 * tag + 1), out, source)
        for r in (env, data):
            r.progress_in_background()
        return PendingRecv(env, stamp, data, out)

    def wait(self, pending: PendingRecv) -> torch.Tensor:
        """The received tensor; the wait is split into bubble, transfer and decoding."""
        meter = self.meters["pp"]
        t_start, t_wall = time.perf_counter(), time.time()
        deadline = self.engine.deadline()
        self.engine.wait_until(pending.envelope.test, "a pipeline envelope", deadline)
        sent = float(pending.stamp[0])
        decode = 0.0

        def arrived() -> bool:  # pycomm's completing test decodes the frame: time that one
            nonlocal decode
            t0 = time.perf_counter()
            done = pending.data.test()
            decode = time.perf_counter() - t0
            return done

        self.engine.wait_until(arrived, "a pipeline tensor", deadline)
        waited = time.perf_counter() - t_start - decode
        bubble = min(max(0.0, sent - t_wall), waited)
        meter.wait_s += bubble
        meter.comm_s += waited - bubble
        meter.codec_s += decode if self.spec.compressed else 0.0
        pending.envelope.wait()
        pending.data.wait()  # raises what a failed receive kept
        return pending.out

    def finish_sends(self) -> None:
        """Wait until every send started so far has left (their buffers are then free)."""
        meter = self.meters["pp"]
        t0 = time.perf_counter()
        for req in self._sends:
            req.wait()
        meter.comm_s += time.perf_counter() - t0
        self._sends.clear()

    def close(self) -> None:
        """Finish the sends and free the communicator (and with it the engine)."""
        self.finish_sends()
        self.comm.Free()

    def _posted(self, req: MPI.Request, keep: Any, peer: int) -> Request:
        """A plain MPI request as the engine's (its deadline, its broken mark)."""
        return Posted(
            self.engine, [req], _nothing, f"pipeline transfer with rank {peer}", keep=keep
        ).request()


def _nothing() -> None:
    return None


def _round_trip(x: np.ndarray, spec: pycomm.CodecSpec, comm: MPI.Comm) -> np.ndarray:
    """What the receiver decodes from x (the frame pycomm.isend makes; with codec="auto",
    the codec the sender chooses on comm)."""
    if spec.auto:
        spec = sender_choice(engine_of(comm), x, spec)
    kw = spec.codec_kwargs()
    if spec.codec == "ebq":
        kw.update(error_bound=spec.error_bound, mode=spec.mode)
    return pycodecs.decompress(pycodecs.compress(x, **kw))
