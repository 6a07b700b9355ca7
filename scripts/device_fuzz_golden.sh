#!/usr/bin/env bash
# The golden file of tests/test_fuzz_alu.c on a GPU: seeds 1..N (default 3000) in SHARDS processes side by side (the
# driver's JIT of each program is most of the time), merged in seed order into $OUT/fuzz_alu.golden under the header
# the first shard wrote (the GPU, driver and date). Then, here: copy it to tests/fuzz_alu.golden and run
# `build/tests/test_fuzz_alu --known-out tests/fuzz_alu.known`.
# RAW=DIR also keeps each seed's raw outputs and inputs there (test_fuzz_alu --raw), DEVICE=sim runs the sim instead.
# usage: [DEVICE=sim] [RAW=DIR] scripts/device_fuzz_golden.sh [N] [SHARDS]
set -eu
n=${1:-3000} shards=${2:-8}
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
make -j16 build/tests/test_fuzz_alu >"$OUT/build_fuzz.log" 2>&1 || { tail -30 "$OUT/build_fuzz.log"; exit 1; }
tmp=$(mktemp -d)
per=$(( (n + shards - 1) / shards ))
pids=()
for i in $(seq 0 $((shards - 1))); do
    a=$((1 + i * per)) b=$(( (i + 1) * per )); [ $b -gt $n ] && b=$n; [ $a -gt $b ] && continue
    build/tests/test_fuzz_alu --device "${DEVICE:-cuda}" --seeds $a-$b --write "$tmp/part$i" ${RAW:+--raw "$RAW"} >"$tmp/log$i" 2>&1 & pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
cat "$tmp"/log* | tee "$OUT/fuzz_golden.log"
{ grep -h '^#' "$tmp/part0"; cat "$tmp"/part* | grep -v '^#' | sort -n; } >"$OUT/fuzz_alu.golden"
echo "fuzz golden: $(grep -vc '^#' "$OUT/fuzz_alu.golden") seeds, rc $rc"
rm -rf "$tmp"
exit $rc
