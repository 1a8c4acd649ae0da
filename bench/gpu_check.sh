#!/usr/bin/env bash
# Device checks of the accelerator path on one GPU, at most about 7 minutes, no network:
#   1. build the extension in place with what is installed (MPI from carried wheels in .whl/)
#   2. the device tests: Triton frames equal the C frames on the GPU, the staging, the DDP hook
#      on CUDA buckets equal to the CPU hook (1 and 2 ranks), the backend on CUDA tensors
#   3. bench/device_bench.py: codec throughput beside torch's casts and a device copy, PCIe
#      copies and the staged hook on a 25 MB bucket
# Logs (7 files) and the table go to $OUT (default bench/out/gpu_check). Every step runs even if one before
# it failed; the exit status counts the failures.
#   bash bench/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/out/gpu_check}
PY=${PY:-python3}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
failed=0
step() {  # step NAME TIMEOUT_S COMMAND...: run, log to $OUT/NAME.log, count a failure
    local name=$1 limit=$2
    shift 2
    echo "== $name: $*"
    local t0=$SECONDS
    if timeout "$limit" "$@" >"$OUT/$name.log" 2>&1; then
        echo "   ok ($((SECONDS - t0)) s)"
    else
        echo "   FAILED ($((SECONDS - t0)) s, status $?); last lines:"
        tail -25 "$OUT/$name.log"
        failed=$((failed + 1))
    fi
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
if compgen -G ".whl/*.whl" >/dev/null; then
    step wheels 120 "$PY" -m pip install -q --no-index --no-deps --no-compile .whl/*.whl
fi
step build 240 "$PY" -m pip install -q --no-build-isolation --no-deps -e .
"$PY" - <<'EOF'
import torch, triton, numpy, pycodecs
print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__,
      "numpy", numpy.__version__, torch.cuda.get_device_name())
EOF
MPIEXEC=$(dirname "$(command -v "$PY")")/mpiexec
step bench 150 "$PY" bench/device_bench.py --size 1G --tune --out "$OUT/device_bench.md"
cat "$OUT/device_bench.md" 2>/dev/null
step ddp_hook_cuda_2 120 "$MPIEXEC" -n 2 "$PY" tests/device/mpi/check_staged_hook.py cuda
step backend_cuda_2 60 "$MPIEXEC" -n 2 "$PY" -X faulthandler tests/distributed/mpi/check_cuda.py
step tests 300 "$PY" -m pytest -q --maxfail=5 -p no:cacheprovider tests/device
echo "gpu_check: $failed step(s) failed"
exit "$failed"
