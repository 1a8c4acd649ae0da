"""One request, one spec: every documented spelling of a codec (a name and keywords,
``auto:MODE:BOUND``, a CodecSpec) in every place that takes one (pycomm's calls, the DDP hook's
state, a group's compression policy) is the same spec, so the same key and the same path
(``tests/pycomm/mpi/check_hot.py::check_every_spelling_one_path`` holds the path under MPI)."""

from __future__ import annotations

import pytest

import pycomm
from pycomm.collectives.spec import make_spec, normal_spec

AUTO_RMS = pycomm.CodecSpec("auto", error_bound=1e-3, mode="rms")
SPELLINGS = [  # (codec, keywords): each spells AUTO_RMS
    ("auto:rms:1e-3", {}),
    ("auto:rms:0.001", {}),
    ("auto", {"error_bound": 1e-3, "mode": "rms"}),
    ("auto", {"mode": "rms", "error_bound": 1e-3}),
    (AUTO_RMS, {}),
]


@pytest.mark.parametrize(("codec", "params"), SPELLINGS)
def test_every_spelling_is_one_spec_and_one_key(codec, params) -> None:
    spec = normal_spec(codec, params)
    assert spec == make_spec(codec, **params) == AUTO_RMS
    assert hash(spec) == hash(AUTO_RMS)
    assert spec.signature("allreduce", 4) == AUTO_RMS.signature("allreduce", 4)


@pytest.mark.parametrize(("codec", "params"), SPELLINGS)
def test_the_hook_state_and_the_policy_take_every_spelling(codec, params) -> None:
    pytest.importorskip("torch")
    from pycomm.distributed.compression import Compression
    from pycomm.distributed.hooks import CompressHookState

    assert CompressHookState(codec, **params).codec == AUTO_RMS
    if not params:
        assert Compression(all_reduce=codec).all_reduce == AUTO_RMS


def test_a_spelling_with_a_bad_option_still_raises() -> None:
    with pytest.raises((TypeError, ValueError)):
        normal_spec("auto", {"error_bound": 1e-3, "mode": "nope"})
    with pytest.raises(TypeError):
        normal_spec(AUTO_RMS, {"mode": "rel"})
