#!/usr/bin/env bash
# Run every libFuzzer target of a build for a bounded time each and print one line per target
# (seconds, execs, cov, ft). Seeds come from tests/fuzz/corpus/<target>/ (read only); new
# inputs and crash artifacts go to a scratch directory, never into the repository. Targets run
# FUZZ_JOBS at a time (default: the cores of this machine), each on one core.
#   tests/fuzz/run_fuzzers.sh BUILD_DIR SECONDS_PER_TARGET [SCRATCH_DIR] [TARGET...]
set -uo pipefail
build=$1 secs=$2 scratch=${3:-$(mktemp -d /tmp/mpiucc-fuzz.XXXXXX)}
shift $(($# < 3 ? $# : 3))
corpus=$(cd "$(dirname "$0")" && pwd)/corpus
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for d in "$corpus"/fuzz_*; do targets+=("$(basename "$d")"); done
fi
mkdir -p "$scratch"
echo "fuzzing ${#targets[@]} targets for ${secs}s each; new inputs and artifacts in $scratch"
fuzz_one() { # target: its line of results (and a crash's first errors) in $scratch/$target.line
    local t=$1 log="$scratch/$1.log" rc execs last cov ft status=ok
    mkdir -p "$scratch/$t"
    "$build/$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=1024 -malloc_limit_mb=64 -print_final_stats=1 \
        -artifact_prefix="$scratch/$t-" "$scratch/$t" "$corpus/$t" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    [ $rc -ne 0 ] && status="CRASH (rc $rc, see $log)"
    {
        printf '%-24s %5ss  execs %10s  cov %5s  ft %6s  %s\n' "$t" "$secs" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$status"
        [ $rc -ne 0 ] && grep -E 'ERROR|contract violated|SUMMARY' "$log" | head -5
    } >"$scratch/$t.line"
}
jobs_at_once=${FUZZ_JOBS:-$(nproc)}
for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_at_once" ]; do wait -n; done
    fuzz_one "$t" &
done
wait
failed=0
for t in "${targets[@]}"; do
    cat "$scratch/$t.line"
    grep -q ' CRASH (rc' "$scratch/$t.line" && failed=1
done
exit $failed
