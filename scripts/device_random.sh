#!/usr/bin/env bash
# One device call of random checks (scripts/random_checks.py): large shapes against the float64 references, then small
# ones under compute-sanitizer memcheck and racecheck (a finding fails the run). Logs under $OUT.
# usage: scripts/device_random.sh [SECONDS_EACH (150)]
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 ptxgen >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
secs=${1:-150}
run() {   # run NAME ARGS...
    local name=$1; shift
    python3 scripts/random_checks.py --device cuda --seconds "$secs" --seed "$RANDOM" "$@" >"$OUT/$name.log" 2>&1
    echo "$name: $(head -1 "$OUT/$name.log") ... $(tail -1 "$OUT/$name.log")"
    grep -A12 "^FAIL" "$OUT/$name.log" | head -40
}
run large --size large --archs sm_90a,sm_90a,sm_90 --timeout 120
run memcheck --archs sm_90a,sm_90 --timeout 200 --wrap "compute-sanitizer --tool memcheck --error-exitcode 3"
run racecheck --archs sm_90a --timeout 200 --wrap "compute-sanitizer --tool racecheck --error-exitcode 3"
