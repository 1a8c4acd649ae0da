"""The progress bar (rank 0 only): loss, step time and where it went."""

from __future__ import annotations

from typing import Any


class Progress:
    """A tqdm bar over the steps (of every run at once); does nothing when disabled."""

    def __init__(self, steps: int, enabled: bool) -> None:
        self._bar: Any = None
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(total=steps, desc="train", unit="step", dynamic_ncols=True)

    def update(self, records: list, step: int) -> None:
        """Per run: last training loss, step time, communication and codec share, validation."""
        if self._bar is None:
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
        self._bar.set_postfix(post, refresh=False)
        if self._bar.n < step + 1:
            self._bar.update(step + 1 - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
