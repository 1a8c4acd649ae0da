"""A device tensor as a collective's ``Source``: compressed on its device by the Triton codecs
(``pycodecs.device``), so only frames cross to the host; the same frames as the C codecs make
of the same values, so the collective's result is the host path's bit for bit.

Device work runs on one side stream per device, after the work the caller's stream had queued
when the source was made (an event), so a gradient written on the caller's stream is read only
once it is written. Works on CPU tensors too, under Triton's interpreter (the tests).
"""

from __future__ import annotations

import contextlib
import math
import os
import threading

import numpy as np
import torch

from pycomm.collectives.spec import CodecSpec

_lock = threading.Lock()
_streams: dict[torch.device, torch.cuda.Stream] = {}


def device_codec(spec: CodecSpec, t: torch.Tensor) -> bool:
    """Whether the device codecs make spec's frames of t (a CUDA tensor, or a CPU one under
    Triton's interpreter), else the host must."""
    if t.dtype != torch.float32 or not (t.is_cuda or os.environ.get("TRITON_INTERPRET") == "1"):
        return False
    try:
        from pycodecs import device
    except ImportError:  # no triton
        return False
    o = spec.options()
    if spec.codec == "ebq":
        return o["level"] == "fast" and o["predictor"] == "none" and o["block_size"] in (0, 32)
    if spec.codec not in device.CODECS or o["rounding"] not in (None, "nearest"):
        return False
    try:
        device._block_of(spec.codec, o["block_size"])
    except ValueError:
        return False
    return True


def side_stream(dev: torch.device) -> torch.cuda.Stream:
    """The device's compression stream, made once."""
    with _lock:
        if dev not in _streams:
            _streams[dev] = torch.cuda.Stream(dev)
        return _streams[dev]


class DeviceSource:
    """x (flat float32 on a device) and its residual there, for ``pycomm.iallreduce(source=)``.

    ``scratch`` (CPU uint8, pinned for speed) carries each quantizer payload to the host when
    it is large enough (else a new host tensor does).
    """

    def __init__(
        self, x: torch.Tensor, residual: torch.Tensor | None, scratch: torch.Tensor | None = None
    ) -> None:
        self.x, self.residual, self.scratch = x, residual, scratch
        self.count, self.has_residual = x.numel(), residual is not None
        self.stream = side_stream(x.device) if x.is_cuda else None
        if self.stream is not None:  # after the caller's work on x so far
            self.stream.wait_stream(torch.cuda.current_stream(x.device))
            x.record_stream(self.stream)

    def on_device(self) -> contextlib.AbstractContextManager:
        """Run the enclosed device work on the side stream (any thread)."""
        if self.stream is None:
            return contextlib.nullcontext()
        stack = contextlib.ExitStack()
        stack.enter_context(torch.cuda.device(self.x.device))
        stack.enter_context(torch.cuda.stream(self.stream))
        return stack

    def sent(self) -> torch.Tensor:
        """What is compressed: x plus the residual (the bound's statistics are of these)."""
        return self.x if self.residual is None else self.x + self.residual

    def finite_min_max(self) -> tuple[float, float]:
        with self.on_device():
            if not self.count:
                return 0.0, 0.0
            sent = self.sent()
            lo, hi = torch.aminmax(sent)
            lo, hi = float(lo), float(hi)
            if np.isfinite(lo) and np.isfinite(hi):
                return lo, hi
            finite = sent[torch.isfinite(sent)]
            if not finite.numel():
                return 0.0, 0.0
            lo, hi = torch.aminmax(finite)
            return float(lo), float(hi)

    def finite_rms(self, top: float) -> float:
        with self.on_device():
            if not self.count or top == 0:
                return 0.0
            x = self.sent().double()
            finite = x[torch.isfinite(x)] / top
            return top * math.sqrt(float(torch.dot(finite, finite)) / max(finite.numel(), 1))

    def frame(self, lo: int, hi: int, kw: dict, ef: bool) -> bytearray:
        from pycodecs import device

        res = self.residual[lo:hi] if ef and self.residual is not None else None
        codec, x = kw["codec"], self.x[lo:hi]
        with self.on_device():
            if codec == "ebq":
                return device.compress(x, "ebq", residual=res, **_ebq_options(kw))
            enc = device.encode(x, codec, residual=res, block_size=kw["block_size"])
            host = self.scratch
            if host is not None and host.numel() < enc.storage.numel():
                host = None
            return device.to_frame(enc, host=host)

    def fetch(self, out: np.ndarray) -> np.ndarray | None:
        with self.on_device():
            torch.from_numpy(out).copy_(self.x)  # the driver knows pinned memory by address
            if self.residual is None:
                return None
            r = self.residual.to("cpu", copy=True).numpy()  # kept when it is emptied
        self.zero_residual()
        return r

    def zero_residual(self) -> None:
        with self.on_device():
            self.residual.zero_()


def _ebq_options(kw: dict) -> dict:
    return {"error_bound": kw["error_bound"], "mode": kw["mode"]}
