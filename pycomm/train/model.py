"""The single-process GPT: the reference the parallel stages are cut from and checked against.

A pre-LayerNorm decoder over bytes (vocabulary 256) with learned positions and an untied head.
Every parameter is initialised from its own name and the seed (``init_parameters``), so any rank
can build any layer's full weights alone and keep its shard: no weight broadcast is needed, and
a test can build the same model in one process.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

VOCAB = 256


@dataclass(frozen=True)
class ModelConfig:
    """Shape of the decoder; the MLP is ``mlp_ratio`` times wider than the residual stream."""

    layers: int = 4
    width: int = 128
    heads: int = 4
    seq: int = 64
    mlp_ratio: int = 4

    def __post_init__(self) -> None:
        for name in ("layers", "width", "heads", "seq", "mlp_ratio"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1")
        if self.width % self.heads:
            raise ValueError(f"--width {self.width} is not a multiple of --heads {self.heads}")

    @property
    def head_dim(self) -> int:
        return self.width // self.heads

    @property
    def mlp_width(self) -> int:
        return self.mlp_ratio * self.width


class Attention(nn.Module):
    """Causal multi-head self-attention; ``qkv`` rows are [q; k; v], each head-major."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.heads = cfg.heads
        self.qkv = nn.Linear(cfg.width, 3 * cfg.width)
        self.proj = nn.Linear(cfg.width, cfg.width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(causal_attention(self.qkv(x), self.heads))


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.fc = nn.Linear(cfg.width, cfg.mlp_width)
        self.proj = nn.Linear(cfg.mlp_width, cfg.width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.width)
        self.attn = Attention(cfg)
        self.ln2 = nn.LayerNorm(cfg.width)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Embedding(nn.Module):
    """Byte and position embeddings (the first pipeline stage's input layer)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, cfg.width)
        self.positions = nn.Embedding(cfg.seq, cfg.width)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(tokens.shape[-1], device=tokens.device)
        return self.tokens(tokens) + self.positions(pos)


class Head(nn.Module):
    """Final LayerNorm and the byte logits (the last pipeline stage's output layer)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(cfg.width)
        self.out = nn.Linear(cfg.width, VOCAB, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.ln(x))


class GPT(nn.Module):
    """The whole model in one process (parameter names match the pipeline stages')."""

    def __init__(self, cfg: ModelConfig, seed: int = 0) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = Embedding(cfg)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.head = Head(cfg)
        init_parameters(self, cfg, seed)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def causal_attention(qkv: torch.Tensor, heads: int) -> torch.Tensor:
    """Attention over ``heads`` heads of a (batch, seq, 3 * heads * dim) projection."""
    b, s, three_hd = qkv.shape
    q, k, v = qkv.view(b, s, 3, heads, three_hd // (3 * heads)).permute(2, 0, 3, 1, 4)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return y.transpose(1, 2).reshape(b, s, three_hd // 3)


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over every position (nats per byte)."""
    return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def init_parameters(module: nn.Module, cfg: ModelConfig, seed: int, prefix: str = "") -> None:
    """Fill every parameter from its full name (``prefix`` + local name) and the seed.

    Weights ~ N(0, 0.02), residual projections scaled by 1/sqrt(2 * layers) (GPT-2), biases
    zero, LayerNorm scales one.
    """
    with torch.no_grad():
        for name, p in module.named_parameters():
            full = prefix + name
            if full.endswith("bias"):
                p.zero_()
            elif ".ln" in full or full.startswith("ln"):
                p.fill_(1.0)
            else:
                std = 0.02 / math.sqrt(2 * cfg.layers) if full.endswith("proj.weight") else 0.02
                gen = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(full.encode()))
                p.copy_(torch.randn(p.shape, generator=gen) * std)
