"""Error feedback through an uncompressed allreduce: the residual goes out once, exactly, and a
residual pycomm knows to be empty is not added again (``ErrorFeedback.worker_zero``)."""

import pickle

import numpy as np
from mpi4py import MPI

import pycomm
from pycomm.collectives.feedback import ErrorFeedback

N = 1000


def data(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(N).astype(np.float32)


def test_an_uncompressed_call_sends_the_residual_once_and_knows_it_empty() -> None:
    x, kept = data(1), data(2)
    fb = ErrorFeedback(kept.copy())
    assert not fb.worker_zero  # given by the caller: not known
    y = pycomm.allreduce(x, MPI.COMM_SELF, "none", residual=fb)
    assert np.array_equal(y, x + kept)
    assert fb.worker_zero and not fb.worker.any()
    y = pycomm.allreduce(x, MPI.COMM_SELF, "none", residual=fb)
    assert np.array_equal(y, x)


def test_a_compressed_call_makes_the_residual_unknown_again() -> None:
    x = data(3)
    fb = ErrorFeedback(np.zeros(N, np.float32))
    pycomm.allreduce(x, MPI.COMM_SELF, "none", residual=fb)
    assert fb.worker_zero
    pycomm.allreduce(x, MPI.COMM_SELF, "int8", residual=fb)
    assert not fb.worker_zero and fb.worker.any(), "int8 lost nothing: the test lost its point"
    lost = fb.worker.copy()
    y = pycomm.allreduce(x, MPI.COMM_SELF, "none", residual=fb)
    assert np.array_equal(y, x + lost)


def test_reset_and_pickling_say_what_is_known() -> None:
    fb = ErrorFeedback(data(4))
    fb.reset()
    assert fb.worker_zero and not fb.worker.any()
    again = pickle.loads(pickle.dumps(fb))
    assert not again.worker_zero  # a checkpoint's residual is the caller's again
