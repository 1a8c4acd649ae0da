"""The compression policy object: which calls it compresses, and its residuals in checkpoints."""

import io
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from pycomm import CodecSpec  # noqa: E402
from pycomm.distributed import Compression, set_compression  # noqa: E402

RS = torch.distributed.ReduceOp.SUM
EBQ = CodecSpec("ebq", error_bound=1e-3, mode="rel")


def policy() -> Compression:
    return Compression(reduce_scatter=EBQ, all_gather=CodecSpec("int8"), min_numel=8)


def test_only_large_float_tensors_reduced_by_sum_or_avg_are_compressed() -> None:
    p = policy()
    big = torch.zeros(16)
    assert p.spec_for("reduce_scatter", [big], RS) == EBQ
    assert p.spec_for("reduce_scatter", [big], torch.distributed.ReduceOp.AVG) is not None
    assert p.spec_for("reduce_scatter", [big], torch.distributed.ReduceOp.MAX) is None
    assert p.spec_for("reduce_scatter", [torch.zeros(4)], RS) is None  # below min_numel
    assert p.spec_for("reduce_scatter", [torch.zeros(16, dtype=torch.int32)], RS) is None
    assert p.spec_for("reduce_scatter", [big, big], RS) is None  # coalesced: exact
    assert p.spec_for("all_reduce", [big], RS) is None  # not in the policy
    assert p.spec_for("all_gather", [big.bfloat16()]) == CodecSpec("int8")


def test_residuals_survive_state_dict_and_pickle() -> None:
    p = policy()
    r = p.residual_for("reduce_scatter", np.zeros(32, np.float32))
    r[:] = np.arange(32)
    buf = io.BytesIO()
    torch.save(p.state_dict(), buf)
    buf.seek(0)
    q = policy()
    q.load_state_dict(torch.load(buf))
    assert np.array_equal(q.residual_for("reduce_scatter", np.zeros(32, np.float32)), r)
    s = pickle.loads(pickle.dumps(p))
    assert np.array_equal(s.residual_for("reduce_scatter", np.zeros(32, np.float32)), r)
    assert s.all_gather == CodecSpec("int8") and s.min_numel == 8


def test_a_group_of_another_backend_is_refused() -> None:
    with pytest.raises(TypeError, match="mpiucc group"):
        set_compression(object(), reduce_scatter=EBQ)
