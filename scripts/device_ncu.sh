#!/usr/bin/env bash
# One device call: ncu (the toolkit's, --clock-control none) on the main kernels whose issue-16 goal is open (mode
# issue16, the default): what the tensor pipe, MUFU, memory and warp stalls say bounds it; or (mode sparse) on every
# kernel of a block-sparse attn_fwd set and the dense kernel of the same shape (issue 18's 10 % row): durations and
# SM active cycles (mean, min, max: the persistent grid's idle end) beside the same metrics. Each row: ptxgen bench at
# the benchmark shape, the profiled kernels picked by name. Output: one line of metrics per kernel.
# Mode source: one kernel (a name regex) of one `ptxgen bench` (the arguments after it) with ncu's source counters;
# the SASS source page (per-instruction warp stall samples) as CSV in $OUT/src_LABEL.csv.
# Mode dram: every kernel of the d 128 attn_bwd set (non-causal, causal) with DRAM bytes read and written and the L2's
# read, write and reduction sectors and hit rates: what crosses to memory beyond one pass over each tensor.
# Mode sparse_bwd: the block-sparse attn_bwd's main kernel at random:0.1 (b 16 x h 1 and b 1 x h 16).
# usage: scripts/device_ncu.sh [issue16|sparse|sparse_bwd|dram|source LABEL KERNEL_REGEX BENCH_ARGS...]
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
make -j16 all >/dev/null 2>&1 || { echo "build failed"; exit 1; }
. scripts/ncu_metrics.sh
[ -n "$NCU" ] || { echo "no ncu"; exit 1; }
prof() {   # prof LABEL KERNEL_REGEX PTXGEN_BENCH_ARGS...: the first launch of each kernel the regex names
    local label=$1 kre=$2
    shift 2
    timeout 300 "$NCU" --clock-control none --kernel-name "regex:$kre" --launch-count ${LAUNCHES:-1} --metrics "$m" --csv \
        ./ptxgen bench --iters 1 --warmup 0 "$@" >/tmp/ncu.csv 2>/tmp/ncu.err || { echo "$label: ncu failed: $(tail -2 /tmp/ncu.err)"; return; }
    python3 - "$label" /tmp/ncu.csv <<'PY'
import csv, sys
label, path = sys.argv[1], sys.argv[2]
rows = [r for r in csv.reader(l for l in open(path) if l.startswith('"'))]
head, vals = rows[0], rows[1:]
ii, ki = head.index("ID"), head.index("Kernel Name")
ni, vi = head.index("Metric Name"), head.index("Metric Value")
by = {}
for r in vals:
    by.setdefault((int(r[ii]), r[ki]), {})[r[ni]] = r[vi]
short = lambda k: k.replace("smsp__warp_issue_stalled_", "stall ").replace("_per_warp_active.pct", "").replace(".pct_of_peak_sustained", "")
for (i, name), d in sorted(by.items()):
    print(f"{label} [{name[:60]}]: " + "; ".join(f"{short(k)} {v}" for k, v in d.items()))
PY
}
if [ "${1:-issue16}" = source ]; then   # where the warps of one kernel stall, instruction by instruction (SASS)
    label=$2 kre=$3; shift 3
    rep=/tmp/ptxgen_src_$label
    timeout 400 "$NCU" --clock-control none --kernel-name "regex:$kre" --launch-count 1 --section SourceCounters \
        --section WarpStateStats --section LaunchStats -f -o "$rep" ./ptxgen bench --iters 1 --warmup 0 "$@" \
        >"$rep.log" 2>&1 || { echo "$label: ncu failed: $(tail -3 "$rep.log")"; exit 1; }
    "$NCU" -i "$rep.ncu-rep" --page source --csv --print-source sass >"$OUT/src_$label.csv" 2>"$rep.err" ||
        "$NCU" -i "$rep.ncu-rep" --page source --csv >"$OUT/src_$label.csv" 2>>"$rep.err"
    echo "$label: source page $(wc -l <"$OUT/src_$label.csv") lines $(head -c 300 "$rep.err")"
    "$NCU" -i "$rep.ncu-rep" --page details --csv 2>&1 | grep -E "Duration|Warp Cycles Per Issued|Eligible|Active Warps" | head -8
    exit 0
fi
if [ "${1:-issue16}" = dram ]; then
    m="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum"
    m="$m,lts__t_sectors_op_write.sum,lts__t_sectors_op_red.sum,lts__t_sector_op_read_hit_rate.pct"
    m="$m,lts__t_sector_op_red_hit_rate.pct,lts__t_sector_op_write_hit_rate.pct"
    S="--kernel attn_bwd --mma wgmma --b 4 --sq 4096 --sk 4096 --hdim 128 --hq 32 --hkv 32"
    LAUNCHES=3 prof "attn_bwd d128 set" "attn_bwd" $S
    LAUNCHES=3 prof "attn_bwd d128 causal set" "attn_bwd" $S --causal
    exit 0
fi
if [ "${1:-issue16}" = sparse_bwd ]; then   # the block-sparse backward's main kernel at 10 %, both shapes
    S="--kernel attn_bwd --arch sm_90a --sq 8192 --sk 8192 --hdim 128 --block-mask random:0.1"
    prof "random:0.1 b16 h1" "attn_bwd_wg_main" $S --b 16 --hq 1 --hkv 1
    prof "random:0.1 b1 h16" "attn_bwd_wg_main" $S --b 1 --hq 16 --hkv 16
    exit 0
fi
if [ "${1:-issue16}" = sparse ]; then   # both kernels of each set (the key lists, then the main kernel)
    S="--kernel attn_fwd --arch sm_90a --b 1 --sq 8192 --sk 8192 --hq 16 --hkv 16"
    prof "dense" "attn_" $S
    LAUNCHES=2 prof "random:1" "attn_" $S --block-mask random:1
    LAUNCHES=2 prof "random:0.1" "attn_" $S --block-mask random:0.1
    LAUNCHES=2 prof "random:0.1 one mask head" "attn_" $S --block-mask random:0.1 --mask-heads 1
    exit 0
fi
S="--b 4 --sq 4096 --sk 4096"   # the rows whose goal is open, at issue 16's shapes
prof "attn_fwd wgmma d128 h32" "attn_fwd_wg" --kernel attn_fwd --mma wgmma $S --hdim 128 --hq 32 --hkv 32
prof "attn_bwd wgmma d128 h32" "attn_bwd_wg_main" --kernel attn_bwd --mma wgmma $S --hdim 128 --hq 32 --hkv 32
M="--kernel mla_bwd --mma wgmma --sq 4096 --skv 8192 --topk 2048"
prof "mla_bwd wgmma h64" "mla_bwd_main_wg" $M --hq 64
prof "mla_bwd wgmma h128" "mla_bwd_main_wg" $M --hq 128
prof "mla_bwd wgmma h64 deterministic" "mla_bwd_main_wg" $M --hq 64 --tile deterministic=1
