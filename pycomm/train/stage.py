"""One pipeline stage's part of the GPT, tensor-parallel inside, cut from the full weights."""

from __future__ import annotations

import torch
from torch import nn

from pycomm.train.model import Block, Embedding, Head, ModelConfig, init_parameters
from pycomm.train.tensor_parallel import ParallelBlock, TensorParallel


def stage_layers(layers: int, stages: int, stage: int) -> range:
    """The decoder layers of ``stage`` (contiguous; sizes differ by at most one)."""
    if layers < stages:
        raise ValueError(f"--layers {layers} cannot fill --pp {stages} pipeline stages")
    base, extra = divmod(layers, stages)
    start = stage * base + min(stage, extra)
    return range(start, start + base + (1 if stage < extra else 0))


class PipelineStage(nn.Module):
    """Embedding (first stage), this stage's blocks, head (last stage).

    ``forward`` takes byte tokens on the first stage and hidden states elsewhere; it returns
    logits on the last stage and hidden states elsewhere. Parameter names are the full model's
    (``embed.*``, ``blocks.<i>.*``, ``head.*``), so shards can be matched to the reference.
    """

    def __init__(
        self, cfg: ModelConfig, stage: int, stages: int, tp: TensorParallel, seed: int = 0
    ) -> None:
        super().__init__()
        self.cfg, self.stage, self.stages = cfg, stage, stages
        self.layers = stage_layers(cfg.layers, stages, stage)
        self.embed = _full(Embedding(cfg), cfg, seed, "embed.") if self.is_first else None
        self.blocks = nn.ModuleDict(
            {
                str(i): ParallelBlock.from_full(
                    _full(Block(cfg), cfg, seed, f"blocks.{i}."), cfg, tp
                )
                for i in self.layers
            }
        )
        self.head = _full(Head(cfg), cfg, seed, "head.") if self.is_last else None

    @property
    def is_first(self) -> bool:
        return self.stage == 0

    @property
    def is_last(self) -> bool:
        return self.stage == self.stages - 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.embed is not None:
            x = self.embed(x)
        for block in self.blocks.values():
            x = block(x)
        if self.head is not None:
            x = self.head(x)
        return x


def _full(module: nn.Module, cfg: ModelConfig, seed: int, prefix: str) -> nn.Module:
    init_parameters(module, cfg, seed, prefix)
    return module
