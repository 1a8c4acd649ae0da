"""Command-line options of ``python -m pycomm.train``: model, layout, data, codecs, presets.

Codecs are strings ``NAME[:MODE:BOUND][:KEY=VALUE...]``: ``none``, ``fp16``, ``bf16``,
``int8``, ``int4``, ``sign``, ``qsgd``, ``topk``, ``ebq:rel:1e-3``, ``ebq:abs:1e-4:level=dense``
(keys: level, predictor, block_size, levels, rounding, seed), parsed into ``pycomm.CodecSpec``.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from typing import NoReturn

import numpy as np

import pycomm

#: Option values a preset fills in (explicit options win).
# fmt: off
PRESETS: dict[str, dict[str, object]] = {
    # make demo (bench/demo.sh): 2 ranks, one per core as one per node, DP 2, a model wide
    # enough that its gradients are most of the traffic; baseline and compressed in lockstep.
    "demo": dict(dp=2, layers=4, width=512, heads=8, seq=64, batch=8, micro_batches=1,
                 steps=40, eval_every=5, baseline=True, compress=True),
    # bench/train_bench.py: tensor x pipeline parallel, TP all_reduce the main traffic.
    "bench": dict(tp=2, pp=2, layers=4, width=256, heads=8, seq=128, batch=16, micro_batches=4,
                  steps=60, eval_every=10, baseline=True, compress=True),
    # bench/train_bench.py: data x pipeline parallel, wide and few tokens: DDP's gradients.
    "bench-dp": dict(dp=2, pp=2, layers=4, width=512, heads=8, seq=64, batch=8,
                     micro_batches=2, steps=60, eval_every=10, baseline=True, compress=True),
    # bench/train_bench.py: FSDP2 over every rank, its reduce-scatter and all-gather the traffic
    # (lr 1e-3: at 2e-3 the loss spikes near step 20, and a 60-step comparison measures the spike).
    "bench-fsdp": dict(fsdp=True, layers=4, width=256, heads=8, seq=64, batch=16,
                       micro_batches=1, lr=1e-3, steps=60, eval_every=10, baseline=True,
                       compress=True),
}
# fmt: on

#: What --compress turns on where a codec is not given: ebq with a bound relative to the
#: root-mean-square of what is sent (``rms``), so that each stream's relative error per step,
#: |compressed - exact| / |exact|, stays below the bound whatever the layout, model or data,
#: at or below the accuracy guard's threshold for that stream (guard.THRESHOLDS).
#: Range-relative bounds (``rel``) meant 0.1-7% per step depending on how heavy the tails of
#: a bucket were, so one preset could not hold every layout (issue 19, BENCHMARKS.md).
#: Under --fsdp the DP codec serves the gradients' reduce-scatter (with error feedback) and
#: the weight codec the weights' all-gather: blockwise int8, each block of 64 weights scaled
#: to its own largest magnitude, so each gathered weight is within 1/254 of that magnitude
#: (about 0.6% relative error on a weight matrix, 3.8x fewer bytes); the sharded masters are
#: never compressed, so the error does not accumulate.
COMPRESS_PRESET = {
    "tp_codec_fwd": "ebq:rms:5e-3",
    "tp_codec_bwd": "ebq:rms:5e-2",
    "pp_codec": "ebq:rms:5e-3",
    "dp_codec": "ebq:rms:5e-4",
    "weight_codec": "int8:block_size=64",
}
CODEC_OPTIONS = tuple(COMPRESS_PRESET)
#: --compress's modes, and the name of the run each makes (reports and plots use the names)
COMPRESS_MODES = ("preset", "auto")
RUN_NAMES = {None: "compressed", "preset": "compressed", "auto": "auto"}

DEFAULTS: dict[str, object] = dict(
    dp=None,
    tp=1,
    pp=1,
    layers=4,
    width=128,
    heads=4,
    seq=64,
    batch=32,
    micro_batches=4,
    steps=200,
    lr=2e-3,
    warmup=20,
    seed=0,
    eval_every=25,
    fsdp=False,
    val_batches=4,
    data=None,
    data_limit_mb=16.0,
    bucket_mb=25.0,
    error_feedback=True,
    threads=1,
    check_replicas=25,
    guard_every=10,
    out=None,
    checkpoint_dir=None,
    checkpoint_every=0,
    resume=False,
    stop_after=None,
    baseline=False,
    compress=False,
    progress=True,
    tp_codec_fwd=None,
    tp_codec_bwd=None,
    pp_codec=None,
    dp_codec=None,
    weight_codec=None,
)
_INT_KEYS = ("block_size", "levels", "seed")
_STR_KEYS = ("level", "predictor", "rounding")


@dataclass(frozen=True)
class Codecs:
    """The codecs of a run (``weights``: FSDP's all-gather, under --fsdp only)."""

    tp_fwd: pycomm.CodecSpec
    tp_bwd: pycomm.CodecSpec
    pp: pycomm.CodecSpec
    dp: pycomm.CodecSpec
    #: made on use: a default instance here would import the collectives (and mpi4py) when
    #: this module loads, before the job can say that mpi4py is missing
    weights: pycomm.CodecSpec = field(default_factory=lambda: pycomm.CodecSpec())

    @classmethod
    def uncompressed(cls) -> Codecs:
        none = pycomm.CodecSpec()
        return cls(none, none, none, none, none)

    def describe(self) -> dict[str, str]:
        keys = ("tp_fwd", "tp_bwd", "pp", "dp", "weights")
        return {k: format_codec(getattr(self, k)) for k in keys}


def parse_codec(text: str) -> pycomm.CodecSpec:
    """A CodecSpec from ``NAME[:MODE:BOUND][:KEY=VALUE...]``; ValueError says what is wrong."""
    parts = [p.strip() for p in text.strip().split(":")]
    name, rest = parts[0].lower(), parts[1:]
    params: dict[str, object] = {}
    if name == "auto":  # auto, auto:lossless or auto:MODE:BOUND (pycomm.collectives.auto)
        from pycomm.collectives.spec import make_spec  # here: the package imports mpi4py

        return make_spec(":".join([name, *rest]))
    if name == "ebq":
        if len(rest) < 2 or "=" in rest[0] or "=" in rest[1]:
            raise ValueError("ebq needs a mode and a bound, e.g. ebq:rel:1e-3 or ebq:abs:1e-4")
        params["mode"] = rest[0]
        try:
            params["error_bound"] = float(rest[1])
        except ValueError:
            raise ValueError(f"bound {rest[1]!r} is not a number") from None
        rest = rest[2:]
    for item in rest:
        key, eq, value = item.partition("=")
        if not eq or key not in _INT_KEYS + _STR_KEYS:
            raise ValueError(f"{item!r} is not KEY=VALUE with KEY in {_INT_KEYS + _STR_KEYS}")
        params[key] = int(value) if key in _INT_KEYS else value
    spec = pycomm.CodecSpec(codec=name, **params)  # type: ignore[arg-type]
    if spec.compressed:
        _check_codec_runs(spec, text)
    return spec


def _check_codec_runs(spec: pycomm.CodecSpec, text: str) -> None:
    import pycodecs

    kw = spec.codec_kwargs()
    if spec.codec == "ebq":
        kw.update(error_bound=spec.error_bound, mode=spec.mode)
    try:
        pycodecs.compress(np.linspace(-1, 1, 64, dtype=np.float32), **kw)
    except pycodecs.CodecError as exc:
        raise ValueError(f"{text!r} does not run in this build of the codecs ({exc})") from None


def format_codec(spec: pycomm.CodecSpec) -> str:
    if not spec.compressed:
        return "none"
    text = spec.codec
    if spec.auto:
        return "auto" if spec.lossless else f"auto:{spec.mode}:{spec.error_bound:g}"
    if spec.codec == "ebq":
        text += f":{spec.mode}:{spec.error_bound:g}"
    default = pycomm.CodecSpec()
    for key in _STR_KEYS + _INT_KEYS:
        if getattr(spec, key) != getattr(default, key):
            text += f":{key}={getattr(spec, key)}"
    return text


def _codec_arg(text: str) -> pycomm.CodecSpec:
    try:
        return parse_codec(text)
    except (ValueError, TypeError) as exc:
        raise argparse.ArgumentTypeError(f"invalid codec {text!r}: {exc}") from None


class _RankZeroParser(argparse.ArgumentParser):
    """Under mpiexec only rank 0 prints usage errors (every rank exits with status 2)."""

    def error(self, message: str) -> NoReturn:
        if launcher_rank() == 0:
            self.print_usage(sys.stderr)
            sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(2)


def launcher_rank() -> int:
    """This process's rank as the MPI launcher announced it (0 when not launched by MPI)."""
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 0


def build_parser(prog: str = "python -m pycomm.train") -> argparse.ArgumentParser:
    p = _RankZeroParser(
        prog=prog,
        description="Train a byte-level GPT with data x tensor x pipeline parallelism over "
        "compressed MPI communication (run under mpiexec -n DP*TP*PP).",
        argument_default=argparse.SUPPRESS,
    )
    p.add_argument("--preset", choices=sorted(PRESETS), help="fill in a named configuration")
    lay = p.add_argument_group("parallel layout (their product is the number of ranks)")
    lay.add_argument("--dp", type=int, help="data-parallel replicas (default: what is left)")
    lay.add_argument("--tp", type=int, help="tensor-parallel ranks per stage (default 1)")
    lay.add_argument("--pp", type=int, help="pipeline stages (default 1)")
    lay.add_argument(
        "--fsdp",
        action="store_true",
        help="data parallelism by FSDP2 fully_shard over the dp group (weights sharded, "
        "all-gathered; gradients reduce-scattered) instead of DDP",
    )
    mod = p.add_argument_group("model and training")
    for name, kind, what in (
        ("layers", int, "decoder layers (4)"),
        ("width", int, "residual width (128)"),
        ("heads", int, "attention heads (4)"),
        ("seq", int, "sequence length in bytes (64)"),
        ("batch", int, "global batch in sequences (32)"),
        ("micro-batches", int, "pipeline micro-batches per step (4)"),
        ("steps", int, "optimizer steps (200)"),
        ("lr", float, "peak learning rate (2e-3)"),
        ("warmup", int, "warm-up steps (20)"),
        ("seed", int, "seed of weights and data (0)"),
        ("eval-every", int, "steps between validation passes (25)"),
        ("val-batches", int, "global batches per validation pass (4)"),
        ("bucket-mb", float, "DDP bucket size in MB (25, DDP's default)"),
        ("threads", int, "torch threads per rank (1)"),
        (
            "check-replicas",
            int,
            "steps between checks that every replica of a parameter holds the same bits "
            "(25; 0: never)",
        ),
        (
            "guard-every",
            int,
            "steps between measurements of each codec's error, which tighten a codec over "
            "its threshold (10; 0: never)",
        ),
    ):
        mod.add_argument(f"--{name}", type=kind, help=what)
    dat = p.add_argument_group("data")
    dat.add_argument("--data", help="train on this file's bytes (default: the stdlib sources)")
    dat.add_argument("--data-limit-mb", type=float, help="read at most this many MB (16)")
    cod = p.add_argument_group("compression (codec strings, e.g. none, bf16, int8, ebq:rel:1e-3)")
    cod.add_argument("--tp-codec-fwd", type=_codec_arg, help="TP all_reduce in forward")
    cod.add_argument("--tp-codec-bwd", type=_codec_arg, help="TP all_reduce in backward")
    cod.add_argument("--pp-codec", type=_codec_arg, help="pipeline activations and gradients")
    cod.add_argument(
        "--dp-codec",
        type=_codec_arg,
        help="DP gradients: DDP's all_reduce, or FSDP's reduce-scatter (see --no-error-feedback)",
    )
    cod.add_argument("--weight-codec", type=_codec_arg, help="FSDP's all-gather of weights")
    cod.add_argument(
        "--no-error-feedback",
        dest="error_feedback",
        action="store_false",
        help="DP: drop what compression loses instead of sending it with the next step",
    )
    cod.add_argument(
        "--compress",
        nargs="*",
        choices=COMPRESS_MODES,
        help=f"every codec not given above from the preset {COMPRESS_PRESET}; "
        "--compress auto: the same bounds, each stream's codec chosen per message by "
        "codec=auto from the measured link; --compress preset auto: one run of each, "
        "in lockstep",
    )
    out = p.add_argument_group("run and output")
    out.add_argument(
        "--baseline",
        action="store_true",
        help="first train the uncompressed configuration (same seed and data)",
    )
    out.add_argument("--out", help="output folder (default runs/<date-time>)")
    out.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    ck = p.add_argument_group("checkpoints")
    ck.add_argument(
        "--checkpoint-dir",
        help="write checkpoints here (model and optimizer by torch.distributed.checkpoint, "
        "with the compression state, guard, record and RNG of every rank): after the last "
        "step, and every --checkpoint-every steps",
    )
    ck.add_argument("--checkpoint-every", type=int, help="steps between checkpoints (0: the end)")
    ck.add_argument(
        "--resume",
        action="store_true",
        help="continue from --checkpoint-dir's latest checkpoint (same layout, model, data, "
        "batch and codecs)",
    )
    ck.add_argument(
        "--stop-after",
        type=int,
        help="end after this step, with a checkpoint, to continue later with --resume",
    )
    return p


def parse_args(argv: list[str] | None = None, prog: str = "python -m pycomm.train"):
    """Options with the preset and the defaults filled in, codecs as CodecSpecs."""
    parser = build_parser(prog)
    given = vars(parser.parse_args(argv))
    preset = PRESETS.get(given.pop("preset", None) or "", {})
    values = {**DEFAULTS, **preset, **given}
    if "weight_codec" in given and not values["fsdp"]:
        parser.error("--weight-codec applies to FSDP's all-gather: add --fsdp")
    if not values["fsdp"]:
        values["weight_codec"] = "none"
    values["compress"] = modes = _compress_modes(values["compress"])
    runs = {RUN_NAMES[m]: _run_codecs(values, m) for m in modes or [None]}
    values.update(next(iter(runs.values())))  # the first compressed run's codecs
    values["runs"] = {name: {k: format_codec(v) for k, v in c.items()} for name, c in runs.items()}
    for key in (
        "layers",
        "width",
        "heads",
        "seq",
        "batch",
        "micro_batches",
        "steps",
        "eval_every",
        "val_batches",
        "threads",
    ):
        if values[key] < 1:
            parser.error(f"--{key.replace('_', '-')} must be at least 1")
    for key in ("checkpoint_every", "resume", "stop_after"):
        if values[key] and not values["checkpoint_dir"]:
            parser.error(f"--{key.replace('_', '-')} needs --checkpoint-dir")
    if values["stop_after"] is not None and values["stop_after"] < 1:
        parser.error("--stop-after must be at least 1")
    for key in ("check_replicas", "guard_every", "checkpoint_every"):
        if values[key] < 0:
            parser.error(f"--{key.replace('_', '-')} must be 0 (never) or a number of steps")
    if values["baseline"] and not any(c.compressed for r in runs.values() for c in r.values()):
        parser.error("--baseline compares against a compressed run: add --compress or a codec")
    return argparse.Namespace(**values)


def compressed_runs(args: argparse.Namespace) -> list[tuple[str, Codecs]]:
    """Each compressed run of the job (one per --compress mode), named as reports name it."""
    return [
        (name, Codecs(*(parse_codec(codecs[k]) for k in CODEC_OPTIONS)))
        for name, codecs in args.runs.items()
    ]


def _compress_modes(given: object) -> list[str]:
    """--compress's modes: [] without it, ["preset"] for a bare --compress (or a preset's True)."""
    if given is None or given is False:
        return []
    if given is True or given == []:
        return ["preset"]
    return list(dict.fromkeys([given] if isinstance(given, str) else given))


def _run_codecs(values: dict, mode: str | None) -> dict[str, pycomm.CodecSpec]:
    """The codecs of the run of one --compress mode: those given, the rest from the preset
    (with mode "auto", the preset's contracts with the codec chosen per call)."""
    codecs = {}
    for key in CODEC_OPTIONS:
        given = values[key]
        if isinstance(given, pycomm.CodecSpec):
            codecs[key] = given
            continue
        if given is None:
            given = COMPRESS_PRESET[key] if mode else "none"
            if mode == "auto":
                given = given.replace("ebq", "auto", 1)
        codecs[key] = parse_codec(given)
    return codecs
