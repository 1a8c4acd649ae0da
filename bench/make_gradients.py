"""Real transformer gradients for the codec benches.

Trains a small byte-level GPT-style decoder (CPU, one thread) for a few hundred AdamW steps on
the Python standard library's own .py sources, then writes the flattened float32 gradient of one
more batch -- every parameter concatenated in registration order, as one DDP bucket would hold
it -- as raw little-endian float32. Optionally also writes the activations leaving one layer (the
tensor a pipeline stage would send) the same way. A JSON sidecar records the set-up and stats.

    python bench/make_gradients.py                      # bench/data/grads_gpt.f32 (+ acts)
    python bench/make_gradients.py --steps 20 --out /tmp/g.f32 --no-acts
    python bench/make_gradients.py --fresh              # bench/data/grads_gpt_fresh.f32

--fresh is the second gradient set: a freshly initialized GPT-2-like model (8 layers, width
512, 25 M parameters) and the gradient of its very first batch, with no training step: heavier
tails (max|g|/std in the hundreds) than the trained model's.

Deterministic for a given Python (its stdlib is the corpus) and torch version.
"""

from __future__ import annotations

import argparse
import json
import math
import sysconfig
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA_DIR = Path(__file__).resolve().parent / "data"


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.out = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    """Byte-level decoder: token + position embeddings, pre-LN blocks, tied output head."""

    def __init__(self, layers: int, width: int, heads: int, seq: int, vocab: int = 256) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(seq, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2's scaled init of residual projections
            if name.endswith(("proj.weight", "out.weight")):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers))

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx: torch.Tensor, tap: int = -1) -> tuple[torch.Tensor, torch.Tensor | None]:
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        tapped = None
        for i, block in enumerate(self.blocks):
            x = block(x)
            if i == tap:
                tapped = x.detach().clone()
        return self.ln_f(x) @ self.tok.weight.t(), tapped


def stdlib_corpus(max_bytes: int) -> tuple[torch.Tensor, int]:
    """Bytes of the stdlib's top-level .py files in sorted order, up to max_bytes."""
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))
    chunks, total = [], 0
    for f in files:
        data = f.read_bytes()
        chunks.append(data)
        total += len(data)
        if total >= max_bytes:
            break
    blob = b"".join(chunks)[:max_bytes]
    return torch.frombuffer(bytearray(blob), dtype=torch.uint8).long(), len(chunks)


def batch(data: torch.Tensor, b: int, seq: int, gen: torch.Generator) -> tuple:
    start = torch.randint(0, data.numel() - seq - 1, (b,), generator=gen)
    x = torch.stack([data[s : s + seq] for s in start.tolist()])
    y = torch.stack([data[s + 1 : s + seq + 1] for s in start.tolist()])
    return x, y


def stats(a: np.ndarray) -> dict:
    a64 = a.astype(np.float64)
    std = float(a64.std())
    amax = float(np.abs(a64).max()) if a.size else 0.0
    return {
        "n": int(a.size),
        "min": float(a64.min()),
        "max": float(a64.max()),
        "mean": float(a64.mean()),
        "std": std,
        "zero_fraction": float(np.count_nonzero(a == 0) / a.size),
        "absmax_over_std": amax / std if std else float("inf"),
    }


def write_f32(path: Path, t: torch.Tensor) -> np.ndarray:
    a = t.detach().to(torch.float32).contiguous().view(-1).numpy().astype("<f4", copy=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    a.tofile(path)
    return a


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DATA_DIR / "grads_gpt.f32")
    ap.add_argument("--acts", type=Path, default=DATA_DIR / "acts_gpt.f32")
    ap.add_argument("--no-acts", action="store_true", help="do not write activations")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corpus-bytes", type=int, default=4 << 20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--fresh", action="store_true", help="the fresh-model set (see above)")
    args = ap.parse_args(argv)
    if args.fresh:
        args.steps, args.layers, args.width, args.heads, args.no_acts = 0, 8, 512, 8, True
        if args.out == DATA_DIR / "grads_gpt.f32":
            args.out = DATA_DIR / "grads_gpt_fresh.f32"

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    data, n_files = stdlib_corpus(args.corpus_bytes)
    model = TinyGPT(args.layers, args.width, args.heads, args.seq)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"corpus: {data.numel()} bytes from {n_files} stdlib files; model: {n_params} params")

    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1, betas=(0.9, 0.95))
    warmup = max(1, args.steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    t0 = time.perf_counter()
    loss = torch.tensor(float("nan"))
    for step in range(args.steps):
        x, y = batch(data, args.batch, args.seq, gen)
        logits, _ = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 25 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss.item():.3f}  {time.perf_counter() - t0:6.1f} s")

    # One more batch: its raw (unclipped) gradient is what a DDP hook would be handed.
    x, y = batch(data, args.batch, args.seq, gen)
    tap = args.layers // 2 - 1
    logits, acts = model(x, tap=tap)
    final_loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))
    opt.zero_grad(set_to_none=True)
    final_loss.backward()
    flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    g = write_f32(args.out, flat)
    meta = {
        "what": "flattened float32 gradient of TinyGPT (parameters in registration order)",
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "params": n_params,
        "final_loss": final_loss.item(),
        "train_seconds": time.perf_counter() - t0,
        "torch": torch.__version__,
        "grads": stats(g),
    }
    report = [("grads", args.out, meta["grads"])]
    if not args.no_acts and acts is not None:
        a = write_f32(args.acts, acts)
        meta["acts"] = stats(a)
        meta["acts_layer"] = tap
        meta["acts_shape"] = list(acts.shape)
        report.append((f"acts (after block {tap})", args.acts, meta["acts"]))
    args.out.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n")

    print(f"final loss {final_loss.item():.3f}; {meta['train_seconds']:.1f} s in all")
    for label, path, s in report:
        print(
            f"{label}: {path}  n={s['n']}  min={s['min']:.4g}  max={s['max']:.4g}  "
            f"std={s['std']:.4g}  zeros={s['zero_fraction']:.4f}  "
            f"max|x|/std={s['absmax_over_std']:.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
