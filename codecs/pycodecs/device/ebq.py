"""ebq's fast level on the device (float32, predictor none): the frame ``pycodecs.compress``
makes, byte for byte.

The device decides every element (index or outlier), writes the zigzag indices, the width
bytes and the packed blocks; the host receives those, plus the outliers' positions and values
(LEB128 records are written here), and writes the sub-header, the header and the checksums.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import torch

from pycodecs._params import bound_value
from pycodecs.device import _ebq_kernels as K
from pycodecs.device._frame import header_bytes
from pycodecs.device._tensors import check_tensor

MAX_EB = 2.0**1022  # larger bounds are lowered (codecs/FORMAT.md)
FLT_MAX = float(np.finfo(np.float32).max)
_G = 32  # blocks of 32 per program (quantize)
_G_PACK = 4  # blocks per program (pack: one lane per word)
MAX_WIDTH = 25  # zigzag of |q| < 2^24: at most 25 bits, so 25 words per block


def grid(v: torch.Tensor, error_bound: float, mode: str) -> tuple[float, float]:
    """(eb, step) as ebq_make_grid: REL resolved over the finite values of v."""
    eb = bound_value("ebq", error_bound)
    if mode not in ("abs", "rel"):
        raise ValueError(f"mode must be 'abs' or 'rel'; got {mode!r}")
    if mode == "rel":
        finite = v[torch.isfinite(v)]
        mn, mx = (float(finite.min()), float(finite.max())) if finite.numel() else (0.0, 0.0)
        eb *= mx - mn if finite.numel() else 0.0
        if not eb > 0:  # constant data or nothing finite: exact values only
            return 0.0, abs(mn) if abs(mn) > 0 else 1.0
    eb = min(eb, MAX_EB)
    return eb, 2.0 * eb


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


@dataclass(frozen=True)
class EbqPayload:
    """ebq's payload on the device, not yet a frame (``to_frame`` makes it one)."""

    count: int
    eb: float
    step: float
    widths: torch.Tensor  # uint8, one per block of 32
    words: torch.Tensor  # int32: the packed blocks at their word offsets (room for the worst)
    outlier: torch.Tensor  # int8, 1 at outliers
    raw: torch.Tensor  # int32: v's bits, at outliers only


def encode(
    x: torch.Tensor,
    *,
    error_bound: float,
    mode: str = "abs",
    residual: torch.Tensor | None = None,
) -> EbqPayload:
    """The payload of x (+ residual, which becomes v - decoded, 0 at outliers) on x's
    device: two kernels and a scan, no wait for the device (except REL's range)."""
    xs = check_tensor(x, "x")
    rs = None if residual is None else check_tensor(residual, "residual", x)
    n = xs.numel()
    v = xs if rs is None or mode == "abs" else xs + rs  # REL's range: NaN bits do not matter
    eb, step = grid(v, error_bound, mode)
    inv_d = 1.0 / step
    inv_f = FLT_MAX if inv_d > FLT_MAX else float(np.float32(inv_d))
    nb, dev = -(-n // 32), xs.device
    z = torch.empty(nb * 32, dtype=torch.int32, device=dev)
    w = torch.empty(nb, dtype=torch.uint8, device=dev)
    mark = torch.empty(n, dtype=torch.int8, device=dev)
    raw = torch.empty(n, dtype=torch.int32, device=dev)
    words = torch.empty(max(nb * MAX_WIDTH, 1), dtype=torch.int32, device=dev)
    if n:
        params = torch.tensor([step, eb, inv_f], dtype=torch.float64).to(dev, non_blocking=True)
        opts = {"enable_fp_fusion": False, "num_warps": 4}
        K._ebq_quantize[(-(-nb // _G),)](
            xs, rs if rs is not None else xs, params, z, w, mark, raw, n, nb,
            HAS_RES=rs is not None, G=_G, **opts,
        )  # fmt: skip
        ends = torch.cumsum(w, 0, dtype=torch.int64)
        g = _G_PACK if xs.is_cuda else 64  # the interpreter pays per program
        K._ebq_pack[(-(-nb // g),)](z, w, ends - w, words, nb, G=g, **opts)
    return EbqPayload(n, eb, step, w, words, mark, raw)


def to_frame(enc: EbqPayload, *, checksum: bool = False) -> bytearray:
    """The frame: the widths, the packed words and the outliers copied to the host, where the
    outlier records, the sub-header, the header and the checksums are written."""
    widths = enc.widths.cpu().numpy()
    total = int(widths.sum(dtype=np.int64))
    packed = enc.words[:total].cpu().numpy().tobytes()
    where = torch.nonzero(enc.outlier).flatten()
    pos = where.cpu().numpy()
    vals = enc.raw[where].cpu().numpy().view(np.uint32)
    records = bytearray()
    prev = -1
    for p, val in zip(pos.tolist(), vals.tolist(), strict=True):
        records += _varint(p - prev - 1) + struct.pack("<I", val)
        prev = p
    payload = struct.pack("<QQ", len(pos), len(packed)) + widths.tobytes() + packed + records
    nonfinite = bool(np.any((vals & 0x7F800000) == 0x7F800000))
    head = header_bytes(
        "ebq",
        enc.count,
        payload,
        block=32,
        aux=0,
        nonfinite=nonfinite,
        checksum=checksum,
        bound=enc.eb,
        param=enc.step,
    )
    return bytearray(head + payload)


def compress(
    x: torch.Tensor,
    *,
    error_bound: float,
    mode: str = "abs",
    residual: torch.Tensor | None = None,
    checksum: bool = False,
) -> bytearray:
    """One ebq fast-level frame of x (+ residual, which becomes v - decoded, 0 at outliers)."""
    enc = encode(x, error_bound=error_bound, mode=mode, residual=residual)
    return to_frame(enc, checksum=checksum)


__all__ = ["EbqPayload", "compress", "encode", "grid", "to_frame"]
