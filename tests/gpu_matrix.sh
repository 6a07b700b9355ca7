#!/usr/bin/env bash
# make gpu-test: ptxgen check over a shape matrix on the CUDA device.
# Ragged lengths, GQA/MQA, causal with s_q != s_k (incl. rows that see no key),
# runtime strides (--pad), bf16 and fp16, every head dim. Then xcheck: the same
# PTX and inputs on the GPU and on the sim, compared element by element, and
# the sim's planted-bug suite's correct kernel run on the GPU. attn_bwd the same
# way, plus deterministic sets (check runs them twice and compares bits).
# First of all, selfcheck proves the GPU references (runner/gpu_ref.c) against
# the float64 CPU ones: check's default --ref auto judges with them above
# 20 GFLOP. Then, after the matrices, they judge check at realistic shapes
# (--ref gpu), and auto must pick the CPU one below 20 GFLOP, the GPU one above.
# mla_bwd's matrix runs once the library emits it (a SKIP line until then).
set -u
cd "$(dirname "$0")/.."
# GPU_MATRIX_SHARD=i/n runs only every n-th item from the i-th (0-based): n shards run side by side cover the matrix
# once, each item with the seed it has in a whole run (the CPU references take one core each; the GPU has room)
IFS=/ read -r shard_i shard_n <<<"${GPU_MATRIX_SHARD:-0/1}"
if ! [[ "$shard_i" =~ ^[0-9]+$ && "$shard_n" =~ ^[1-9][0-9]*$ ]] || [ "$shard_i" -ge "$shard_n" ]; then
    echo "gpu-test: GPU_MATRIX_SHARD=${GPU_MATRIX_SHARD} is not i/n with 0 <= i < n" >&2; exit 2
fi
probe=$(mktemp "${TMPDIR:-/tmp}/ptxgen_probe.XXXXXX")   # a file of its own: shards probe side by side
if ! ./ptxgen check --kernel attn_fwd --sq 1 --sk 1 --hq 1 --hkv 1 >"$probe" 2>&1; then
    if grep -q "no CUDA driver" "$probe"; then
        rm -f "$probe"
        echo "gpu-test: skipped: no CUDA driver on this machine"
        exit 0
    fi
fi
rm -f "$probe"
pass=0; fail=0; skip=0; seed=100
item=-1
mine() {   # the next item: this shard's?
    item=$((item + 1))
    [ $((item % shard_n)) -eq "$shard_i" ] && return 0
    skip=$((skip + 1)); return 1
}
mode=check
kern=attn_fwd
run() {   # run <label> <args...>: ptxgen $mode --kernel $kern (out: its output; empty where another shard runs it)
    local label=$1; shift
    seed=$((seed + 1)); out=
    mine || return 0
    if out=$(timeout 300 ./ptxgen $mode --kernel $kern --seed $seed "$@" 2>&1); then
        pass=$((pass + 1)); echo "PASS $mode $kern $label :: $(echo "$out" | grep -E '^(reference:|  [a-z ]*(o|lse|dq|dk|dv|dkv|sim vs gpu|deterministic):)' | tr -s ' ' | tr '\n' ' ')"
    else
        fail=$((fail + 1)); echo "FAIL $mode $kern $label"; echo "$out" | sed 's/^/    /'
    fi
}
# every shard proves the GPU references it may judge by (a pass counted by shard 0 alone, a failure by each shard)
if out=$(./ptxgen selfcheck 2>&1); then
    gpu_ref=1; [ "$shard_i" = 0 ] && { pass=$((pass + 1)); echo "PASS selfcheck of the GPU references :: $(echo "$out" | tail -n 2 | tr '\n' ' ')"; }
else
    gpu_ref=0; fail=$((fail + 1)); echo "FAIL selfcheck of the GPU references"; echo "$out" | sed 's/^/    /'
fi
shapes=("1 1" "77 130" "130 77" "1000 1000" "4099 4099" "77 1000" "1000 77")
shape_matrix() {   # shape_matrix D: every dtype x causal x shape of $kern at head dim D (fp16 skips s=4099)
  local d=$1 dt c sh
  for dt in bf16 fp16; do
    for c in "" "--causal"; do
      for sh in "${shapes[@]}"; do
        set -- $sh
        [ "$dt" = fp16 ] && [ "$1" = 4099 ] && continue
        run "d=$d $dt ${c:-full} s_q=$1 s_k=$2 hq=4 hkv=4" --hdim $d --dtype $dt $c --sq $1 --sk $2 --hq 4 --hkv 4
      done
    done
  done
}
for d in 64 128 256; do
  shape_matrix $d
  run "d=$d GQA 8:1 causal s=1000/1537 pad=8" --hdim $d --causal --sq 1000 --sk 1537 --hq 16 --hkv 2 --b 2 --pad 8
  run "d=$d MQA s=333 b=3" --hdim $d --sq 333 --sk 333 --hq 8 --hkv 1 --b 3
done
# check takes the GPU's own target (sm_90a on an H100/H200), where --mma auto picks wgmma for d 64 and 128
# at every head dim: the shape matrix above ran it. The mma.sync kernel at each head dim and the tiles of each:
for d in 64 128 256; do
  for c in "" "--causal"; do
    run "mma.sync d=$d ${c:-full} GQA 4:1 s=1000/1537 pad=8" --mma sync --hdim $d $c --sq 1000 --sk 1537 --hq 8 --hkv 2 --pad 8
    run "mma.sync d=$d fp16 ${c:-full} s=77/1000" --mma sync --hdim $d --dtype fp16 $c --sq 77 --sk 1000 --hq 4 --hkv 4
  done
done
for t in "bm=128,bn=64,warps=4" "bm=64,bn=64,warps=4" "bm=128,bn=128,warps=8" "bm=128,bn=32,warps=4" "bm=64,bn=32,warps=4"; do
  run "mma.sync d=128 tile $t causal s=777/1000" --mma sync --hdim 128 --tile $t --causal --sq 777 --sk 1000 --hq 4 --hkv 2
done
for f in "64 bm=64,bn=64,stages=3" "64 bm=192,bn=64" "64 bn=192" "128 bn=96" "128 bm=64,bn=96,stages=4" "128 pingpong=0" \
         "128 producer=1,bn=96" "128 producer=1,pingpong=0,bn=64" "256 pingpong=0" "256 bm=64,stages=3"; do
  set -- $f
  run "wgmma d=$1 tile $2 causal s=777/1000" --mma wgmma --hdim $1 --tile $2 --causal --sq 777 --sk 1000 --hq 4 --hkv 2
  run "wgmma d=$1 tile $2 s=4099/333 GQA pad=8" --mma wgmma --hdim $1 --tile $2 --sq 4099 --sk 333 --hq 8 --hkv 2 --pad 8
done
# persistent CTAs (tile key persist; the default where it measured faster): off, one CTA walking every tile, a few
for t in "persist=0" "persist=1" "persist=3,bm=64" "persist=132" "persist=3,qbufs=1"; do
  run "wgmma d=128 tile $t causal s=777/1000" --mma wgmma --hdim 128 --tile $t --causal --sq 777 --sk 1000 --hq 4 --hkv 2
  run "wgmma d=64 tile $t s=4099/333 GQA pad=8" --mma wgmma --hdim 64 --tile $t --sq 4099 --sk 333 --hq 8 --hkv 2 --pad 8
done
mode=xcheck
for d in 64 128 256; do
  for dt in bf16 fp16; do
    for c in "" "--causal"; do
      run "d=$d $dt ${c:-full} s_q=77 s_k=130" --hdim $d --dtype $dt $c --sq 77 --sk 130 --hq 2 --hkv 1
      run "d=$d $dt ${c:-full} s_q=300 s_k=517 GQA pad=8" --hdim $d --dtype $dt $c --sq 300 --sk 517 --hq 4 --hkv 2 --pad 8
    done
  done
done
run "mma.sync d=128 tile bm=64,bn=32,warps=4 causal s=150/77" --mma sync --hdim 128 --tile bm=64,bn=32,warps=4 --causal --sq 150 --sk 77
for t in pingpong=0 producer=1 bm=64,bn=64,stages=4; do
  run "wgmma d=64 tile $t causal s=150/377 GQA" --mma wgmma --hdim 64 --tile $t --causal --sq 150 --sk 377 --hq 4 --hkv 2
done
kern=attn_bwd
mode=check
for d in 64 128; do
  shape_matrix $d
  run "d=$d GQA 8:1 causal s=1000/1537 pad=8" --hdim $d --causal --sq 1000 --sk 1537 --hq 16 --hkv 2 --b 2 --pad 8
  run "d=$d GQA 8:1 s=2048" --hdim $d --sq 2048 --sk 2048 --hq 16 --hkv 2 --b 1
  run "d=$d MQA s=333 b=3" --hdim $d --sq 333 --sk 333 --hq 8 --hkv 1 --b 3
  for c in "" "--causal"; do
    run "d=$d deterministic ${c:-full} GQA 4:1 s=777/1000 pad=8" --hdim $d --tile deterministic=1 $c --sq 777 --sk 1000 --hq 8 --hkv 2 --pad 8
    run "d=$d deterministic ${c:-full} s=1000/77 fp16" --hdim $d --tile deterministic=1 $c --sq 1000 --sk 77 --hq 4 --hkv 4 --dtype fp16
  done
done
# on sm_90a the lines above run the wgmma set (--mma auto); the mma.sync set and each family's tiles here
for d in 64 128; do
  run "mma.sync d=$d GQA 8:1 causal s=1000/1537 pad=8" --mma sync --hdim $d --causal --sq 1000 --sk 1537 --hq 16 --hkv 2 --b 2 --pad 8
  run "mma.sync d=$d atomics fp16 s=1000/77" --mma sync --hdim $d --tile deterministic=0 --sq 1000 --sk 77 --hq 4 --hkv 4 --dtype fp16
done
for t in "bm=64,bn=128,warps=8" "bm=128,bn=128,warps=8" "bm=64,bn=128,warps=4"; do
  for d in 64 128; do
    ./ptxgen --plan --arch sm_90 --kernel attn_bwd --hdim $d --tile $t >/dev/null 2>&1 || continue
    run "mma.sync d=$d tile $t causal s=777/1000 GQA" --mma sync --hdim $d --tile $t --causal --sq 777 --sk 1000 --hq 4 --hkv 2
  done
done
for f in "64 stages=1" "64 bn=64,bm=64" "64 bn=64,bm=64,stages=3,deterministic=1" "128 stages=1" "128 stages=1,deterministic=1"; do
  set -- $f
  run "wgmma d=$1 tile $2 causal s=777/1000 GQA" --mma wgmma --hdim $1 --tile $2 --causal --sq 777 --sk 1000 --hq 4 --hkv 2
done
# deterministic=1 in the wgmma family: GQA (the chain down from key block 0) and MHA (up from the last key
# block); then bench, which also times the main kernel alone: its semaphores must come back to 0 by themselves
for c in "" "--causal"; do
  run "wgmma deterministic d=128 MHA ${c:-full} s=1000/1537 b=2" --mma wgmma --hdim 128 $c --tile deterministic=1 --sq 1000 --sk 1537 --hq 4 --hkv 4 --b 2
  run "wgmma deterministic d=64 GQA 4:1 ${c:-full} s=1537/1000" --mma wgmma --hdim 64 $c --tile deterministic=1 --sq 1537 --sk 1000 --hq 8 --hkv 2
done
mode=bench
run "wgmma deterministic d=128 causal, the main kernel timed alone" --mma wgmma --hdim 128 --causal --tile deterministic=1 --sq 1000 --sk 1000 --hq 4 --hkv 4 --iters 3 --warmup 1
mode=xcheck
for d in 64 128; do
  for c in "" "--causal"; do
    run "d=$d ${c:-full} s_q=77 s_k=130" --hdim $d $c --sq 77 --sk 130 --hq 2 --hkv 1
    run "d=$d fp16 ${c:-full} s_q=200 s_k=129 GQA pad=8 deterministic" --hdim $d --dtype fp16 $c --sq 200 --sk 129 --hq 4 --hkv 2 --pad 8 --tile deterministic=1
  done
done
ref_run() {   # ref_run <label> <args...>: run judged by the GPU reference, once selfcheck has proven it
  if [ $gpu_ref = 1 ]; then run "$@" --ref gpu
  else seed=$((seed + 1)); mine && { fail=$((fail + 1)); echo "FAIL $mode $kern $1: not run (the GPU references failed selfcheck)"; }; fi
}
mode=check
kern=attn_fwd
for c in "" "--causal"; do
  ref_run "GPU ref d=128 ${c:-full} b=2 s=4096 h=16" --hdim 128 $c --b 2 --sq 4096 --sk 4096 --hq 16 --hkv 16
done
for want in "cpu 1024 8" "gpu 4096 4"; do   # 4.3 and 34.4 GFLOP
  set -- $want
  run "default --ref (auto) d=128 s=$2 h=$3" --hdim 128 --sq $2 --sk $2 --hq $3 --hkv $3
  [ -z "$out" ] && continue   # another shard's
  if echo "$out" | grep -q "^reference: $1[ ,]"; then pass=$((pass + 1)); echo "PASS --ref auto picked the $1 reference at s=$2 h=$3"
  else fail=$((fail + 1)); echo "FAIL --ref auto did not pick the $1 reference at s=$2 h=$3: $(echo "$out" | grep '^reference:')"; fi
done
kern=attn_bwd
ref_run "GPU ref d=128 causal GQA 2:1 b=1 s=4096 h=8" --hdim 128 --causal --b 1 --sq 4096 --sk 4096 --hq 8 --hkv 4
kern=mla_fwd
# float64 reference: invalid/duplicate indices, empty tokens, ragged head blocks, padded strides. The GPU's
# target (sm_90a) runs the wgmma kernel by --mma auto; then the mma.sync kernel at every tile.
for args in "--sq 32 --skv 8192 --hq 128 --topk 2048 --ref cpu" "--sq 40 --skv 8192 --hq 64 --topk 2048 --topk-length --ref cpu" \
            "--sq 17 --skv 3000 --hq 100 --topk 520 --pad 8 --dtype fp16" "--sq 9 --skv 1 --hq 16 --topk 64" \
            "--sq 20 --skv 999 --hq 48 --topk 256 --topk-length" "--sq 7 --skv 70000 --hq 32 --topk 1000 --dtype fp16" \
            "--mma sync --sq 32 --skv 8192 --hq 128 --topk 2048" "--mma sync --sq 17 --skv 3000 --hq 100 --topk 520 --pad 8 --dtype fp16" \
            "--mma sync --sq 33 --skv 4096 --hq 128 --topk 512 --tile bm=32,bn=64" "--mma sync --sq 33 --skv 4096 --hq 128 --topk 512 --tile bm=64,bn=32" \
            "--mma sync --sq 20 --skv 999 --hq 48 --topk 256 --tile bm=16,bn=32 --topk-length" "--mma sync --sq 21 --skv 700 --hq 64 --topk 200 --tile bm=32,bn=32 --dtype fp16"; do
  run "$args" $args
done
mode=xcheck
run "sim vs GPU s_q=6 h_q=64 topk=128 topk_length" --sq 6 --skv 200 --hq 64 --topk 128 --topk-length
run "sim vs GPU mma.sync s_q=6 h_q=40 topk=128" --mma sync --sq 6 --skv 200 --hq 40 --topk 128
mode=check
for tl in "" "--topk-length"; do
  ref_run "GPU ref s_q=256 s_kv=8192 h_q=128 topk=2048 ${tl:-(all slots)}" --sq 256 --skv 8192 --hq 128 --topk 2048 $tl
done
kern=mla_bwd
# the runner takes mla_bwd before the library emits it; these run once it does. Not s_kv = 1: every
# token's slots then hold one row, P = 1 there and dq = 0 analytically, so its relative error is undefined.
# The GPU's target (sm_90a) runs the wgmma main kernel by --mma auto; then the mma.sync one.
if ./ptxgen --arch sm_90 --kernel mla_bwd >/dev/null 2>&1; then
  for args in "--sq 32 --skv 8192 --hq 128 --topk 2048 --ref cpu" "--sq 40 --skv 8192 --hq 64 --topk 2048 --topk-length --ref cpu" \
              "--sq 17 --skv 3000 --hq 100 --topk 520 --pad 8 --dtype fp16" "--sq 9 --skv 2 --hq 16 --topk 64" \
              "--sq 20 --skv 99999 --hq 48 --topk 256 --topk-length" "--sq 33 --skv 5000 --hq 128 --topk 1024 --tile deterministic=1" \
              "--sq 12 --skv 800 --hq 20 --topk 300 --topk-length --dtype fp16 --tile deterministic=1" \
              "--sq 40 --skv 8192 --hq 64 --topk 2048 --topk-length --tile deterministic=1" \
              "--mma sync --sq 32 --skv 8192 --hq 128 --topk 2048" "--mma sync --sq 17 --skv 3000 --hq 100 --topk 520 --pad 8 --dtype fp16" \
              "--mma sync --sq 20 --skv 999 --hq 48 --topk 256 --topk-length --tile deterministic=1"; do
    run "$args" $args
  done
  mode=xcheck
  run "sim vs GPU s_q=4 h_q=32 topk=128 topk_length" --sq 4 --skv 200 --hq 32 --topk 128 --topk-length
  run "sim vs GPU deterministic s_q=4 h_q=64 topk=192" --tile deterministic=1 --sq 4 --skv 200 --hq 64 --topk 192
  run "sim vs GPU mma.sync s_q=4 h_q=40 topk=128" --mma sync --sq 4 --skv 200 --hq 40 --topk 128
  mode=check
  for tl in "" "--topk-length"; do
    ref_run "GPU ref s_q=256 s_kv=8192 h_q=128 topk=2048 ${tl:-(all slots)}" --sq 256 --skv 8192 --hq 128 --topk 2048 $tl
  done
else
  echo "SKIP mla_bwd: the library does not emit it yet"
fi
# the runner's problems on the GPU: canary zones of every kind's outputs, each kind's GPU reference against its CPU one
if ! mine; then :
elif out=$(build/tests/test_problem --device cuda 2>&1); then
    pass=$((pass + 1)); echo "PASS test_problem on the GPU: $(echo "$out" | tail -n 1)"
else
    fail=$((fail + 1)); echo "FAIL test_problem on the GPU"; echo "$out" | grep -v '^PASS' | sed 's/^/    /'
fi
# the wgmma probe matrix (f16, bf16, tf32, fp8; SS and RS; every layout) against float64 on the GPU: the
# host's layouts and fragments, which the sim's matrix is judged by, are the hardware's
if ! mine; then :
elif out=$(build/tests/test_sim_wgmma --device cuda --seed $seed 2>&1) && echo "$out" | tail -n 1 | grep -q " 0 failed"; then
    pass=$((pass + 1)); echo "PASS test_sim_wgmma on the GPU: $(echo "$out" | tail -n 1)"
else
    fail=$((fail + 1)); echo "FAIL test_sim_wgmma on the GPU"; echo "$out" | grep -v '^PASS' | sed 's/^/    /'
fi
if ! mine; then :
elif out=$(build/tests/test_sim --device cuda 2>&1) && [ "$(echo "$out" | grep -c "^PASS sim ")" -ge 3 ]; then
    pass=$((pass + 1)); echo "PASS test_sim's correct kernels on the GPU: $(echo "$out" | grep "^PASS sim " | tr '\n' ' ')"
else
    fail=$((fail + 1)); echo "FAIL test_sim's correct kernels on the GPU"; echo "$out" | sed 's/^/    /'
fi
# our CUDA C++ sim kernels (tests/sim_cuda) that must run correctly: nvcc's PTX on the GPU as on the sim
if ! mine; then :
elif command -v nvcc >/dev/null 2>&1; then
  cudir=$(mktemp -d)
  for f in tests/sim_cuda/*.cu; do
    grep -q '^// expect: ok' "$f" || continue
    for a in $(sed -n 's|^// archs: ||p' "$f"); do
      b=$cudir/$(basename "$f" .cu)_$a
      tests/sim_cuda/ptx.sh "$f" "$a" "$b.ptx" >/dev/null 2>&1 || { fail=$((fail + 1)); echo "FAIL nvcc $f $a"; continue; }
    done
  done
  if out=$(build/tests/test_sim --device cuda "$cudir"/*.ptx 2>&1) && ! echo "$out" | grep -q "^FAIL"; then
    pass=$((pass + 1)); echo "PASS tests/sim_cuda's kernels on the GPU: $(echo "$out" | grep -c "^PASS sim ") ran right"
  else
    fail=$((fail + 1)); echo "FAIL tests/sim_cuda's kernels on the GPU"; echo "$out" | grep -v "^PASS" | sed 's/^/    /'
  fi
  rm -rf "$cudir"
else
  echo "SKIP tests/sim_cuda on the GPU: no nvcc on PATH"
fi
gate() {   # gate <label> <command...>: one PASS/FAIL line from a command's exit status
    local label=$1; shift
    mine || return 0
    if out=$("$@" 2>&1); then pass=$((pass + 1)); echo "PASS $label :: $(echo "$out" | tail -n 1)"
    else fail=$((fail + 1)); echo "FAIL $label"; echo "$out" | tail -n 20 | sed 's/^/    /'; fi
}
# compute-sanitizer (memcheck: out-of-bounds and misaligned accesses; racecheck: shared-memory hazards)
# over the wgmma kernels' layouts at a small ragged causal GQA shape
if command -v compute-sanitizer >/dev/null; then
  for kt in "attn_fwd 128" "attn_fwd 128 pingpong=0" "attn_fwd 128 producer=1,bn=96" "attn_fwd 256" "attn_bwd 128" \
            "attn_bwd 128 bm=64" "attn_bwd 64 deterministic=1" "attn_bwd 64 bm=64,bn=64"; do
    read -r kn hd tl <<<"$kt"
    for tool in memcheck racecheck; do
      gate "compute-sanitizer $tool $kn wgmma d=$hd ${tl:-default tile} causal s=150/300 GQA" bash -c '
        out=$(timeout 300 compute-sanitizer --tool "$1" --error-exitcode 9 ./ptxgen check --kernel "$4" --mma wgmma \
              ${2:+--tile $2} --hdim "$5" --causal --sq 150 --sk 300 --hq 4 --hkv 2 --iters 1 --seed "$3" 2>&1) || { echo "$out"; exit 1; }
        echo "$out" | grep -qE "(ERROR|RACECHECK) SUMMARY: 0 (errors|hazards)" || { echo "$out"; exit 1; }
        echo "$out" | grep -E "SUMMARY" | tr "\n" " "' _ $tool "$tl" $((seed += 1)) "$kn" "$hd"
    done
  done
  for tool in memcheck racecheck; do   # the wgmma mla_fwd: gathered rows, topk_length, a ragged head block
    gate "compute-sanitizer $tool mla_fwd wgmma s_q=5 h_q=40 topk=200 topk_length" bash -c '
      out=$(timeout 300 compute-sanitizer --tool "$1" --error-exitcode 9 ./ptxgen check --kernel mla_fwd --mma wgmma \
            --sq 5 --skv 300 --hq 40 --topk 200 --topk-length --iters 1 --seed "$2" 2>&1) || { echo "$out"; exit 1; }
      echo "$out" | grep -qE "(ERROR|RACECHECK) SUMMARY: 0 (errors|hazards)" || { echo "$out"; exit 1; }
      echo "$out" | grep -E "SUMMARY" | tr "\n" " "' _ $tool $((seed += 1))
    for det in 0 1; do   # the wgmma mla_bwd: both dkv paths (fp32 reductions, fixed point)
      gate "compute-sanitizer $tool mla_bwd wgmma deterministic=$det s_q=5 h_q=40 topk=200 topk_length" bash -c '
        out=$(timeout 300 compute-sanitizer --tool "$1" --error-exitcode 9 ./ptxgen check --kernel mla_bwd --mma wgmma \
              --tile deterministic=$3 --sq 5 --skv 300 --hq 40 --topk 200 --topk-length --iters 1 --seed "$2" 2>&1) || { echo "$out"; exit 1; }
        echo "$out" | grep -qE "(ERROR|RACECHECK) SUMMARY: 0 (errors|hazards)" || { echo "$out"; exit 1; }
        echo "$out" | grep -E "SUMMARY" | tr "\n" " "' _ $tool $((seed += 1)) $det
    done
  done
else
  echo "SKIP compute-sanitizer: not on this machine's PATH"
fi
# variable lengths (issue 18): every family the GPU runs, forward and backward, against the CPU reference sequence by
# sequence (empty sequences, causal s_q != s_k, GQA, fp16, padded strides, deterministic)
for fam in sync wgmma; do
  kern=attn_fwd
  run "varlen $fam 100,0,37,1030 GQA 4:2" --mma $fam --varlen 100,0,37,1030 --hq 4 --hkv 2
  run "varlen $fam 777,1,2000 over keys 1300,0,640 causal GQA 8:1" --mma $fam --varlen 777,1,2000 --varlen-k 1300,0,640 --causal --hq 8 --hkv 1
  run "varlen $fam d=64 fp16 pad=8" --mma $fam --varlen 640,650,1280 --hdim 64 --dtype fp16 --hq 3 --hkv 3 --pad 8
  kern=attn_bwd
  run "varlen $fam 100,0,37,1030 GQA 4:2" --mma $fam --varlen 100,0,37,1030 --hq 4 --hkv 2
  run "varlen $fam 777,1,2000 over keys 1300,0,640 causal GQA 8:1 deterministic" --mma $fam --varlen 777,1,2000 --varlen-k 1300,0,640 --causal --hq 8 --hkv 1 --tile deterministic=1
  run "varlen $fam d=64 0,500,3 over keys 700,500,0 atomics" --mma $fam --varlen 0,500,3 --varlen-k 700,500,0 --hdim 64 --hq 2 --hkv 1 --tile deterministic=0
  # MHA: the wgmma backward's CTAs start in chunks of (kv head, batch) pairs, and leave by the keys they were given
  run "varlen $fam 300,900,0,1500 MHA 3:3 deterministic" --mma $fam --varlen 300,900,0,1500 --varlen-k 1500,40,700,900 --hq 3 --hkv 3 --tile deterministic=1
  run "varlen $fam 300,900,0,1500 MHA 3:3 causal" --mma $fam --varlen 300,900,0,1500 --hq 3 --hkv 3 --causal
done
# block-sparse (issue 18, seed 003): both families the GPU runs, forward and backward, against the CPU reference with
# the mask (densities with none and all, a band, a dense head among sparse ones, causal s_q != s_k, GQA, varlen)
for fam in sync wgmma; do for kern in attn_fwd attn_bwd; do
  run "block-sparse $fam random:0.5 causal GQA 8:2" --mma $fam --block-mask random:0.5 --sq 1000 --sk 1500 --hq 8 --hkv 2 --causal --ref cpu
  run "block-sparse $fam random:0.1" --mma $fam --block-mask random:0.1 --sq 2048 --sk 2048 --hq 4 --hkv 4 --ref cpu
  run "block-sparse $fam random:0" --mma $fam --block-mask random:0 --sq 700 --sk 900 --hq 4 --hkv 1 --ref cpu
  run "block-sparse $fam random:1 causal" --mma $fam --block-mask random:1 --sq 1500 --sk 1000 --hq 4 --hkv 2 --causal --ref cpu
  run "block-sparse $fam local:2 d=64 fp16 causal" --mma $fam --block-mask local:2 --sq 2000 --sk 2000 --hq 4 --hkv 2 --hdim 64 --dtype fp16 --causal --ref cpu
  run "block-sparse $fam varlen 500,0,1300,64 causal" --mma $fam --block-mask random:0.4 --varlen 500,0,1300,64 --varlen-k 620,30,0,1200 --hq 4 --hkv 2 --causal --ref cpu
done; done
# mask blocks of 160 queries or keys: the wgmma attn_bwd's 80-query step and the d 256 forward's 80-key step
kern=attn_bwd
run "block-sparse wgmma block-m 160 random:0.4 causal GQA 8:2" --mma wgmma --block-mask random:0.4 --block-m 160 --sq 1600 --sk 1500 --hq 8 --hkv 2 --causal --ref cpu
kern=attn_fwd
run "block-sparse wgmma d=256 block-n 160 random:0.4" --mma wgmma --block-mask random:0.4 --block-n 160 --sq 1000 --sk 1700 --hq 4 --hkv 2 --hdim 256 --ref cpu
# paged KV and split-KV (issue 18, seed 002): attn_fwd against the CPU reference of each sequence's gathered keys
# (lengths with 0, shuffled pages, GQA decode, causal, long contexts split)
kern=attn_fwd
run "paged 64 b16 s_q 1 GQA 64/8" --mma sync --page-size 64 --b 16 --sq 1 --sk 4096 --hq 64 --hkv 8 --ref cpu
run "paged 256 b4 s_q 16 causal fp16 d64" --mma sync --page-size 256 --b 4 --sq 16 --sk 3000 --hq 8 --hkv 2 --causal --dtype fp16 --hdim 64 --ref cpu
run "split-KV 32 b1 s_k 32768 GQA 8/1" --mma sync --split-kv --splits 32 --b 1 --sq 1 --sk 32768 --hq 8 --hkv 1 --ref cpu
run "paged 64 split-KV 16 b2 causal s_q 4" --mma sync --page-size 64 --split-kv --splits 16 --b 2 --sq 4 --sk 20000 --hq 16 --hkv 2 --causal --ref cpu
# the wgmma attn_fwd over pages (NaN in every row no sequence owns) and split
run "paged wgmma 64 causal GQA 8/2 prefill" --mma wgmma --page-size 64 --b 3 --sq 700 --sk 3000 --hq 8 --hkv 2 --causal --ref cpu
run "paged wgmma 256 d=256" --mma wgmma --page-size 256 --b 2 --sq 129 --sk 2000 --hq 2 --hkv 1 --hdim 256 --ref cpu
run "split-KV wgmma 7 causal" --mma wgmma --split-kv --splits 7 --b 2 --sq 300 --sk 5000 --hq 4 --hkv 2 --causal --ref cpu
run "paged wgmma 128 split-KV 5 fp16 d=64" --mma wgmma --page-size 128 --split-kv --splits 5 --b 3 --sq 200 --sk 3000 --hq 4 --hkv 4 --hdim 64 --dtype fp16 --ref cpu
# the public API and compare on the real driver
gate "test_api on the GPU (load, launch, errors, threads through ptxgen.h)" build/tests/test_api --device cuda
gate "example_host on the GPU" build/example_host cuda
svg=$(mktemp "${TMPDIR:-/tmp}/ptxgen_compare.XXXXXX")
gate "compare on the GPU: attn_fwd mma.sync vs wgmma with median ms and TFLOP/s" bash -c '
    out=$(./ptxgen compare --kernel attn_fwd --hdim 128 --sq 2048 --sk 2048 --hq 16 --hkv 16 --b 2 \
          --variant "mma=sync;tile=bm=128,bn=64,warps=4" --variant "mma=wgmma;tile=bn=96" --svg "$1") || { echo "$out"; exit 1; }
    echo "$out" | grep -E "^median ms +\| [0-9.]+ +\| [0-9.]+" >/dev/null &&
    echo "$out" | grep -E "^TFLOP/s +\| [0-9.]+ +\| [0-9.]+" >/dev/null &&
    echo "$out" | grep -E "^check \(1 pass\) +\| PASS +\| PASS" >/dev/null && grep -q "</svg>" "$1" &&
    echo "$out" | grep -E "^(median ms|TFLOP/s)" | tr -s " " | tr "\n" " " || { echo "$out"; exit 1; }' _ "$svg"
rm -f "$svg"
[ "$shard_n" -gt 1 ] && echo "gpu-test shard $shard_i/$shard_n: $skip items left to the other shards"
echo "gpu-test: $pass passed, $fail failed"
[ $fail -eq 0 ]
