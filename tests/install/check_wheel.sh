#!/usr/bin/env bash
# The package as users install it (issue 18): build the wheel with `pip wheel .`, install it into
# a fresh venv with only its declared extras [mpi,torch,train] (plus the CPU torch pin and an MPI
# runtime wheel), and use it from outside the source tree: mpiucc --version and info, the codec
# API, a 2-rank allreduce, DDP with the compress hook, a short `mpiucc train`; then the same job
# without matplotlib must finish (exit 0) with its summary, a note, and no plot.
#
#   tests/install/check_wheel.sh      (make test-wheel)
#   PYTHON=python3.12 WHEEL=wheelhouse/mpiucc-...whl tests/install/check_wheel.sh   (a given wheel)
#
# The work folder is removed on success and kept (its path printed) on failure.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$SRC/tests/install
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mpiucc-wheel.XXXXXX")
trap 'rc=$?; if [ $rc = 0 ]; then rm -rf "$WORK"; else echo "check_wheel: FAILED, see $WORK" >&2; fi' EXIT
VENV=$WORK/venv
T0=$SECONDS
step() { printf '\n== [%3ds] %s\n' $((SECONDS - T0)) "$*"; }
fail() { echo "check_wheel: $*" >&2; exit 1; }
# 2 ranks on any machine; a hang fails instead of blocking CI
mpirun() { OMP_NUM_THREADS=1 timeout 180 "$VENV/bin/mpiexec" -n 2 "$@"; }
# pip, less the warnings of a pip.conf that names local indexes absent on this machine
pip() { "$VENV/bin/pip" "$@" 2>&1 | sed '/is ignored: it is neither a file nor a directory/d'; }

step "fresh venv ($($PYTHON --version)); the CPU torch wheel installs while the wheel builds"
"$PYTHON" -m venv "$VENV"
# --only-binary: installing needs no compiler; --no-compile: no .pyc for torch's thousands of
# modules (a third of its install time); requirements-dev.txt only pins versions here
INSTALL=(install -q --only-binary=:all: --no-compile -c "$SRC/requirements-dev.txt")
"$VENV/bin/pip" "${INSTALL[@]}" "torch==2.13.0" > "$WORK/torch.log" 2>&1 &
torch_pid=$!

if [ -n "${WHEEL:-}" ]; then  # a wheel made elsewhere (a release's, RELEASING.md)
    WHEEL=$(realpath "$WHEEL")
else
    step "pip wheel . (isolated build; the C library's flags are checked for -march=native)"
    pip wheel -q --no-deps -w "$WORK/dist" --config-settings=build-dir="$WORK/build" "$SRC"
    WHEEL=$(ls "$WORK"/dist/mpiucc-*.whl)
    if grep -rqs -e '-march=native' -e '-mtune=native' "$WORK/build"; then
        fail "the wheel's C code was compiled for this machine (-march/-mtune=native)"
    fi
fi
echo "$(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KiB)"
wait $torch_pid || { sed '/is ignored/d' "$WORK/torch.log"; fail "pip install torch failed"; }

step "pip install the wheel [mpi,torch,train] + the mpich runtime wheel, binaries only"
pip "${INSTALL[@]}" "$WHEEL[mpi,torch,train]" "torch==2.13.0" "mpich==5.0.2"
"$VENV/bin/python" -c 'import importlib.metadata as m; print(*m.requires("mpiucc"), sep="\n")' \
    > "$WORK/requires.txt"
for extra in mpi torch train numcodecs test all; do
    grep -q "extra == \"$extra\"" "$WORK/requires.txt" || fail "the wheel declares no extra [$extra]"
done

mkdir "$WORK/run" && cd "$WORK/run"  # outside the source tree from here on
export PYTHONPATH=  # nothing from the checkout

step "mpiucc --version; mpiucc info"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$SRC/pyproject.toml")
[ "$("$VENV/bin/mpiucc" --version)" = "mpiucc $version" ] || fail "mpiucc --version is not $version"
"$VENV/bin/mpiucc" info | tee info.txt
for want in 'extra \[mpi\] +yes' 'extra \[torch\] +yes' 'extra \[train\] +yes' \
    'extra \[numcodecs\] +no \(numcodecs missing\)' 'codec SIMD level +(avx2|generic)'; do
    grep -Eq "^$want" info.txt || fail "mpiucc info lacks /$want/"
done

step "codec API (SIMD and generic paths)"
"$VENV/bin/python" "$HERE/check_codecs.py"

step "pycomm.allreduce on 2 ranks"
mpirun "$VENV/bin/python" "$HERE/check_allreduce.py"

step "DDP with mpiucc_compress_hook on 2 ranks"
mpirun "$VENV/bin/python" "$HERE/check_ddp_hook.py"

TRAIN=(--layers 2 --width 32 --heads 4 --seq 16 --batch 8 --micro-batches 2 --steps 2
    --eval-every 2 --val-batches 1 --data-limit-mb 0.5 --compress --no-progress)
step "mpiucc train on 2 ranks (tp 2, 2 steps, baseline and compressed)"
mpirun "$VENV/bin/mpiucc" train --tp 2 "${TRAIN[@]}" --baseline --out train | tail -n 4
for f in summary.txt metrics.json loss.png; do [ -s "train/$f" ] || fail "train/$f missing"; done

step "without matplotlib: mpiucc train (1 rank, compressed) exits 0 with summary, no plot"
pip uninstall -q -y matplotlib
"$VENV/bin/mpiucc" info > info-noplot.txt
grep -Eq '^extra \[train\] +no \(matplotlib missing\)' info-noplot.txt \
    || fail "mpiucc info does not report matplotlib missing"
OMP_NUM_THREADS=1 timeout 180 "$VENV/bin/mpiexec" -n 1 "$VENV/bin/mpiucc" train \
    "${TRAIN[@]}" --out noplot | tail -n 2
for f in summary.txt metrics.json; do [ -s "noplot/$f" ] || fail "noplot/$f missing"; done
[ ! -e noplot/loss.png ] || fail "noplot/loss.png written without matplotlib"
grep -q "note: loss.png not drawn: matplotlib is not installed (pip install 'mpiucc\[train\]')" \
    noplot/summary.txt || fail "noplot/summary.txt lacks the note on the missing plot"

step "wheel check passed"
times  # CPU time: this shell, then its children
