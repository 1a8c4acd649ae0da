"""Device codec tests: Triton kernels on CUDA tensors, or under Triton's interpreter on CPU.

Without CUDA, TRITON_INTERPRET=1 is set here, before anything imports triton, so the same
kernels run on CPU tensors (small inputs only: the interpreter is slow). Without triton the
device codec tests skip; the staging tests need only torch.
"""

import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.fixture
def device():
    """Where the kernels run: the GPU when there is one, else the CPU interpreter."""
    return DEVICE
