#!/usr/bin/env bash
# One device call on the wgmma attn_bwd's two timing modes (BENCHMARKS.md): every timed run in launch order
# (`bench --stats`), long runs and fresh processes after a pause, beside the SM clock, the power and the clock-event
# reasons sampled every 100 ms. Everything goes to stdout and $OUT/modes.txt; the samples to $OUT/clocks.csv.
# usage: scripts/device_bwd_modes.sh
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
log() { echo "$*" | tee -a "$OUT/modes.txt"; }
log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
make -j16 ptxgen >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_event_reasons.active --format=csv -lms 100 >"$OUT/clocks.csv" &
smi=$!
S="--kernel attn_bwd --mma wgmma --hdim 128 --b 4 --sq 4096 --sk 4096 --hq 32 --hkv 32"
for t in bm=80 bm=64; do
    log "== $t, 60 runs $(date +%T.%N)"
    log "$(./ptxgen bench $S --tile $t --iters 60 --warmup 3 --stats 2>&1 | grep -vE '^(kernel|  registers|shape)')"
done
for i in 1 2 3 4; do
    sleep 3
    log "== fresh process $i after 3 s idle, no warm-up $(date +%T.%N)"
    log "$(./ptxgen bench $S --iters 12 --warmup 0 --stats 2>&1 | grep -E '^runs|^bench')"
done
log "== causal, 40 runs $(date +%T.%N)"
log "$(./ptxgen bench $S --causal --iters 40 --warmup 3 --stats 2>&1 | grep -E '^runs|^bench|main')"
kill $smi
