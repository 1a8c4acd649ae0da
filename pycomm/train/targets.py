"""Time to loss: the training seconds each run needs to reach the baseline's final validation
loss. A light module (no torch, no MPI): benches that only read metrics.json use it too."""

from __future__ import annotations

#: The target loss of the comparison: the baseline's final, plus this share.
TARGET_SLACK = 0.01


def target_loss(baseline: dict) -> float:
    """The validation loss every run is timed to: the baseline's final one, within
    ``TARGET_SLACK`` (a compressed run that ends 0.01% above it still counts)."""
    return baseline["final_val"] * (1 + TARGET_SLACK)


def time_to_loss(run: dict, target: float) -> float | None:
    """Training seconds until the validation loss first reaches target (linear between
    evaluations), or None if it never does."""
    prev_s, prev_loss = 0.0, None
    for _, loss, seconds in run["val"]:
        if loss <= target:
            if prev_loss is None or prev_loss == loss:
                return seconds
            frac = (prev_loss - target) / (prev_loss - loss)
            return prev_s + frac * (seconds - prev_s)
        prev_s, prev_loss = seconds, loss
    return None
