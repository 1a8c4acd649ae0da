#!/usr/bin/env bash
# Device checks of the accelerator path on one GPU, no network, about 7 minutes at most:
#   setup   MPI from carried wheels in .whl/ only if mpi4py or mpiexec is missing; build in place
#   frames  the device tests: Triton frames (quantizers with and without error feedback, ebq
#           fast) equal the C frames on the GPU; staging with CUDA tensors
#   bench   bench/device_bench.py: codec throughput beside torch's casts and a device copy,
#           PCIe copies, the hook on a 25 MB bucket (device codecs and staged)
#   hook    DDP with the hook on CUDA buckets equals the CPU hook bit for bit, 2 ranks
#   backend the mpiucc backend on CUDA tensors, 2 ranks; if it fails, again with MPICH's GPU
#           support and UCX's memory hooks off, then on 1 rank (which of them fails says why)
#   tune    the launch-shape sweep (last: only if time is left)
# Every part runs under its own timeout (and the whole under BUDGET_S), with faulthandler on and
# unbuffered output, logs into $OUT (8 files at most: setup.log frames.log bench.log
# device_bench.md hook.log backend.log tune.md summary.txt); a failed part does not stop the
# others. The end of the output is the bench table and one summary table.
#   bash bench/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/out/gpu_check}
PY=${PY:-python3}
BUDGET_S=${BUDGET_S:-390}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1 OMP_NUM_THREADS=1
SAFE_MPI_ENV=(MPIR_CVAR_ENABLE_GPU=0 UCX_MEM_EVENTS=no UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none)
summary=()
failed=0

part() {  # part NAME LOG LIMIT_S COMMAND...: run under timeout, append to $OUT/LOG, record it
    local name=$1 logname=$2 log=$OUT/$2 limit=$3
    shift 3
    local left=$((BUDGET_S - SECONDS))
    if ((left < 15)); then
        summary+=("$(printf '%-22s %-8s %6s  %s' "$name" SKIPPED "-" "no time left")")
        return 2
    fi
    ((limit > left)) && limit=$left
    echo "== $name ($limit s): $*" | tee -a "$log"
    local t0=$SECONDS rc
    timeout -k 5 "$limit" "$@" >>"$log" 2>&1
    rc=$?
    local status=ok
    if ((rc == 124 || rc == 137)); then
        status=TIMEOUT
    elif ((rc != 0)); then
        status="FAILED($rc)"
    fi
    echo "== $name: $status after $((SECONDS - t0)) s" >>"$log"
    summary+=("$(printf '%-22s %-8s %5ss  %s' "$name" "$status" "$((SECONDS - t0))" "$logname")")
    if [[ $status != ok ]]; then
        failed=$((failed + 1))
        echo "   $status; last lines of $logname:"
        tail -12 "$log" | cut -c1-200
        return 1
    fi
    return 0
}

{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    "$PY" -c 'import sys; print(sys.executable, sys.version)'
} >"$OUT/setup.log" 2>&1
MPIEXEC=$(dirname "$(command -v "$PY")")/mpiexec
mpi_ok() { [[ -x $MPIEXEC ]] && "$PY" -c 'from mpi4py import MPI; MPI.Get_library_version()' >/dev/null 2>&1; }
if ! mpi_ok && compgen -G ".whl/*.whl" >/dev/null; then
    part wheels setup.log 90 "$PY" -m pip install -q --no-index --no-deps --no-compile .whl/*.whl
fi
part build setup.log 240 "$PY" -m pip install -q --no-build-isolation --no-deps -e .
part versions setup.log 60 "$PY" - <<'EOF'
import torch, triton, numpy, pycodecs
print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__,
      "numpy", numpy.__version__, torch.cuda.get_device_name())
try:
    from mpi4py import MPI
    print(MPI.Get_library_version().splitlines()[0])
except Exception as exc:
    print("no MPI:", exc)
EOF
head -3 "$OUT/setup.log"
tail -2 "$OUT/setup.log"

PYTEST=("$PY" -m pytest -q -rs -p no:cacheprovider --maxfail=10)
part frames frames.log 150 "${PYTEST[@]}" tests/device -k "not through_staging and not cuda_buckets"
part bench bench.log 150 "$PY" bench/device_bench.py --size 1G --out "$OUT/device_bench.md"
if mpi_ok; then
    part hook_cuda_2 hook.log 120 "$MPIEXEC" -n 2 "$PY" tests/device/mpi/check_staged_hook.py cuda
    if ! part backend_cuda_2 backend.log 60 "$MPIEXEC" -n 2 "$PY" tests/distributed/mpi/check_cuda.py; then
        part backend_cuda_2_safe backend.log 60 env "${SAFE_MPI_ENV[@]}" \
            "$MPIEXEC" -n 2 "$PY" tests/distributed/mpi/check_cuda.py
        part backend_cuda_1 backend.log 45 "$MPIEXEC" -n 1 "$PY" tests/distributed/mpi/check_cuda.py
    fi
else
    summary+=("$(printf '%-22s %-8s %6s  %s' "mpi parts" SKIPPED "-" "no mpi4py/mpiexec, no .whl")")
fi
part tune bench.log 90 "$PY" bench/device_bench.py --size 256M --tune --out "$OUT/tune.md"

echo
cat "$OUT/device_bench.md" 2>/dev/null || echo "(no bench table)"
{
    echo "gpu_check: $failed part(s) failed, $SECONDS s in all; logs in $OUT"
    printf '%-22s %-8s %6s  %s\n' part status time log
    printf '%s\n' "${summary[@]}"
} | tee "$OUT/summary.txt"
exit "$failed"
