"""The argument check every device codec makes of its tensors."""

from __future__ import annotations

import torch


def check_tensor(t: object, what: str, like: torch.Tensor | None = None) -> torch.Tensor:
    """t as a flat float32 view, contiguous, of like's count and device where like is given."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor; got {type(t).__name__}")
    if t.dtype != torch.float32:
        raise TypeError(f"{what} must be float32 on the device path; got {t.dtype}")
    if not t.is_contiguous():
        raise ValueError(f"{what} must be contiguous")
    if like is not None and (t.numel() != like.numel() or t.device != like.device):
        raise ValueError(f"{what} must have x's element count and device")
    return t.reshape(-1)
