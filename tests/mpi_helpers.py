"""Helpers for the scripts that tests run under mpiexec (``mpi_launch`` puts this folder on
their path)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator


@contextlib.contextmanager
def slowed(module: object, name: str, seconds: float = 0.02) -> Iterator[None]:
    """module.name made ``seconds`` slower a call (an emulated slow path), restored after."""
    real = getattr(module, name)

    def slow(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        time.sleep(seconds)
        return real(*args, **kwargs)

    setattr(module, name, slow)
    try:
        yield
    finally:
        setattr(module, name, real)
