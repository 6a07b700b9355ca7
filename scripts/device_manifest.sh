#!/usr/bin/env bash
# The manifest-only launcher (tests/test_manifest_sim.c) on a GPU: sets the GPU can run (wgmma sm_90a, mma.sync
# sm_90), each generated here and launched from its PTX and JSON alone on ragged shapes with a fresh seed, against
# float64 (every CPU). usage: scripts/device_manifest.sh     (logs under $OUT)
set -u
OUT=${OUT:-/tmp/ptxgen_out}; mkdir -p "$OUT"
make -j16 ptxgen build/tests/test_manifest_sim >"$OUT/build_manifest.log" 2>&1 || { tail -20 "$OUT/build_manifest.log"; exit 1; }
dir=$(mktemp -d) n=0 bad=0
while IFS='|' read -r name emit run; do
    [ -z "$name" ] && continue
    n=$((n + 1))
    # shellcheck disable=SC2086
    if ! ./ptxgen $emit -o "$dir/$n.ptx" --manifest "$dir/$n.json" 2>"$dir/err"; then echo "FAIL $name: $(head -c 200 "$dir/err")"; bad=$((bad + 1)); continue; fi
    # shellcheck disable=SC2086
    timeout 300 build/tests/test_manifest_sim "$dir/$n.ptx" "$dir/$n.json" --device cuda --seed $((RANDOM + 1)) $run >"$dir/out" 2>&1
    last=$(tail -n 1 "$dir/out")
    case $last in *" 0 failed") echo "PASS $name: $(head -n 1 "$dir/out" | sed 's/.*: b=/b=/; s/.*: s_q=/s_q=/') $(grep -E 'rel_l2' "$dir/out" | tr -s ' \n' ' ')";;
        *) echo "FAIL $name: $(grep -E 'FAIL' "$dir/out" | head -3 | tr '\n' ' ') $last"; bad=$((bad + 1));; esac
done <<'EOF_SETS' | tee "$OUT/manifest_gpu.txt"
wgmma attn_fwd causal GQA|--arch sm_90a --kernel attn_fwd --causal|--b 2 --sq 1000 --sk 1300 --hq 8 --hkv 2
wgmma attn_fwd d64 fp16|--arch sm_90a --kernel attn_fwd --hdim 64 --dtype fp16|--b 1 --sq 2049 --sk 2049 --hq 4 --hkv 4
wgmma attn_fwd d256|--arch sm_90a --kernel attn_fwd --hdim 256|--b 1 --sq 777 --sk 1500 --hq 4 --hkv 1
wgmma attn_fwd block-sparse causal|--arch sm_90a --kernel attn_fwd --block-m 128 --block-n 128 --causal|--b 2 --sq 1000 --sk 1200 --hq 4 --hkv 2
wgmma attn_bwd causal GQA|--arch sm_90a --kernel attn_bwd --causal|--b 2 --sq 1000 --sk 1300 --hq 8 --hkv 2
wgmma attn_bwd deterministic|--arch sm_90a --kernel attn_bwd --tile deterministic=1|--b 1 --sq 900 --sk 1100 --hq 4 --hkv 4
wgmma attn_bwd d64|--arch sm_90a --kernel attn_bwd --hdim 64|--b 1 --sq 2000 --sk 1000 --hq 4 --hkv 1
wgmma attn_bwd block-sparse|--arch sm_90a --kernel attn_bwd --block-m 128 --block-n 128|--b 1 --sq 1000 --sk 1100 --hq 4 --hkv 2
wgmma attn_bwd d256 causal GQA|--arch sm_90a --kernel attn_bwd --hdim 256 --causal|--b 2 --sq 1000 --sk 1300 --hq 4 --hkv 2
wgmma attn_bwd d256 deterministic varlen|--arch sm_90a --kernel attn_bwd --hdim 256 --varlen --tile deterministic=1|--varlen 1000,0,37,1300,511 --varlen-k 1200,30,0,1500,511 --hq 4 --hkv 1
mma.sync attn_fwd causal GQA|--arch sm_90 --kernel attn_fwd --causal|--b 2 --sq 700 --sk 900 --hq 4 --hkv 2
mma.sync attn_bwd causal GQA|--arch sm_90 --kernel attn_bwd --causal|--b 1 --sq 700 --sk 900 --hq 4 --hkv 2
wgmma attn_fwd varlen causal GQA|--arch sm_90a --kernel attn_fwd --varlen --causal|--varlen 1000,0,37,1300,511 --varlen-k 1200,30,0,1500,511 --hq 8 --hkv 2
wgmma attn_bwd varlen causal GQA|--arch sm_90a --kernel attn_bwd --varlen --causal|--varlen 1000,0,37,1300,511 --varlen-k 1200,30,0,1500,511 --hq 8 --hkv 2
mma.sync attn_bwd varlen|--arch sm_90 --kernel attn_bwd --varlen|--varlen 700,1,900 --varlen-k 650,0,1000 --hq 4 --hkv 2
wgmma attn_fwd paged causal GQA|--arch sm_90a --kernel attn_fwd --page-size 64 --causal|--b 4 --sq 300 --sk 3000 --hq 8 --hkv 2
mma.sync attn_fwd paged decode|--arch sm_90 --kernel attn_fwd --page-size 64|--b 8 --sq 1 --sk 4000 --hq 16 --hkv 2
wgmma attn_fwd split-KV|--arch sm_90a --kernel attn_fwd --split-kv --splits 7 --causal|--b 1 --sq 200 --sk 30000 --hq 4 --hkv 1 --splits 7
wgmma mla_fwd|--arch sm_90a --kernel mla_fwd|--sq 64 --skv 5000 --hq 128 --topk 2048 --topk-length
wgmma mla_bwd|--arch sm_90a --kernel mla_bwd|--sq 32 --skv 3000 --hq 64 --topk 1024
wgmma mla_bwd deterministic|--arch sm_90a --kernel mla_bwd --tile deterministic=1|--sq 16 --skv 2000 --hq 128 --topk 512
EOF_SETS
rm -rf "$dir"
