"""Byte-level text: the Python standard library's own sources (no download) or a user file.

The default corpus is the ``.py`` files under ``sysconfig``'s stdlib directory (site- and
dist-packages left out), in sorted path order, until nine tenths of ``limit_bytes`` train and
one tenth validates. A file validates when the CRC-32 of its relative path is 0 mod 10, so a
file never changes sides. A user file is split by position: its last tenth validates.

Batches are windows of ``seq + 1`` bytes drawn by a generator seeded from (seed, step), the
same on every rank; each rank keeps its data-parallel slice.
"""

from __future__ import annotations

import sysconfig
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

VALIDATION_EVERY = 10  #: one file (or tenth) in this many validates
SKIPPED_DIRS = ("site-packages", "dist-packages", "__pycache__")


@dataclass
class Corpus:
    train: np.ndarray  #: uint8 bytes
    validation: np.ndarray
    source: str  #: where the bytes came from, for the report

    def describe(self) -> str:
        return (
            f"{self.source}: {self.train.size / 1e6:.1f} MB train, "
            f"{self.validation.size / 1e6:.2f} MB validation"
        )


def stdlib_sources(limit_bytes: int) -> Corpus:
    """The standard library's .py sources, deterministic order and split."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(
        p
        for p in root.rglob("*.py")
        if not any(part in SKIPPED_DIRS for part in p.relative_to(root).parts)
    )
    parts: tuple[list[bytes], list[bytes]] = ([], [])
    budgets = [limit_bytes - limit_bytes // VALIDATION_EVERY, limit_bytes // VALIDATION_EVERY]
    for path in files:
        if max(budgets) <= 0:
            break
        rel = path.relative_to(root).as_posix()
        which = int(zlib.crc32(rel.encode()) % VALIDATION_EVERY == 0)
        if budgets[which] <= 0:
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        parts[which].append(data)
        budgets[which] -= len(data)
    train, validation = parts
    if not train or not validation:
        raise FileNotFoundError(
            f"too few Python sources under {root} (a stripped install?): pass --data FILE"
        )
    return Corpus(_join(train), _join(validation), f"Python {root.name} stdlib sources")


def user_file(path: str | Path, limit_bytes: int) -> Corpus:
    """A file's bytes (at most ``limit_bytes``); the last tenth is the validation split."""
    data = np.fromfile(path, dtype=np.uint8, count=limit_bytes)
    cut = data.size - data.size // VALIDATION_EVERY
    return Corpus(data[:cut].copy(), data[cut:].copy(), str(path))


def load_corpus(path: str | None, limit_mb: float) -> Corpus:
    limit = int(limit_mb * 1e6)
    return stdlib_sources(limit) if path is None else user_file(path, limit)


def check_corpus(corpus: Corpus, seq: int) -> None:
    for name, part in (("training", corpus.train), ("validation", corpus.validation)):
        if part.size < seq + 2:
            raise ValueError(
                f"the {name} split of {corpus.source} has {part.size} bytes, "
                f"fewer than --seq {seq} + 2"
            )


def _join(chunks: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"\n".join(chunks), dtype=np.uint8).copy()


def windows(data: np.ndarray, starts: np.ndarray, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and next-byte targets of the windows starting at ``starts``."""
    idx = starts[:, None] + np.arange(seq + 1)[None, :]
    chunk = torch.from_numpy(data[idx].astype(np.int64))
    return chunk[:, :-1], chunk[:, 1:]


def train_batch(
    corpus: Corpus, step: int, batch: int, seq: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The global batch of ``step`` (the same on every rank)."""
    rng = np.random.default_rng([seed, step])
    starts = rng.integers(0, corpus.train.size - seq - 1, size=batch)
    return windows(corpus.train, starts, seq)


def validation_batches(
    corpus: Corpus, count: int, batch: int, seq: int
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``count`` fixed global batches, evenly spaced over the validation split."""
    n = count * batch
    starts = np.linspace(0, corpus.validation.size - seq - 1, n).astype(np.int64)
    return [
        windows(corpus.validation, starts[i * batch : (i + 1) * batch], seq) for i in range(count)
    ]
