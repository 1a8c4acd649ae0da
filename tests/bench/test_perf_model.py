"""The performance model's byte and step counts agree with the textbook formulas where the
placement makes no difference, and a node's link carries only what leaves the node."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
counts = pytest.importorskip("perfmodel.counts")
from perfmodel.fit import merge_repeats  # noqa: E402
from perfmodel.timing import pipelined, stretch  # noqa: E402

SP = {"add": 1e-10, "memcpy": 1e-10}


@pytest.mark.parametrize("n", [2, 4, 8, 64])
def test_one_rank_per_node_gives_the_flat_formulas(n):
    b = 1 << 20
    assert counts.scatter(n, n, b).link == pytest.approx((n - 1) / n * b)
    assert counts.mpi_allreduce(n, n, b, SP).link == pytest.approx(2 * (n - 1) / n * b)
    assert counts.mpi_allreduce(n, n, b, SP).rounds == 2 * (n.bit_length() - 1)
    big, small = 1 << 20, 1 << 10  # a ring above 512 KiB in all, recursive doubling below
    assert counts.allgather(n, n, big, False).link == pytest.approx((n - 1) * big)
    assert counts.allgather(n, n, small, False).link == pytest.approx((n - 1) * small)


def test_traffic_inside_a_node_stays_off_its_link():
    b = 1 << 20
    assert counts.scatter(8, 1, b).link == 0
    assert counts.scatter(8, 2, b).link == pytest.approx(4 * 4 / 8 * b)
    # MPICH's first steps pair near ranks: on 2 nodes of 4 only the last step crosses
    assert counts.mpi_allreduce(8, 2, b, SP).link == pytest.approx(2 * 4 * b / 8)
    assert counts.crossing_distances(8, 4) == [4]


def test_stretch_is_one_until_the_ranks_outnumber_the_cores():
    assert stretch(2, 2) == 1.0
    assert stretch(8, 2) == 4.0


def test_pipelined_segments_overlap_wire_and_cpu():
    assert pipelined(1.0, 3.0, 1) == 4.0
    assert pipelined(1.0, 3.0, 2) == pytest.approx(2.0 + 1.5)


def test_repeats_merge_into_their_median_and_spread():
    run = dict(ranks=4, nodes=2, gbit=1.0, bytes=8, variant="mpi")
    runs = [{**run, "seconds": s, "load": x} for s, x in ((0.1, 1.0), (0.3, 1.2), (0.2, 0.9))] + [
        {**run, "variant": "ebq ring", "seconds": 0.5, "load": 1.0}
    ]
    merged = merge_repeats(runs)
    assert [m["variant"] for m in merged] == ["mpi", "ebq ring"]
    assert merged[0]["seconds"] == pytest.approx(0.2)
    assert merged[0]["spread"] == pytest.approx(2.0)
    assert merged[0]["loads"] == [1.0, 1.2, 0.9]
    assert merged[1]["spread"] == 0.0
