"""Device codecs: the quantizers as Triton kernels on torch tensors, same bytes as the C codecs.

    from pycodecs import device
    frame = device.compress(grad_on_gpu, "int8", residual=res_on_gpu)   # error feedback fused
    pycodecs.decompress(frame)                                           # the C decoder reads it

fp16, bf16, int8, int4 and sign over float32 tensors (rounding "nearest"), and ebq's fast level
(predictor none, ``pycodecs.device.ebq``): the kernel writes the
payload on the tensor's device, one copy brings it (and a 4-byte flags word) to the host, and
the 64-byte header with its CRC-32C checksums is written there, so a frame made here equals
``pycodecs.compress`` / ``compress_ef`` of the same values byte for byte. The kernels run on
CUDA tensors, or on CPU tensors under Triton's interpreter (``TRITON_INTERPRET=1`` set before
triton is imported: slow, for tests). Importing ``pycodecs`` imports neither torch nor triton;
this subpackage imports both.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from pycodecs.device import _kernels
from pycodecs.device._frame import header_bytes
from pycodecs.device._tensors import check_tensor

CODECS = ("fp16", "bf16", "int8", "int4", "sign")
BLOCK_DEFAULT = 256
#: Launch shape per codec: elements and warps per program. The fastest of bench/device_bench.py
#: --tune on an H200 (BENCHMARKS.md): larger tiles lose up to 2.7x on int8 and int4.
TUNING = {
    "fp16": {"tile": 1024, "num_warps": 4},
    "bf16": {"tile": 1024, "num_warps": 4},
    "int8": {"tile": 1024, "num_warps": 4},
    "int4": {"tile": 1024, "num_warps": 4},
    "sign": {"tile": 2048, "num_warps": 4},
}
_FLAG_SATURATED, _FLAG_NONFINITE = 1, 2

__all__ = ["CODECS", "DeviceFrame", "compress", "encode", "payload_size", "to_frame"]


@dataclass(frozen=True)
class DeviceFrame:
    """A payload written on the device, not yet a frame: ``to_frame`` makes it one."""

    codec: str
    count: int
    block: int  # the header's block field (0 for fp16 and bf16)
    storage: torch.Tensor  # uint8: the payload, padding to 8 bytes, then the int32 flags word

    @property
    def payload(self) -> torch.Tensor:
        return self.storage[: payload_size(self.codec, self.count, self.block)]


def _block_of(codec: str, block_size: int) -> int:
    if isinstance(block_size, bool) or not isinstance(block_size, int):
        raise TypeError(f"block_size must be an integer; got {type(block_size).__name__}")
    if codec in ("fp16", "bf16"):
        if block_size:
            raise ValueError(f"codec {codec!r} takes no block_size; got {block_size}")
        return 0
    b = block_size or BLOCK_DEFAULT
    if not (8 <= b <= 65536 and b % 8 == 0):
        raise ValueError(f"block_size must be a multiple of 8 in [8, 65536]; got {block_size}")
    return b


def payload_size(codec: str, count: int, block: int) -> int:
    """Bytes of the payload (codecs/FORMAT.md, quantization codecs)."""
    if codec in ("fp16", "bf16"):
        return 2 * count
    nblocks = -(-count // block)
    codes = {"int8": count, "int4": (count + 1) // 2, "sign": (count + 7) // 8}[codec]
    return 4 * nblocks + codes


def encode(
    x: torch.Tensor,
    codec: str,
    *,
    residual: torch.Tensor | None = None,
    block_size: int = 0,
    rounding: str = "nearest",
) -> DeviceFrame:
    """Quantize x (plus residual, which becomes v - decoded) into a payload on x's device."""
    if codec not in CODECS:
        raise ValueError(f"codec must be one of {', '.join(map(repr, CODECS))}; got {codec!r}")
    if rounding != "nearest":
        raise NotImplementedError("the device codecs round to nearest only")
    block = _block_of(codec, block_size)
    xs = check_tensor(x, "x")
    rs = None if residual is None else check_tensor(residual, "residual", x)
    n = xs.numel()
    size = payload_size(codec, n, block)
    flags_at = -(-size // 16) * 16  # 16-byte aligned: one compilation for every size
    storage = torch.empty(flags_at + 16, dtype=torch.uint8, device=xs.device)
    flags = storage[flags_at : flags_at + 4].view(torch.int32)
    flags.zero_()
    if n:
        _launch(codec, xs, rs, storage, flags, n, block)
    return DeviceFrame(codec, n, block, storage)


def _launch(codec, xs, rs, storage, flags, n: int, block: int) -> None:
    has_res = rs is not None
    r = rs if has_res else xs  # never read without HAS_RES
    tile = TUNING[codec]["tile"]
    opts = {"enable_fp_fusion": False, "num_warps": TUNING[codec]["num_warps"]}
    if codec in ("fp16", "bf16"):
        grid = (-(-n // tile),)
        _kernels._half_kernel[grid](
            xs, r, storage.view(torch.int16)[: n], flags, n,
            FP16=codec == "fp16", HAS_RES=has_res, BLOCK=tile, **opts,
        )  # fmt: skip
        return
    nblocks = -(-n // block)
    padded = 1 << (block - 1).bit_length()
    g = max(1, tile // padded)
    grid = (-(-nblocks // g),)
    if codec == "sign":
        _kernels._sign_kernel[grid](
            xs, r, storage, flags, n, nblocks, block,
            HAS_RES=has_res, G=g, BY=padded // 8, **opts,
        )  # fmt: skip
    else:
        bits = 8 if codec == "int8" else 4
        _kernels._int_kernel[grid](
            xs, r, storage, flags, n, nblocks, block,
            BITS=bits, LEVELS=127 if bits == 8 else 7, HAS_RES=has_res, G=g, HP=padded // 2,
            **opts,
        )  # fmt: skip


def to_frame(
    enc: DeviceFrame, *, checksum: bool = False, host: torch.Tensor | None = None
) -> bytearray:
    """The frame: one device-to-host copy of the payload (into ``host``, a CPU uint8 tensor of
    at least ``enc.storage``'s size, pinned for speed, when given), then the header."""
    n = enc.storage.numel()
    if host is None:
        staged = enc.storage.cpu()
    else:
        staged = host.reshape(-1)[:n]
        staged.copy_(enc.storage)
    raw = staged.numpy()
    size = payload_size(enc.codec, enc.count, enc.block)
    flags = int.from_bytes(raw[n - 16 : n - 12].tobytes(), "little")
    payload = memoryview(raw)[:size]
    aux = flags & _FLAG_SATURATED if enc.codec in ("fp16", "bf16") else 0
    head = header_bytes(
        enc.codec,
        enc.count,
        payload,
        block=enc.block,
        aux=aux,
        nonfinite=bool(flags & _FLAG_NONFINITE),
        checksum=checksum,
    )
    frame = bytearray(head)
    frame += payload
    return frame


def compress(
    x: torch.Tensor,
    codec: str,
    *,
    residual: torch.Tensor | None = None,
    block_size: int = 0,
    rounding: str = "nearest",
    checksum: bool = False,
    error_bound: float | None = None,
    mode: str = "abs",
) -> bytearray:
    """One frame of x (with error feedback when residual is given), as pycodecs.compress.

    codec "ebq" (fast level, predictor none) takes error_bound and mode ("abs" or "rel")."""
    if codec == "ebq":
        if block_size not in (0, 32) or rounding != "nearest":
            raise ValueError("ebq takes no block_size (its blocks are 32) and rounds to nearest")
        from pycodecs.device import ebq

        return ebq.compress(
            x, error_bound=error_bound, mode=mode, residual=residual, checksum=checksum
        )
    if error_bound is not None or mode != "abs":
        raise ValueError(f"codec {codec!r} takes no error_bound or mode")
    enc = encode(x, codec, residual=residual, block_size=block_size, rounding=rounding)
    return to_frame(enc, checksum=checksum)
