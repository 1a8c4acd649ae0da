#!/usr/bin/env bash
# Build UCC (../shared/third_party) against UCX from the PyPI wheel libucx-cu12, into a prefix.
#
#   tools/build_ucc.sh [PREFIX]        (default: build/ucc under the repository root)
#
# Network: `pip download` of one pinned wheel, nothing else. Idempotent: a prefix whose stamp
# matches the tarball's checksum, the wheel and the configure line is left as it is. Needs
# autoconf, automake and libtool (installed with apt-get when missing and run as root).
# Prints the UCC_HOME and LD_LIBRARY_PATH to export; `make build` then compiles pycomm's UCC
# layer (pycomm/ucc) against it.
#
# Environment: UCC_TARBALL (default ../shared/third_party/ucc-1.10.0.tar.gz from the root),
# UCX_WHEEL (pip requirement, default libucx-cu12==1.22.0), PYTHON (runs pip; default the
# repository's .venv, else python3), UCC_WITH_MPI (an MPI prefix: also builds ucc_perftest),
# JOBS (make -j, default 2).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="$(mkdir -p "${1:-$root/build/ucc}" && cd "${1:-$root/build/ucc}" && pwd)"
tarball="${UCC_TARBALL:-$root/../shared/third_party/ucc-1.10.0.tar.gz}"
wheel_req="${UCX_WHEEL:-libucx-cu12==1.22.0}"
jobs="${JOBS:-2}"
python="${PYTHON:-}"
if [ -z "$python" ]; then
    if [ -x "$root/.venv/bin/python" ]; then python="$root/.venv/bin/python"; else python=python3; fi
fi

say() { echo "build_ucc: $*" >&2; }

# -- the tarball and its checksum --
[ -f "$tarball" ] || { say "no UCC tarball at $tarball (set UCC_TARBALL)"; exit 1; }
if [ -f "$tarball.sha256" ]; then
    (cd "$(dirname "$tarball")" && sha256sum -c --quiet "$(basename "$tarball").sha256") \
        || { say "checksum mismatch: $tarball"; exit 1; }
else
    say "no $tarball.sha256: the tarball is not verified"
fi
sha="$(sha256sum "$tarball" | cut -d' ' -f1)"

configure_args=(--prefix="$prefix" --with-ucx="$prefix/ucx" --without-cuda --with-tls=ucp,self
                --disable-static)
[ -n "${UCC_WITH_MPI:-}" ] && configure_args+=(--with-mpi="$UCC_WITH_MPI")
stamp="tarball $sha; wheel $wheel_req; configure ${configure_args[*]}"

report() {
    echo "export UCC_HOME=$prefix"
    echo "export LD_LIBRARY_PATH=$prefix/lib:$prefix/ucx/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
}

if [ -f "$prefix/.build_ucc.stamp" ] && [ "$(cat "$prefix/.build_ucc.stamp")" = "$stamp" ] \
    && [ -f "$prefix/lib/libucc.so" ]; then
    say "up to date in $prefix"
    report
    exit 0
fi

# -- the autotools --
missing=()
for tool in autoconf automake libtoolize make; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        say "missing ${missing[*]}: install autoconf automake libtool make"; exit 1
    fi
    say "installing autoconf automake libtool (missing: ${missing[*]})"
    apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q autoconf automake libtool make >&2
fi

work="$prefix/.src"
rm -rf "$work" "$prefix/ucx"
mkdir -p "$work/wheel"

# -- UCX from the wheel: headers and libraries under libucx/ --
say "downloading $wheel_req"
"$python" -m pip download -q --no-deps --only-binary=:all: -d "$work/wheel" "$wheel_req" >&2
whl="$(ls "$work"/wheel/*.whl | head -n1)"
"$python" -m zipfile -e "$whl" "$work/wheel/unpacked"
cp -a "$work/wheel/unpacked/libucx" "$prefix/ucx"
rm -rf "$work/wheel"
# The wheel's libtool archives name its builder's paths; libtool fails on them.
rm -f "$prefix"/ucx/lib/*.la "$prefix"/ucx/lib/ucx/*.la

# -- UCC --
say "building UCC from $(basename "$tarball") (a few minutes)"
tar -xzf "$tarball" -C "$work"
# UCC's autogen names the git revision it finds: not the enclosing repository's.
export GIT_CEILING_DIRECTORIES="$work"
src="$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'ucc*' | head -n1)"
cd "$src"
./autogen.sh >"$work/autogen.log" 2>&1 || { tail -30 "$work/autogen.log" >&2; exit 1; }
./configure "${configure_args[@]}" >"$work/configure.log" 2>&1 \
    || { tail -30 "$work/configure.log" >&2; exit 1; }
make -j"$jobs" >"$work/make.log" 2>&1 || { tail -40 "$work/make.log" >&2; exit 1; }
make install >"$work/install.log" 2>&1 || { tail -30 "$work/install.log" >&2; exit 1; }
cd "$root"
rm -rf "$src"  # keep the logs, not the 100 MB object tree
echo "$stamp" >"$prefix/.build_ucc.stamp"
LD_LIBRARY_PATH="$prefix/lib:$prefix/ucx/lib" "$prefix/bin/ucc_info" -v >&2
say "done: $prefix"
report
