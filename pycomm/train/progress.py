"""The progress bar (rank 0 only): loss, step time and where it went."""

from __future__ import annotations

from typing import Any


class Progress:
    """A tqdm bar over the steps of one run; does nothing when disabled."""

    def __init__(self, steps: int, name: str, enabled: bool) -> None:
        self._bar: Any = None
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(total=steps, desc=f"{name:>10}", unit="step", dynamic_ncols=True)

    def update(self, record: Any, step: int) -> None:
        if self._bar is None:
            return
        split = record.split[-1]
        elapsed = record.step_s[-1]
        comm = sum(v for k, v in split.items() if k.startswith("comm_"))
        post = {
            "loss": f"{record.train_loss[-1]:.3f}" if record.train_loss else "-",
            "ms": f"{1e3 * elapsed:.0f}",
            "comm": f"{100 * comm / elapsed:.0f}%",
            "codec": f"{100 * split['codec'] / elapsed:.0f}%",
        }
        if record.val:
            post["val"] = f"{record.val[-1][1]:.3f}"
        self._bar.set_postfix(post, refresh=False)
        if self._bar.n < step + 1:
            self._bar.update(step + 1 - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
