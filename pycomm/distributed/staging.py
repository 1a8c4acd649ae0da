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

``allreduce_bucket`` is the device side of ``pycomm.distributed.hooks``: the bucket is averaged
through the host collectives (``pycomm.iallreduce``) one hook segment at a time, each segment
exactly as the CPU hook's own pipeline cuts it, so quantizer frames equal the CPU hook's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch
import torch.distributed as dist

import pycomm
from pycomm.collectives.buffers import chunk_bounds

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
    cuda = src.is_cuda
    fut = torch.futures.Future(devices=[src.device]) if cuda else torch.futures.Future()
    done = src if result is None else result
    landed = _copy_out(src, host, segments) if cuda else None

    def issue() -> None:
        requests, error = [], None
        try:
            for k, (lo, hi) in enumerate(segments):
                if landed is not None:
                    landed[k].synchronize()
                else:
                    host[lo:hi].copy_(src[lo:hi])
                requests.append(start(lo, hi))
        except BaseException as exc:  # the requests already started still run to the end
            error = exc
        _worker("finish").submit(finish, requests, error)

    def finish(requests: list, error: BaseException | None) -> None:
        try:
            for req in requests:  # all of them, even after a failure
                try:
                    req.wait()
                except BaseException as exc:
                    error = error or exc
            if error is not None:
                raise error
            if cuda:
                _copy_back(src, host, segments, done)
            else:
                src.copy_(host)
                if done is not src:
                    done.copy_(src)
            if after is not None:
                after()
            if cuda:
                with torch.cuda.stream(_side_streams(src.device)[1]):
                    fut.set_result(done)  # records an event on this stream for the waiters
            else:
                fut.set_result(done)
        except BaseException as exc:
            fut.set_exception(exc)

    _worker("issue").submit(issue)
    return fut


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


def _copy_back(src: torch.Tensor, host: torch.Tensor, segments, done: torch.Tensor) -> None:
    """Queue the host-to-device copies (the requests have finished: host holds the results)."""
    _, h2d = _side_streams(src.device)
    with torch.cuda.device(src.device), torch.cuda.stream(h2d):
        src.record_stream(h2d)
        for lo, hi in segments:
            src[lo:hi].copy_(host[lo:hi], non_blocking=True)
        if done is not src:
            done.copy_(src)


def allreduce_bucket(
    state: Any, bucket: dist.GradBucket, compress: bool
) -> torch.futures.Future[torch.Tensor]:
    """``hooks._allreduce_bucket`` for a bucket that is not on the CPU (or is, when called
    directly: the tests do)."""
    from pycomm.distributed import hooks  # hooks imports this module lazily, not at the top

    buf = bucket.buffer()
    flat = buf if buf.dtype in hooks.WIDE else buf.float()  # fp16 and bf16 travel widened
    n = flat.numel()
    compress = (
        compress and state.iteration >= state.start_compress_step and n >= state.min_compress_numel
    )
    spec = state.codec if compress else pycomm.CodecSpec()
    host = _mirror(state, bucket.index(), flat)
    x = host.numpy()
    residual = state.residual_for(bucket, x.dtype) if compress and state.error_feedback else None
    comm = state.communicator()

    def start(lo: int, hi: int) -> pycomm.Request:
        res = None if residual is None else residual[lo:hi]
        out = x[lo:hi]
        return pycomm.iallreduce(
            out, comm, spec, out=out, op="mean", residual=res, stats=state.stats, segment=hi - lo
        )

    def after() -> None:
        if not hooks._all_finite(x):
            state.stats.nonfinite += 1
            if residual is not None:
                residual.fill(0)

    segments = chunk_bounds(n, -(-n // hooks.SEGMENT_COUNT)) if n else []
    fut = staged(flat, host, segments, start, after=after, result=buf)
    if bucket.is_last():
        state.iteration += 1
    return fut


def _mirror(state: Any, index: int, flat: torch.Tensor) -> torch.Tensor:
    """The bucket's pinned host mirror, kept in the hook state across steps."""
    cache = state.staging
    host = cache.get(index)
    if host is None or host.numel() != flat.numel() or host.dtype != flat.dtype:
        host = cache[index] = pinned_like(flat)
    return host
