"""Which tests of torch's distributed suite the runner skips, and why.

The README beside this file has the same lists as tables; torch's own decorators skip more
(CUDA, NCCL, gloo-only features, world sizes), and the runner prints their reasons too.
"""

from __future__ import annotations

import fnmatch

#: Name patterns skipped by the runner: tests that need a device the CPU job has not.
SKIPPED_PATTERNS = {
    "*_cuda*": "CUDA tensors: the suite builds them from rank_to_GPU, empty without GPUs",
    "*nccl*": "NCCL only",
    "*gpu*": "GPU only",
}

#: Single tests skipped by the runner.
SKIPPED_TESTS = {
    "test_accumulate_gradients_no_sync": "builds its model only when BACKEND is mpi or gloo",
    "test_accumulate_gradients_no_sync_allreduce_hook": "as test_accumulate_gradients_no_sync",
    "test_accumulate_gradients_no_sync_allreduce_with_then_hook": "as the one above",
    "test_accumulate_gradients_no_sync_grad_is_view": "as the one above",
    "test_SyncBatchNorm_process_group": "needs torchvision (not installed)",
}


def skip_reason(name: str) -> str | None:
    """Why the runner skips test ``name``, or None to run it."""
    if name in SKIPPED_TESTS:
        return SKIPPED_TESTS[name]
    for pattern, why in SKIPPED_PATTERNS.items():
        if fnmatch.fnmatch(name, pattern):
            return why
    return None
