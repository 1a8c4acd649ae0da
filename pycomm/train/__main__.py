"""``mpiexec -n N python -m pycomm.train [options]`` (also ``mpiucc train``): see ``--help``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pycomm.train.config import CODEC_OPTIONS, build_parser, format_codec, parse_args


def main(argv: list[str] | None = None, prog: str = "python -m pycomm.train") -> int:
    if _refuse_without_extras(sys.argv[1:] if argv is None else argv, prog):
        return 2
    args = parse_args(argv, prog)
    import torch
    import torch.distributed as dist
    from mpi4py import MPI

    import pycomm
    import pycomm.distributed  # noqa: F401 (registers the mpiucc backend and mpi://)

    torch.set_num_threads(args.threads)
    world = MPI.COMM_WORLD
    try:
        layout, corpus = _check(args, world.Get_size())
    except (ValueError, FileNotFoundError) as exc:
        if world.Get_rank() == 0:
            build_parser(prog).print_usage(sys.stderr)
            print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    dist.init_process_group("mpiucc", init_method="mpi://")
    with pycomm.abort_on_error(world):  # an error on one rank ends the job, never a hang
        code = _train(args, layout, corpus, world, prog)
    dist.destroy_process_group()
    return code


def _refuse_without_extras(argv: list[str], prog: str) -> bool:
    """Missing mpi4py or torch stops the job before any work, naming the extras to install.

    matplotlib and tqdm (the ``train`` extra) are not needed: without them the job runs with no
    plot (a note in its summary) and plain progress lines (plot.py, progress.py).
    """
    from pycomm.extras import install_hint, missing_for
    from pycomm.train.config import launcher_rank

    missing = missing_for("mpi", "torch")
    if not missing or {"-h", "--help"} & set(argv):
        return False
    if launcher_rank() == 0:
        what = " and ".join(f"[{e}]" for e in missing)
        print(f"{prog}: error: needs the extra {what}: {install_hint(missing)}", file=sys.stderr)
    return True


def _check(args: argparse.Namespace, world: int):
    from pycomm.train.data import check_corpus, load_corpus
    from pycomm.train.groups import resolve_layout
    from pycomm.train.loop import model_config
    from pycomm.train.tensor_parallel import check_divisible

    layout = resolve_layout(world, args.dp, args.tp, args.pp)
    cfg = model_config(args)
    check_divisible(cfg, layout.tp)
    if cfg.layers < layout.pp:
        raise ValueError(f"--layers {cfg.layers} cannot fill --pp {layout.pp} pipeline stages")
    per_step = layout.dp * args.micro_batches
    if args.batch % per_step:
        raise ValueError(
            f"--batch {args.batch} is not a multiple of dp {layout.dp} x --micro-batches "
            f"{args.micro_batches} = {per_step}"
        )
    corpus = load_corpus(args.data, args.data_limit_mb)
    check_corpus(corpus, args.seq)
    return layout, corpus


def _train(args: argparse.Namespace, layout, corpus, world, prog: str) -> int:
    from pycomm.train.checkpoint import CheckpointError, Checkpoints, fingerprint
    from pycomm.train.config import Codecs, compressed_runs
    from pycomm.train.groups import build_groups
    from pycomm.train.loop import log, train_runs
    from pycomm.train.progress import Progress
    from pycomm.train.report import merge, write_outputs

    rank = world.Get_rank()
    plan = compressed_runs(args)
    if args.baseline:
        plan.insert(0, ("baseline", Codecs.uncompressed()))
    checkpoints, start = None, 0
    if args.checkpoint_dir:
        want = fingerprint(args, layout, corpus, plan)
        checkpoints = Checkpoints(args.checkpoint_dir, args.checkpoint_every, want, log)
        try:
            start = checkpoints.check(args.resume)  # the same answer on every rank
        except CheckpointError as exc:
            if rank == 0:
                print(f"{prog}: error: {exc}", file=sys.stderr, flush=True)
            checkpoints.close()
            return 2
    groups = build_groups(layout)
    header = (
        f"pycomm.train: {world.Get_size()} ranks = dp {layout.dp}"
        f"{' (FSDP2)' if args.fsdp else ''} x tp {layout.tp} x pp "
        f"{layout.pp}; GPT {args.layers} layers x {args.width} wide, {args.heads} heads, "
        f"seq {args.seq}, batch {args.batch} in {args.micro_batches} micro-batches; "
        f"{args.steps} steps; {corpus.describe()}"
    )
    if rank == 0:
        print(header, flush=True)
    progress = Progress(args.steps, enabled=args.progress and rank == 0)
    records = train_runs(args, groups, corpus, plan, progress, checkpoints, start)
    progress.close()
    if checkpoints is not None:
        checkpoints.close()
    runs = []
    for record in records:
        gathered = world.gather(record, root=0)
        if rank == 0:
            runs.append(merge(gathered))
    if rank == 0:
        out = Path(args.out) if args.out else Path("runs") / time.strftime("%Y%m%d-%H%M%S")
        saved = {k: format_codec(v) if k in CODEC_OPTIONS else v for k, v in vars(args).items()}
        text = write_outputs(out, saved, runs, header)
        print(text[len(header) :].strip("\n"))
        plot = ", loss.png" if (out / "loss.png").exists() else ""
        print(f"wrote {out}/summary.txt, metrics.json{plot}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
