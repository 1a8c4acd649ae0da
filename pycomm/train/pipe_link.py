"""Compressed point-to-point between pipeline stages, progressed in the background.

Each tensor goes as one pycodecs frame through ``pycomm.isend`` / ``pycomm.irecv`` (the
``--pp-codec``; with ``none``, the tensor's own bytes through plain MPI), preceded by an 8-byte
envelope holding the sender's clock when the data was handed to MPI. Receives are posted early;
a progress thread pokes MPI every few hundred microseconds while transfers are outstanding (MPI
moves large messages only while some thread of each side is inside MPI), sleeping in between,
so it neither spins a core nor lets a transfer stall while the stage computes.

The envelope splits the receiver's wait into the pipeline bubble (the sender had not yet sent:
``wait_s``) and communication (``comm_s``). The clocks are ``time.time()``: exact between
processes of one host, NTP-close across hosts.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pycodecs
import torch
from mpi4py import MPI

import pycomm
from pycomm.collectives.auto_frames import sender_choice
from pycomm.collectives.engine import engine_of
from pycomm.collectives.waits import poll
from pycomm.train.guard import Guard
from pycomm.train.meters import Meters

POKE_INTERVAL_S = 2e-4


class PendingRecv:
    """A posted receive of one tensor; ``PipeLink.wait`` turns it into the tensor."""

    def __init__(self, envelope: MPI.Request, stamp: np.ndarray, data: Any, out: torch.Tensor):
        self.envelope, self.stamp, self.data, self.out = envelope, stamp, data, out


class PipeLink:
    """Sends and receives of one stage on its pipeline communicator (a private duplicate)."""

    def __init__(self, comm: MPI.Intracomm, spec: pycomm.CodecSpec, meters: Meters) -> None:
        self.comm = comm.Dup()
        self.spec = spec
        self.meters = meters
        self.guard: Guard | None = None  #: measures the codec's error on sampled steps
        self._sends: list[tuple[Any, MPI.Request, np.ndarray]] = []
        self._outstanding = 0
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._progress, name="pp-progress", daemon=True)
        self._thread.start()

    def send(self, x: torch.Tensor, dest: int, tag: int) -> None:
        """Compress x (on this thread) and start sending it to ``dest``."""
        meter = self.meters["pp"]
        src = x.detach().to(torch.float32).contiguous()
        t0 = time.perf_counter()
        codec_s = 0.0
        if self.spec.compressed:
            stats = pycomm.CommStats()
            req: Any = pycomm.isend(src, dest, 2 * tag + 1, self.comm, self.spec, stats=stats)
            codec_s, wire = stats.compress_seconds, stats.frame_bytes
            sample = None if self.guard is None else self.guard.sample("pp")
            if sample is not None:
                sample.add(_round_trip(src.numpy(), self.spec, self.comm), src)
        else:
            req = _PlainRequest(self.comm.Isend(src.numpy(), dest, 2 * tag + 1), src)
            wire = src.nbytes
        stamp = np.array([time.time()])
        env = self.comm.Isend(stamp, dest, 2 * tag)
        meter.codec_s += codec_s
        meter.comm_s += time.perf_counter() - t0 - codec_s
        meter.calls += 1
        meter.raw_bytes += src.nbytes
        meter.frame_bytes += wire
        self._sends.append((req, env, stamp))
        self._track(1)

    def post_recv(self, shape: tuple[int, ...], source: int, tag: int) -> PendingRecv:
        """Post the receive of a float32 tensor of ``shape`` from ``source``."""
        out = torch.empty(shape, dtype=torch.float32)
        stamp = np.zeros(1)
        env = self.comm.Irecv(stamp, source, 2 * tag)
        if self.spec.compressed:
            data: Any = pycomm.irecv(out, source, 2 * tag + 1, self.comm, self.spec)
        else:
            data = _PlainRequest(self.comm.Irecv(out.numpy(), source, 2 * tag + 1), out)
        self._track(1)
        return PendingRecv(env, stamp, data, out)

    def wait(self, pending: PendingRecv) -> torch.Tensor:
        """The received tensor; the wait is split into bubble, transfer and decoding."""
        meter = self.meters["pp"]
        t_start, t_wall = time.perf_counter(), time.time()
        deadline = time.monotonic() + pycomm.get_timeout()
        _wait_for(pending.envelope.Test, deadline, "a pipeline envelope")
        sent = float(pending.stamp[0])
        decode = 0.0

        def arrived() -> bool:  # pycomm's completing test decodes the frame: time that one
            nonlocal decode
            t0 = time.perf_counter()
            done = pending.data.test()
            decode = time.perf_counter() - t0
            return done

        _wait_for(arrived, deadline, "a pipeline tensor")
        waited = time.perf_counter() - t_start - decode
        bubble = min(max(0.0, sent - t_wall), waited)
        meter.wait_s += bubble
        meter.comm_s += waited - bubble
        meter.codec_s += decode if self.spec.compressed else 0.0
        pending.data.wait()
        self._track(-1)
        return pending.out

    def finish_sends(self) -> None:
        """Wait until every send started so far has left (their buffers are then free)."""
        meter = self.meters["pp"]
        t0 = time.perf_counter()
        for req, env, _ in self._sends:
            req.wait(pycomm.get_timeout())
            env.Wait()
        meter.comm_s += time.perf_counter() - t0
        self._track(-len(self._sends))
        self._sends.clear()

    def close(self) -> None:
        self.finish_sends()
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join()
        self.comm.Free()

    def _track(self, change: int) -> None:
        with self._cond:
            self._outstanding += change
            self._cond.notify()

    def _progress(self) -> None:
        while True:
            with self._cond:
                while not self._outstanding and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
            self.comm.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG)  # drives MPI's progress engine
            time.sleep(POKE_INTERVAL_S)


def _round_trip(x: np.ndarray, spec: pycomm.CodecSpec, comm: MPI.Comm) -> np.ndarray:
    """What the receiver decodes from x (the frame pycomm.isend makes; with codec="auto",
    the codec the sender chooses on comm)."""
    if spec.auto:
        spec = sender_choice(engine_of(comm), x, spec)
    kw = spec.codec_kwargs()
    if spec.codec == "ebq":
        kw.update(error_bound=spec.error_bound, mode=spec.mode)
    return pycodecs.decompress(pycodecs.compress(x, **kw))


class _PlainRequest:
    """An MPI request on a tensor's own buffer, with pycomm.Request's test/wait."""

    def __init__(self, req: MPI.Request, keep: torch.Tensor) -> None:
        self._req, self._keep = req, keep

    def test(self) -> bool:
        return bool(self._req.Test())

    def wait(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (pycomm.get_timeout() if timeout is None else timeout)
        _wait_for(self._req.Test, deadline, "a pipeline send")


def _wait_for(test: Any, deadline: float, what: str) -> None:
    """pycomm's wait policy (``waits.poll``), with the pipeline's own error on timeout."""
    if not poll(test, deadline):
        raise pycomm.CommTimeout(
            f"pipeline stage waited more than {pycomm.get_timeout():g} s for {what}"
        )
