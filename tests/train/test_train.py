"""pycomm.train: options, layout, data, the single-rank model; the MPI checks in mpi/."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mpi_launch import MPIEXEC, run_mpi

torch = pytest.importorskip("torch")
pytest.importorskip("mpi4py")

import pycomm  # noqa: E402
from pycomm.train import config, data, report, targets  # noqa: E402
from pycomm.train.groups import Layout, resolve_layout  # noqa: E402
from pycomm.train.stage import stage_layers  # noqa: E402

SCRIPTS = Path(__file__).parent / "mpi"
TINY = [
    "--layers",
    "2",
    "--width",
    "32",
    "--heads",
    "4",
    "--seq",
    "16",
    "--batch",
    "8",
    "--micro-batches",
    "2",
    "--steps",
    "2",
    "--eval-every",
    "2",
    "--val-batches",
    "1",
    "--data-limit-mb",
    "0.5",
]


# -- options --


@pytest.mark.parametrize(
    "text, want",
    [
        ("none", pycomm.CodecSpec()),
        ("ebq:rel:1e-3", pycomm.CodecSpec("ebq", error_bound=1e-3, mode="rel")),
        (
            "ebq:abs:0.5:level=dense",
            pycomm.CodecSpec("ebq", error_bound=0.5, mode="abs", level="dense"),
        ),
    ],
)
def test_codec_strings_parse_and_print_back(text: str, want: pycomm.CodecSpec) -> None:
    spec = config.parse_codec(text)
    assert spec == want
    assert config.parse_codec(config.format_codec(spec)) == spec


@pytest.mark.parametrize(
    "text, says",
    [
        ("zstd", "unknown codec"),
        ("ebq", "needs a mode and a bound"),
        ("ebq:rel", "needs a mode and a bound"),
        ("ebq:rel:x", "not a number"),
        ("ebq:rel:-1", "error_bound must be positive"),
        ("ebq:sideways:1e-3", "mode must be"),
        ("ebq:rel:1e-3:speed=9", "KEY=VALUE"),
    ],
)
def test_bad_codec_strings_say_why(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        config.parse_codec(text)


def test_cli_errors_are_clear(capsys: pytest.CaptureFixture) -> None:
    for argv, says in (
        (["--tp-codec-fwd", "ebq:rel"], "argument --tp-codec-fwd: invalid codec 'ebq:rel'"),
        (["--width", "0"], "--width must be at least 1"),
        (["--baseline"], "--baseline compares against a compressed run"),
        (["--pp", "two"], "argument --pp: invalid int value"),
    ):
        with pytest.raises(SystemExit) as exc:
            config.parse_args(argv)
        assert exc.value.code == 2
        assert says in capsys.readouterr().err


def test_compress_auto_keeps_the_presets_contracts() -> None:
    args = config.parse_args(["--compress", "auto", "--pp-codec", "none"])
    assert not args.pp_codec.compressed
    want = config.parse_codec(config.COMPRESS_PRESET["dp_codec"]).options()
    assert args.dp_codec.auto and args.dp_codec.options() == want
    assert config.parse_codec(config.format_codec(args.dp_codec)) == args.dp_codec
    assert config.parse_codec("auto").lossless


def test_compress_fills_only_missing_codecs() -> None:
    args = config.parse_args(["--compress", "--pp-codec", "none"])
    assert not args.pp_codec.compressed
    assert args.tp_codec_fwd == config.parse_codec(config.COMPRESS_PRESET["tp_codec_fwd"])
    assert not config.parse_args([]).dp_codec.compressed


def test_compress_preset_and_auto_make_one_run_each() -> None:
    args = config.parse_args(["--baseline", "--compress", "preset", "auto", "--pp-codec", "int8"])
    runs = dict(config.compressed_runs(args))
    assert list(runs) == ["compressed", "auto"]
    assert runs["compressed"].dp == config.parse_codec(config.COMPRESS_PRESET["dp_codec"])
    assert runs["auto"].dp.auto and runs["auto"].dp.options() == runs["compressed"].dp.options()
    assert runs["compressed"].pp == runs["auto"].pp == config.parse_codec("int8")  # given: both
    assert args.dp_codec == runs["compressed"].dp  # the first run's codecs, as before
    assert list(dict(config.compressed_runs(config.parse_args(["--compress"])))) == ["compressed"]
    assert [n for n, _ in config.compressed_runs(config.parse_args(["--compress", "auto"]))] == [
        "auto"
    ]


def _run(name: str, val: list[tuple[int, float, float]]) -> dict:
    return {"name": name, "val": [list(v) for v in val], "final_val": val[-1][1], "step_s": [1] * 4}


def test_time_to_target_is_the_first_crossing_of_the_baselines_final_loss() -> None:
    base = _run("baseline", [(2, 3.0, 10.0), (4, 2.0, 20.0)])
    fast = _run("compressed", [(2, 2.5, 5.0), (4, 2.0, 10.0)])
    never = _run("auto", [(2, 3.0, 5.0), (4, 2.5, 10.0)])
    target = targets.target_loss(base)
    assert target == pytest.approx(2.0 * (1 + targets.TARGET_SLACK))
    reached = report.times_to_target([base, fast, never])
    # linear between evaluations: 2.02 lies 98% of the way from 3.0 to 2.0, 48% from 2.5 to 2.0
    assert reached["baseline"] == pytest.approx(10 + 10 * (3.0 - target) / 1.0)
    assert reached["compressed"] == pytest.approx(5 + 5 * (2.5 - target) / 0.5)
    assert reached["auto"] is None
    text = report.time_to_target_text([base, fast, never], reached)
    assert "not reached in 4 steps" in text and "x sooner" in text


def test_layout_product_is_checked() -> None:
    assert resolve_layout(8, None, 2, 2) == Layout(2, 2, 2)
    with pytest.raises(ValueError, match="= 8 ranks, but this job has 4"):
        resolve_layout(4, 2, 2, 2)
    with pytest.raises(ValueError, match="cannot be split"):
        resolve_layout(6, None, 4, 1)


@pytest.mark.parametrize("dp, tp, pp", [(2, 2, 2), (3, 1, 2), (1, 4, 1), (2, 3, 2)])
def test_groups_partition_the_ranks(dp: int, tp: int, pp: int) -> None:
    lay = Layout(dp, tp, pp)
    for groups, size in ((lay.tp_groups(), tp), (lay.dp_groups(), dp), (lay.pp_groups(), pp)):
        assert sorted(r for g in groups for r in g) == list(range(lay.world))
        assert all(len(g) == size and g == sorted(g) for g in groups)
    for r in range(lay.world):
        assert lay.rank(*lay.coords(r)) == r
    assert lay.tp_groups()[0] == list(range(tp))  # TP ranks are neighbours


def test_stage_layers_cover_the_model() -> None:
    for layers, stages in ((4, 2), (5, 3), (3, 3)):
        got = [list(stage_layers(layers, stages, s)) for s in range(stages)]
        assert sum(got, []) == list(range(layers))
    with pytest.raises(ValueError, match="cannot fill"):
        stage_layers(2, 3, 0)


def test_tp_sharded_names_match_the_shards() -> None:
    from pycomm.train.model import Block, ModelConfig
    from pycomm.train.tensor_parallel import is_tp_sharded, shard_block

    cfg = ModelConfig(layers=1, width=32, heads=4, seq=8)
    full = dict(Block(cfg).named_parameters())
    shards = shard_block(full, cfg, 0, 2)
    for name, t in full.items():
        assert is_tp_sharded(name) == (shards[name].shape != t.shape), name
        assert is_tp_sharded(f"blocks.3.{name}") == is_tp_sharded(name)
    assert not is_tp_sharded("head.out.weight") and not is_tp_sharded("embed.tokens.weight")


# -- data --


def test_stdlib_corpus_is_deterministic_and_split() -> None:
    a, b = data.stdlib_sources(300_000), data.stdlib_sources(300_000)
    assert np.array_equal(a.train, b.train) and np.array_equal(a.validation, b.validation)
    assert a.train.size > 100_000 and a.validation.size > 1_000
    assert a.train.tobytes().find(a.validation[:200].tobytes()) < 0
    x1, y1 = data.train_batch(a, 3, 4, 16, seed=0)
    x2, _ = data.train_batch(a, 3, 4, 16, seed=0)
    assert torch.equal(x1, x2) and torch.equal(x1[:, 1:], y1[:, :-1])


def test_user_file_splits_by_position(tmp_path: Path) -> None:
    path = tmp_path / "text.txt"
    path.write_bytes(bytes(range(256)) * 40)
    corpus = data.user_file(path, 1 << 20)
    assert corpus.train.size + corpus.validation.size == 10240
    assert corpus.validation.size == 1024


# -- under mpiexec --


@pytest.mark.parametrize("dp, tp, pp", [(1, 2, 2), (2, 2, 1), (2, 1, 2)])
def test_parallel_training_equals_one_process(dp: int, tp: int, pp: int) -> None:
    out = run_mpi(
        SCRIPTS / "check_equivalence.py", dp * tp * pp, str(dp), str(tp), str(pp), timeout=120
    )
    assert "passed" in out


def test_three_stage_pipeline_with_tight_codec_matches() -> None:
    out = run_mpi(SCRIPTS / "check_equivalence.py", 3, "1", "1", "3", "ebq:abs:1e-6", timeout=120)
    assert "passed" in out


def test_tp_allreduce_functions_use_their_codecs() -> None:
    assert "tp ops: passed" in run_mpi(SCRIPTS / "check_tp_ops.py", 2, timeout=90)


def test_pipe_link_bound_bytes_and_bubble() -> None:
    assert "pipe link: passed" in run_mpi(SCRIPTS / "check_pipe_link.py", 2, timeout=90)


@pytest.mark.parametrize("dp, tp", [(2, 2), (1, 2)])
def test_replica_check_names_a_parameter_nudged_by_one_ulp(dp: int, tp: int) -> None:
    assert "replica check: passed" in run_mpi(
        SCRIPTS / "check_replicas.py", dp * tp, str(dp), str(tp), timeout=120
    )


@pytest.mark.parametrize("dp, tp", [(2, 1), (2, 2)])
def test_replica_check_under_fsdp_compares_the_gathered_weights(dp: int, tp: int) -> None:
    assert "replica check: passed" in run_mpi(
        SCRIPTS / "check_replicas.py", dp * tp, str(dp), str(tp), "fsdp", timeout=120
    )


def test_tp_replicated_gradients_keep_replicas_identical_under_compression() -> None:
    out = run_mpi(SCRIPTS / "check_replicated_grads.py", 4, timeout=150)
    assert "replicated gradients: passed" in out


def test_short_compressed_run_stays_near_baseline(tmp_path: Path) -> None:
    args = [
        "--tp",
        "2",
        "--pp",
        "2",
        "--layers",
        "2",
        "--width",
        "64",
        "--heads",
        "4",
        "--seq",
        "32",
        "--batch",
        "16",
        "--steps",
        "30",
        "--eval-every",
        "15",
        "--val-batches",
        "2",
        "--data-limit-mb",
        "2",
    ]
    out = run_mpi(
        SCRIPTS / "check_compressed_run.py", 4, str(tmp_path / "run"), "0.02", *args, timeout=150
    )
    assert "passed" in out


def test_wrong_rank_count_fails_clearly() -> None:
    if not MPIEXEC.exists():
        pytest.skip("no mpiexec")
    cmd = [
        str(MPIEXEC),
        "-n",
        "2",
        sys.executable,
        "-m",
        "pycomm.train",
        "--tp",
        "2",
        "--pp",
        "2",
        *TINY,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("--dp 1 x --tp 2 x --pp 2") == 0
    assert proc.stderr.count("cannot be split into --tp 2 x --pp 2") == 1, proc.stderr


@pytest.mark.parametrize("dp, tp, steps", [(2, 1, 20), (2, 2, 12)])
def test_fsdp_trains_compressed_within_one_percent(
    tmp_path: Path, dp: int, tp: int, steps: int
) -> None:
    """--fsdp: FSDP2 over dp (with TP inside), both runs learn, their replica checks pass,
    and the compressed run (ebq gradients with error feedback, int8 weights) ends within 1%."""
    args = ["--fsdp", "--tp", str(tp), "--layers", "2", "--width", "64", "--heads", "4"]
    args += ["--seq", "32", "--batch", "16", "--steps", str(steps), "--eval-every", "6"]
    args += ["--val-batches", "2", "--data-limit-mb", "2"]
    out = run_mpi(
        SCRIPTS / "check_compressed_run.py", dp * tp, str(tmp_path / "run"), "0.01", *args,
        timeout=240,
    )  # fmt: skip
    assert "passed" in out


def test_weight_codec_needs_fsdp(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        config.parse_args(["--weight-codec", "int8"])
    assert "--weight-codec applies to FSDP's all-gather: add --fsdp" in capsys.readouterr().err
    args = config.parse_args(["--fsdp", "--compress"])
    assert args.weight_codec == config.parse_codec(config.COMPRESS_PRESET["weight_codec"])
    assert not config.parse_args(["--compress"]).weight_codec.compressed
