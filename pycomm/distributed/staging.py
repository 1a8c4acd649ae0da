"""Device tensors through pinned host buffers, segment by segment, overlapped.

``staged(src, host, segments, start)`` copies each segment of a device tensor into a pinned
host buffer on a side stream (all copies queued at once: the copy engine runs them back to
back), starts the host work on a segment as soon as its copy has landed (an event), and copies
each finished segment back on a second side stream. So the device-to-host copy of segment k+1
overlaps the compression and exchange of segment k and the host-to-device copy of segment k-1.
The returned future completes on that second stream: a CUDA future records it, and whoever
waits on the future (DDP) has its own stream wait for the copies, not the host.

Two worker threads, shared by all calls, issue (in call order, so every rank starts its
collectives in the same order) and finish the segments; Python threads only wait on events
and requests. With a CPU tensor the copies are plain copies and the logic is the same, which
is how the tests exercise it without a GPU.

``landed(req, src, host)`` is the same completion for a request that fills ``host`` itself.

``allreduce_bucket`` is the device side of ``pycomm.distributed.hooks``. A float32 bucket that
a device codec compresses (``device_source``) goes through one ``pycomm.iallreduce`` as the CPU
hook's does, its frames made on the device: only they cross to the host, the same bytes as the
CPU hook's, so the result is the CPU hook's bit for bit; the result, decoded on the host, is
copied back. Any other bucket (uncompressed, warming up, float64, a host-only codec) is staged
whole and averaged one hook segment at a time, each segment as the CPU hook's pipeline cuts it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch
import torch.distributed as dist

import pycomm
from pycomm.collectives.buffers import all_finite, chunk_bounds
from pycomm.distributed.device_source import DeviceSource, device_codec, side_stream

#: Pipeline segment of a bucket's allreduce (elements; allreduce's default is 2^21). ebq
#: reserves its output buffer for the worst case, about 2x the input, before trimming it to
#: the frame; smaller segments keep that reserve (and every per-segment copy) to a fraction of
#: a large bucket (bench/hook_memory.py has the figures).
SEGMENT_COUNT = 1 << 19

_lock = threading.Lock()
_workers: dict[str, ThreadPoolExecutor] = {}
_streams: dict[torch.device, tuple[torch.cuda.Stream, torch.cuda.Stream]] = {}


def _worker(name: str) -> ThreadPoolExecutor:
    with _lock:
        if name not in _workers:
            _workers[name] = ThreadPoolExecutor(1, thread_name_prefix=f"pycomm-stage-{name}")
        return _workers[name]


def _side_streams(device: torch.device) -> tuple[torch.cuda.Stream, torch.cuda.Stream]:
    """(device-to-host, host-to-device) streams of a CUDA device, made once."""
    with _lock:
        if device not in _streams:
            _streams[device] = (torch.cuda.Stream(device), torch.cuda.Stream(device))
        return _streams[device]


def pinned_like(t: torch.Tensor) -> torch.Tensor:
    """A flat host tensor of t's size and dtype, page-locked when t is on a CUDA device."""
    return torch.empty(t.numel(), dtype=t.dtype, pin_memory=t.is_cuda)


def staged(
    src: torch.Tensor,
    host: torch.Tensor,
    segments: list[tuple[int, int]],
    start: Callable[[int, int], Any],
    *,
    after: Callable[[], None] | None = None,
    result: torch.Tensor | None = None,
) -> torch.futures.Future:
    """Run ``start(lo, hi)`` on ``host[lo:hi]`` once it holds ``src[lo:hi]``, for each segment.

    ``src`` (flat) is read on a side stream after the current stream's work so far; ``host``
    is a flat CPU tensor of src's size and dtype (pinned for speed). ``start`` returns an
    object with ``wait()`` (a ``pycomm.Request``) whose completion means ``host[lo:hi]`` holds
    the result; it is copied back into ``src``. ``after()`` runs once every segment is done,
    before the future completes with ``result`` (default: ``src``).
    """
    if host.is_cuda or host.numel() != src.numel() or host.dtype != src.dtype:
        raise ValueError("host must be a CPU tensor of src's size and dtype")
    fut = _future(src)
    copied = _copy_out(src, host, segments) if src.is_cuda else None

    def issue() -> None:
        requests, error = [], None
        try:
            for k, (lo, hi) in enumerate(segments):
                if copied is not None:
                    copied[k].synchronize()
                else:
                    host[lo:hi].copy_(src[lo:hi])
                requests.append(start(lo, hi))
        except BaseException as exc:  # the requests already started still run to the end
            error = exc
        parts = list(zip(segments, requests))  # noqa: B905 (fewer requests after a failure)
        _worker("finish").submit(_complete, fut, parts, error, src, host, after, result)

    _worker("issue").submit(issue)
    return fut


def landed(
    req: Any,
    src: torch.Tensor,
    host: torch.Tensor,
    *,
    after: Callable[[], None] | None = None,
    result: torch.Tensor | None = None,
) -> torch.futures.Future:
    """The future of ``req``, whose completion leaves src's result in ``host``: copied into
    ``src`` as ``staged`` does (the callback runs on the thread that completes req)."""
    fut = _future(src)
    parts = [((0, src.numel()), req)]
    req.add_done_callback(lambda _: _complete(fut, parts, None, src, host, after, result))
    return fut


def _future(src: torch.Tensor) -> torch.futures.Future:
    return torch.futures.Future(devices=[src.device]) if src.is_cuda else torch.futures.Future()


def _complete(fut, parts, error, src, host, after, result) -> None:
    """Wait for every part's request (even after a failure), copying each part back into src
    as soon as it is done; then ``after()`` and the future's result (or the first error)."""
    done = src if result is None else result
    try:
        for (lo, hi), req in parts:
            try:
                req.wait()
            except BaseException as exc:
                error = error or exc
            if error is None:
                _copy_back(src[lo:hi], host[lo:hi])
        if error is not None:
            raise error
        if done is not src:
            with _on_copy_back(src):
                done.copy_(src)
        if after is not None:
            after()
        with _on_copy_back(src):
            fut.set_result(done)  # a CUDA future records an event on this stream for the waiters
    except BaseException as exc:
        fut.set_exception(exc)


def _copy_out(src: torch.Tensor, host: torch.Tensor, segments) -> list[torch.cuda.Event]:
    """Queue every segment's device-to-host copy; one event per segment marks its landing."""
    d2h, _ = _side_streams(src.device)
    d2h.wait_stream(torch.cuda.current_stream(src.device))  # after the gradients are written
    events = []
    with torch.cuda.stream(d2h):
        src.record_stream(d2h)
        for lo, hi in segments:
            host[lo:hi].copy_(src[lo:hi], non_blocking=True)
            ev = torch.cuda.Event()
            ev.record(d2h)
            events.append(ev)
    return events


def _on_copy_back(src: torch.Tensor) -> contextlib.AbstractContextManager:
    """The host-to-device stream of src's device (after its compression stream), or nothing."""
    if not src.is_cuda:
        return contextlib.nullcontext()
    h2d = _side_streams(src.device)[1]
    h2d.wait_stream(side_stream(src.device))  # the device codecs have read src
    stack = contextlib.ExitStack()
    stack.enter_context(torch.cuda.device(src.device))
    stack.enter_context(torch.cuda.stream(h2d))
    return stack


def _copy_back(part: torch.Tensor, host: torch.Tensor) -> None:
    """Queue the copy of a finished part's result into the device (a plain copy on the CPU)."""
    with _on_copy_back(part):
        if part.is_cuda:
            part.record_stream(torch.cuda.current_stream())
        part.copy_(host, non_blocking=True)


def allreduce_bucket(
    state: Any, bucket: dist.GradBucket, flat: torch.Tensor, spec: pycomm.CodecSpec,
    compress: bool,
) -> torch.futures.Future[torch.Tensor]:  # fmt: skip
    """``hooks._allreduce_bucket`` for a bucket that is not on the CPU (or any, ``staged``),
    once the hook has decided: ``flat`` is the bucket as it travels (float32 or float64),
    ``spec`` its codec, ``compress`` whether the hook's codec applies to it (its residual
    too). A float32 bucket that a device codec compresses goes as frames (``device_source``);
    any other is staged whole, segment by segment."""
    buf = bucket.buffer()
    n = flat.numel()
    host = _mirror(state, bucket.index(), flat)
    x = host.numpy()
    device = compress and device_codec(spec, flat)
    like = flat if device else x
    residual = state.residual_for(bucket, like) if compress and state.error_feedback else None
    kw = {"op": "mean", "stats": state.stats}

    def after() -> None:
        if not all_finite(x):
            state.stats.nonfinite += 1
            if residual is not None:
                _forget(residual, source if device else None)

    if device:
        worker = None if residual is None else residual.worker
        source = DeviceSource(flat, worker, _scratch(state, flat))
        kw["residual"] = residual  # its server residuals; the source holds the worker's
        req = pycomm.iallreduce(
            x, state.communicator(), spec, out=x, source=source, segment=SEGMENT_COUNT, **kw
        )
        return landed(req, flat, host, after=after, result=buf)

    def start(lo: int, hi: int) -> pycomm.Request:
        res = None if residual is None else residual.part(lo, hi)
        out = x[lo:hi]
        return pycomm.iallreduce(
            out, state.communicator(), spec, out=out, residual=res, segment=hi - lo, **kw
        )

    segments = chunk_bounds(n, -(-n // SEGMENT_COUNT)) if n else []
    return staged(flat, host, segments, start, after=after, result=buf)


def _forget(feedback: pycomm.ErrorFeedback, source: DeviceSource | None) -> None:
    """Empty a bucket's error feedback; a device residual is zeroed on the source's stream."""
    if source is None:
        feedback.reset()
        return
    source.zero_residual()
    for r in feedback.server.values():
        r.fill(0)


def _mirror(state: Any, index: int, flat: torch.Tensor) -> torch.Tensor:
    """The bucket's pinned host mirror, kept in the hook state across steps."""
    cache = state.staging
    host = cache.get(index)
    if host is None or host.numel() != flat.numel() or host.dtype != flat.dtype:
        host = cache[index] = pinned_like(flat)
    return host


def _scratch(state: Any, flat: torch.Tensor) -> torch.Tensor:
    """A pinned buffer that carries one segment's payload to the host, kept in the state."""
    need = 4 * min(flat.numel(), SEGMENT_COUNT) + 64
    host = state.staging.get("scratch")
    if host is None or host.numel() < need:
        host = torch.empty(need, dtype=torch.uint8, pin_memory=flat.is_cuda)
        state.staging["scratch"] = host
    return host
