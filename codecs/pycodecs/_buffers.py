"""Zero-copy views of inputs and outputs: numpy arrays, CPU torch tensors, other buffers.

Everything becomes a flat uint8 numpy view for the binding, plus the element dtype's name.
torch is never imported here: a tensor's own methods and module are used.
"""

from __future__ import annotations

import sys

import numpy as np

from pycodecs._params import DTYPES, ITEMSIZE

NUMPY_NAMES = {
    np.dtype(np.float32): "float32",
    np.dtype(np.float64): "float64",
    np.dtype(np.float16): "float16",
}
# numpy has no bfloat16: decoded bfloat16 comes back as int16 bit patterns (like a torch
# bfloat16 tensor viewed as int16), and int16/uint16 arrays are read as bfloat16 on request.
NUMPY_DTYPES = {
    "float32": np.float32,
    "float64": np.float64,
    "float16": np.float16,
    "bfloat16": np.int16,
}
BF16_CARRIERS = (np.dtype(np.int16), np.dtype(np.uint16))


def is_tensor(x: object) -> bool:
    return type(x).__module__.split(".", 1)[0] == "torch" and hasattr(x, "data_ptr")


def as_array(x: object, what: str) -> tuple[np.ndarray, str | None]:
    """A numpy view of x sharing its memory, and "bfloat16" when x is a torch bfloat16 tensor."""
    if isinstance(x, np.ndarray):
        return x, None
    if is_tensor(x):
        if x.device.type != "cpu":
            raise ValueError(f"{what} must be a CPU tensor; got device {x.device}")
        if not x.is_contiguous():
            raise ValueError(f"{what} must be contiguous")
        x = x.detach()
        if str(x.dtype) == "torch.bfloat16":
            return x.view(sys.modules["torch"].int16).numpy(), "bfloat16"
        return x.numpy(), None
    try:
        view = memoryview(x)
    except TypeError:
        raise TypeError(
            f"{what} must be a numpy array, a CPU torch tensor or a buffer; got {type(x).__name__}"
        ) from None
    return np.asarray(view), None


def dtype_name(arr: np.ndarray, hint: str | None, dtype: str | None, what: str) -> str:
    """The element dtype of arr: its own, or dtype= for bfloat16 carriers and raw bytes."""
    if dtype is not None and dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {dtype!r}")
    name = hint or NUMPY_NAMES.get(arr.dtype)
    if name is None and arr.dtype.name == "bfloat16":  # ml_dtypes
        name = "bfloat16"
    if name is None and dtype is not None:
        if arr.dtype.itemsize == 1 or (dtype == "bfloat16" and arr.dtype in BF16_CARRIERS):
            return dtype
    if name is None:
        raise TypeError(
            f"{what} has dtype {arr.dtype}; expected float32, float64, float16 or bfloat16 "
            "(give dtype= for int16 bfloat16 bits or raw bytes)"
        )
    if dtype is not None and dtype != name:
        raise TypeError(f"{what} has dtype {name}, not {dtype}")
    return name


def byte_view(arr: np.ndarray, what: str, writable: bool = False) -> np.ndarray:
    if not arr.flags.c_contiguous:
        raise ValueError(f"{what} must be C-contiguous")
    if writable and not arr.flags.writeable:
        raise ValueError(f"{what} is read-only")
    return (arr if arr.ndim == 1 else arr.reshape(-1)).view(np.uint8)


def source(
    x: object, dtype: str | None = None, what: str = "x", writable: bool = False
) -> tuple[np.ndarray, str, int]:
    """(flat uint8 view, dtype name, element count) of an input array."""
    arr, hint = as_array(x, what)
    name = dtype_name(arr, hint, dtype, what)
    view = byte_view(arr, what, writable)
    size = ITEMSIZE[name]
    if view.nbytes % size:
        raise ValueError(f"{what}: {view.nbytes} bytes are not a whole number of {name}")
    return view, name, view.nbytes // size


def target(out: object, dtype: str, count: int, what: str = "out") -> np.ndarray:
    """Flat writable uint8 view of out, checked to hold exactly count elements of dtype."""
    arr, hint = as_array(out, what)
    if arr.dtype.itemsize == 1 and hint is None:
        view = byte_view(arr, what, writable=True)
        if view.nbytes != count * ITEMSIZE[dtype]:
            raise ValueError(
                f"{what} has {view.nbytes} bytes; the frame decodes to {count * ITEMSIZE[dtype]}"
            )
        return view
    dtype_name(arr, hint, dtype, what)
    if arr.size != count:
        raise ValueError(f"{what} has {arr.size} elements; the frame has {count}")
    return byte_view(arr, what, writable=True)


def bytes_of(buf: object, what: str, writable: bool = False) -> object:
    """Flat uint8 view of any contiguous buffer (frames, output byte buffers); bytearray
    (and bytes, when read only) pass as they are."""
    if type(buf) is bytearray or (type(buf) is bytes and not writable):
        return buf
    arr, _ = as_array(buf, what)
    return byte_view(arr, what, writable)


def int_array(x: object, dtype: type, what: str, writable: bool = False) -> np.ndarray:
    """Flat view of a contiguous integer array of exactly dtype."""
    arr, _ = as_array(x, what)
    if arr.dtype != np.dtype(dtype):
        raise TypeError(f"{what} must have dtype {np.dtype(dtype)}; got {arr.dtype}")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{what} must be C-contiguous")
    if writable and not arr.flags.writeable:
        raise ValueError(f"{what} is read-only")
    return arr.reshape(-1)
