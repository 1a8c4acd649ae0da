"""The ebq allreduce's error budget: flat (``rank_bound``) and through the node hierarchy
(``node_bound``), checked against the real codec for any layout of ranks on nodes."""

import numpy as np
import pycodecs
from hypothesis import given, settings
from hypothesis import strategies as st

from pycomm.collectives.bound import node_bound, rank_bound


def ebq_sum(parts: list[np.ndarray], e: float) -> np.ndarray:
    """What the leaders compute: each part on one grid, indices added exactly, decoded once."""
    frames = [pycodecs.compress(p, codec="ebq", error_bound=e, mode="abs") for p in parts]
    total = frames[0]
    for f in frames[1:]:
        total = pycodecs.ebq_add(total, f)
    return pycodecs.decompress(total, out=np.empty_like(parts[0]))


layouts = st.lists(st.integers(1, 8), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(
    nodes=layouts,
    scale=st.sampled_from([1e-6, 1.0, 3e4]),
    relative=st.sampled_from([1e-6, 1e-4, 1e-2]),
    mean=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
    seed=st.integers(0, 2**31),
)
def test_hierarchy_keeps_the_bound(nodes, scale, relative, mean, dtype, seed):
    rng = np.random.default_rng(seed)
    n = sum(nodes)
    x = (rng.standard_normal((n, 300)) * scale).astype(dtype)
    x[:, 0] = scale * (1 - 2 * (np.arange(n) % 2))  # reaches the magnitude
    magnitude = float(np.abs(x).max())
    bound = relative * magnitude
    e = node_bound(bound, nodes, magnitude, mean, np.dtype(dtype))
    if e is None:  # out of the dtype's reach: the collective sends the data exact
        return
    starts = np.cumsum([0, *nodes])
    ends = zip(starts[:-1], starts[1:], strict=True)
    node_sums = [x[a:b].astype(np.float64).sum(0).astype(dtype) for a, b in ends]
    got = ebq_sum(node_sums, e)
    if mean:
        got = got / dtype(n)
    exact = x.astype(np.longdouble).sum(0) / (n if mean else 1)
    err = np.abs(got.astype(np.longdouble) - exact).max()
    assert err <= bound, (err, bound, e)


@settings(max_examples=40, deadline=None)
@given(
    ranks=st.integers(1, 64),
    relative=st.sampled_from([1e-5, 1e-3]),
    mean=st.booleans(),
    seed=st.integers(0, 2**31),
)
def test_flat_bound_at_any_rank_count(ranks, relative, mean, seed):
    x = np.random.default_rng(seed).standard_normal((ranks, 300)).astype(np.float32)
    magnitude = float(np.abs(x).max())
    bound = relative * magnitude
    e = rank_bound(bound, ranks, magnitude, mean, np.dtype(np.float32))
    if e is None:  # out of float32's reach at this many ranks: sent exact
        assert relative == 1e-5 and ranks > 4
        return
    got = ebq_sum(list(x), e) / (np.float32(ranks) if mean else 1)
    exact = x.astype(np.longdouble).sum(0) / (ranks if mean else 1)
    assert np.abs(got.astype(np.longdouble) - exact).max() <= bound


def test_nodes_of_one_rank_cost_little():
    """With one rank per node the hierarchy is the flat budget less the node roundings."""
    flat = rank_bound(1e-3, 8, 1.0, False, np.dtype(np.float32))
    nodes = node_bound(1e-3, [1] * 8, 1.0, False, np.dtype(np.float32))
    assert nodes < flat and nodes > 0.9 * flat
