#!/usr/bin/env bash
# Energy per backward (BENCHMARKS.md, "the backward under the power cap"), two device calls back to back, FA4 carried
# as scripts/device_fa4_peers.sh carries it:
#   run: scripts/device_bwd_power.sh first    carry build/fa4/fa4.part.aa
#   run: scripts/device_bwd_power.sh second   carry build/fa4/fa4.part.ab
# The second: bench/bwd_power.py (ours, cuDNN, FA4: times in launch order, watts, joules per backward), then our
# backward set with and without its dQ reduce-adds (the PTX with those lines deleted: wrong dQ, the same work
# otherwise), each after a rest, `ptxgen bench --stats` beside power and clock samples every 50 ms ($OUT/smi.csv).
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
if [ "${1:-}" = first ]; then
    mkdir -p /tmp/fa4 && cp build/fa4/fa4.part.aa /tmp/fa4/ && ls -l /tmp/fa4
    exit
fi
log() { echo "$*" | tee -a "$OUT/power.txt"; }
log "$(nvidia-smi --query-gpu=name,driver_version,power.limit,power.max_limit --format=csv,noheader)"
if [ -f /tmp/fa4/fa4.part.aa ] && [ -f build/fa4/fa4.part.ab ]; then
    cat /tmp/fa4/fa4.part.aa build/fa4/fa4.part.ab | xz -d | tar xf - -C /tmp/fa4 || log "FA4 unpack failed"
fi
export PYTHONPATH=python:bench:/tmp/fa4/fa4:/tmp/fa4/fa4/nvidia_cutlass_dsl/dsl_packages PYTHONUNBUFFERED=1
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,clocks_event_reasons.active --format=csv -lms 50 >"$OUT/smi.csv" &
smi=$!
python3 bench/bwd_power.py "${@:2}" 2>&1 | grep -v "^# note" | tee -a "$OUT/power.txt"
S="--kernel attn_bwd --arch sm_90a --hdim 128 --b 4 --sq 4096 --sk 4096 --hq 32 --hkv 32"
mkdir -p "$OUT/ptx"
./ptxgen --arch sm_90a --kernel attn_bwd --hdim 128 -o "$OUT/ptx/base.ptx"
sed '/cp.reduce.async.bulk.tensor/d' "$OUT/ptx/base.ptx" >"$OUT/ptx/nodq.ptx"
for r in 1 2; do
    for v in base nodq; do
        sleep 8
        log "== $v round $r $(date +%T.%N)"
        # shellcheck disable=SC2086
        log "$(./ptxgen bench $S --ptx "$OUT/ptx/$v.ptx" --iters 100 --warmup 0 --stats 2>&1 | grep -E '^runs|^bench|main|pre|convert')"
    done
done
kill $smi
