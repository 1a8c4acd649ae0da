"""ebq's fast level on the device (float32, predictor none): the frame ``pycodecs.compress``
makes, byte for byte.

The device decides every element (index or outlier), writes the zigzag indices, the width
bytes and the packed blocks; the host receives those, plus the outliers' positions and values
(LEB128 records are written here), and writes the sub-header, the header and the checksums.
"""

from __future__ import annotations

import struct

import numpy as np
import torch

from pycodecs._params import bound_value
from pycodecs.device import _ebq_kernels as K
from pycodecs.device._frame import header_bytes

MAX_EB = 2.0**1022  # larger bounds are lowered (codecs/FORMAT.md)
FLT_MAX = float(np.finfo(np.float32).max)
_G = 32  # blocks of 32 per program


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


def compress(
    x: torch.Tensor,
    *,
    error_bound: float,
    mode: str = "abs",
    residual: torch.Tensor | None = None,
    checksum: bool = False,
) -> bytearray:
    """One ebq fast-level frame of x (+ residual, which becomes v - decoded, 0 at outliers)."""
    from pycodecs.device import _check_tensor  # the package imports this module lazily

    xs = _check_tensor(x, "x")
    rs = None if residual is None else _check_tensor(residual, "residual", x)
    n = xs.numel()
    v = xs if rs is None else xs + rs  # only for REL's min and max: NaN bits do not matter
    eb, step = grid(v, error_bound, mode)
    inv_d = 1.0 / step
    inv_f = FLT_MAX if inv_d > FLT_MAX else float(np.float32(inv_d))
    nb = -(-n // 32)
    widths = np.zeros(0, np.uint8)
    packed = b""
    pos = np.zeros(0, np.int64)
    vals = np.zeros(0, np.uint32)
    if n:
        dev = xs.device
        params = torch.tensor([step, eb, inv_f], dtype=torch.float64, device=dev)
        z = torch.empty(nb * 32, dtype=torch.int32, device=dev)
        w = torch.empty(nb, dtype=torch.uint8, device=dev)
        mark = torch.empty(n, dtype=torch.int8, device=dev)
        raw = torch.empty(n, dtype=torch.int32, device=dev)  # v's bits, at outliers only
        opts = {"enable_fp_fusion": False, "num_warps": 4}
        K._ebq_quantize[(-(-nb // _G),)](
            xs, rs if rs is not None else xs, params, z, w, mark, raw, n, nb,
            HAS_RES=rs is not None, G=_G, **opts,
        )  # fmt: skip
        words = w.to(torch.int64)
        offsets = torch.cumsum(words, 0) - words
        total = int(words.sum())
        out = torch.empty(max(total, 1), dtype=torch.int32, device=dev)
        g = 4 if xs.is_cuda else 64  # the interpreter pays per program, a GPU per register
        K._ebq_pack[(-(-nb // g),)](z, w, offsets, out, nb, G=g, **opts)
        where = torch.nonzero(mark).flatten()
        widths = w.cpu().numpy()
        packed = out[:total].cpu().numpy().tobytes()
        pos = where.cpu().numpy()
        vals = raw[where].cpu().numpy().view(np.uint32)
    records = bytearray()
    prev = -1
    for p, val in zip(pos.tolist(), vals.tolist(), strict=True):
        records += _varint(p - prev - 1) + struct.pack("<I", val)
        prev = p
    payload = struct.pack("<QQ", len(pos), len(packed)) + widths.tobytes() + packed + records
    nonfinite = bool(np.any((vals & 0x7F800000) == 0x7F800000))
    head = header_bytes(
        "ebq",
        n,
        payload,
        block=32,
        aux=0,
        nonfinite=nonfinite,
        checksum=checksum,
        bound=eb,
        param=step,
    )
    return bytearray(head + payload)


__all__ = ["compress", "grid"]
