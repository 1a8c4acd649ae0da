"""The progress bar (rank 0 only): loss, step time and where it went.

tqdm is optional (the ``train`` extra): without it the job says so once on stderr and prints a
plain line every tenth of the steps instead of a bar.
"""

from __future__ import annotations

import sys
from typing import Any

NO_TQDM = "no progress bar: tqdm is not installed (pip install 'mpiucc[train]')"


class Progress:
    """A tqdm bar over the steps (of every run at once); does nothing when disabled."""

    def __init__(self, steps: int, enabled: bool) -> None:
        self._bar: Any = None
        self._steps, self._enabled = steps, enabled
        self._every = max(1, steps // 10)  # plain lines when tqdm is missing
        if not enabled:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            print(f"note: {NO_TQDM}", file=sys.stderr, flush=True)
            return
        self._bar = tqdm(total=steps, desc="train", unit="step", dynamic_ncols=True)

    def update(self, records: list, step: int) -> None:
        """Per run: last training loss, step time, communication and codec share, validation."""
        if not self._enabled:
            return
        if self._bar is None and (step + 1) % self._every and step + 1 != self._steps:
            return
        post = {}
        for record in records:
            split, elapsed = record.split[-1], record.step_s[-1]
            comm = sum(v for k, v in split.items() if k.startswith("comm_"))
            loss = f"{record.train_loss[-1]:.3f}" if record.train_loss else "-"
            val = f" val {record.val[-1][1]:.3f}" if record.val else ""
            post[record.name[:4]] = (
                f"{loss}{val} {1e3 * elapsed:.0f}ms comm {100 * comm / elapsed:.0f}% "
                f"codec {100 * split['codec'] / elapsed:.0f}%"
            )
        if self._bar is None:
            runs = ", ".join(f"{k}={v}" for k, v in post.items())
            print(f"train step {step + 1}/{self._steps}: {runs}", flush=True)
            return
        self._bar.set_postfix(post, refresh=False)
        if self._bar.n < step + 1:
            self._bar.update(step + 1 - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
