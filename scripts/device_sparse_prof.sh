#!/usr/bin/env bash
# One device call: where a block-sparse attn_fwd set's time goes (issue 18's 10 % row). ncu (the toolkit's,
# --clock-control none) on every kernel of one launch of the set: duration, SM active cycles (mean and max: the
# persistent grid's imbalance), tensor-pipe use and the largest stalls; the dense kernel of the same shape beside it.
# usage: scripts/device_sparse_prof.sh [ptxgen bench shape args...]; one line of metrics per kernel.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
make -j16 all >/dev/null 2>&1 || { echo "build failed"; exit 1; }
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "no ncu"; exit 1; }
m="gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,sm__cycles_elapsed.max"
m="$m,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__warps_eligible.avg.per_cycle_active"
for s in barrier long_scoreboard wait mio_throttle short_scoreboard; do m="$m,smsp__warp_issue_stalled_${s}_per_warp_active.pct"; done
prof() {   # prof LABEL PTXGEN_BENCH_ARGS...
    local label=$1
    shift
    timeout 200 "$NCU" --clock-control none --kernel-name regex:attn_ --metrics "$m" --csv \
        ./ptxgen bench --iters 1 --warmup 0 --kernel attn_fwd --arch sm_90a "$@" >/tmp/ncu.csv 2>/tmp/ncu.err ||
        { echo "$label: ncu failed: $(tail -2 /tmp/ncu.err)"; return; }
    python3 - "$label" /tmp/ncu.csv <<'PY'
import csv, sys
label, path = sys.argv[1], sys.argv[2]
rows = [r for r in csv.reader(l for l in open(path) if l.startswith('"'))]
head, vals = rows[0], rows[1:]
ki, ni, vi, ii = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value"), head.index("ID")
by = {}
for r in vals:
    by.setdefault((r[ii], r[ki]), {})[r[ni]] = r[vi]
short = lambda k: k.replace("smsp__warp_issue_stalled_", "stall ").replace("_per_warp_active.pct", "").replace("sm__", "")
for (i, name), d in sorted(by.items(), key=lambda x: int(x[0][0]))[-3:]:
    print(f"{label} | {name[:60]} | " + "; ".join(f"{short(k)} {v}" for k, v in d.items()))
PY
}
S=${*:-"--b 1 --sq 8192 --sk 8192 --hq 16 --hkv 16"}
prof "dense" $S
prof "random:1" $S --block-mask random:1
prof "random:0.1" $S --block-mask random:0.1
prof "random:0.1 one mask head" $S --block-mask random:0.1 --mask-heads 1
