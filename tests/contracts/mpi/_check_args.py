"""The bad arguments of ``check_arguments``: what each one is, where it goes, and whether it is
invalid (raise there, PeerArgumentError elsewhere) or different settings (SettingsMismatchError
everywhere)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


def _readonly(n: int, dtype=np.float32) -> np.ndarray:
    a = np.zeros(n, dtype)
    a.flags.writeable = False
    return a


@dataclass(frozen=True)
class Bad:
    name: str
    where: str  # x, out, residual or stats
    make: Callable[[np.ndarray, int, int], object]  # (good x, out's size, ranks) -> the argument
    invalid: bool = True  # else: settings that differ
    differ_in: tuple[str, ...] = ()  # collectives that take it, as different settings

    def is_invalid(self, what: str) -> bool:
        return self.invalid and what not in self.differ_in

    def applies(self, what: str) -> bool:
        if what == "bcast":
            return self.where in ("x", "stats")
        if what == "allgather":
            return self.where in ("x", "out", "stats")
        return True

    def apply(self, args: dict, what: str, n: int, ranks: int) -> dict:
        size = {"allreduce": n, "reduce_scatter": n // ranks, "allgather": n * ranks}.get(what, n)
        args = dict(args)
        args[self.where] = self.make(args["x"], size if self.where == "out" else n, ranks)
        return args


BAD = [
    Bad("non-contiguous x", "x", lambda x, n, r: np.repeat(x, 2)[::2]),
    Bad("integer x", "x", lambda x, n, r: x.astype(np.int32), differ_in=("allgather", "bcast")),
    Bad("foreign x", "x", lambda x, n, r: "not an array"),
    Bad("x of another size", "x", lambda x, n, r: x[: n - r], invalid=False),
    Bad("x of another dtype", "x", lambda x, n, r: x.astype(np.float64), invalid=False),
    Bad("read-only out", "out", lambda x, n, r: _readonly(n)),
    Bad("out of the wrong size", "out", lambda x, n, r: np.zeros(n + 1, np.float32)),
    Bad("out of the wrong dtype", "out", lambda x, n, r: np.zeros(n, np.float64)),
    Bad("non-contiguous out", "out", lambda x, n, r: np.zeros(2 * n, np.float32)[::2]),
    Bad("foreign out", "out", lambda x, n, r: object()),
    Bad("residual of the wrong size", "residual", lambda x, n, r: np.zeros(n + 1, np.float32)),
    Bad("foreign residual", "residual", lambda x, n, r: "residual"),
    Bad("read-only residual", "residual", lambda x, n, r: _readonly(n)),
    Bad("stats a dict", "stats", lambda x, n, r: {}),
]
