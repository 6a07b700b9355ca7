# Sourced by the device scripts that run ncu (device_ncu.sh, device_fa4_sass.sh): NCU, the toolkit's ncu (empty where
# there is none), and m, the metrics they ask for: the pipes' and memories' utilisation, the warp stall reasons, and
# with NCU_COUNTS=1 the instruction, shared-memory, reduction and DRAM counts as well.
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
stalls="barrier long_scoreboard wait math_pipe_throttle mio_throttle short_scoreboard lg_throttle membar sleeping dispatch_stall no_instruction"
m="sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"
m="$m,sm__cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_active"
m="$m,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed"
m="$m,smsp__warps_eligible.avg.per_cycle_active,gpu__time_duration.sum"
m="$m,sm__cycles_active.avg,sm__cycles_active.min,sm__cycles_active.max,sm__cycles_elapsed.max"
if [ "${NCU_COUNTS:-0}" = 1 ]; then
    stalls="$stalls selected"
    m="$m,smsp__inst_executed.sum,sm__inst_executed_pipe_lsu.sum,smsp__inst_executed_op_shared_st.sum"
    m="$m,smsp__inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
    m="$m,lts__t_sectors_op_red.sum,lts__t_sectors_op_atom.sum,dram__bytes.sum"
fi
for s in $stalls; do m="$m,smsp__warp_issue_stalled_${s}_per_warp_active.pct"; done
