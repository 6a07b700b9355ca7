#!/usr/bin/env bash
# make test: the CPU test suite (no GPU or CUDA driver needed; ptxas on PATH).
#   1. the C tests, build/tests/test_* (each counted by its own summary line)
#   2. every default config through ptxas: arch x dtype x d x causal, no spills
#   3. the sim device: attn_fwd, attn_bwd, mla_fwd (and mla_bwd once the
#      library emits it) at small ragged shapes against the reference,
#      generated PTX with planted bugs refused (incl. stores into an output's
#      canary zone), planted-bug files, counters
#   4. NVIDIA's oracle kernels from their launch records (tests/oracle.sh;
#      SKIP lines, not counted, where ../shared/oracle is absent)
#   5. the command line: errors (also of --ref and selfcheck), plan refusals,
#      --list, --manifest, -o, and the no-driver path of check, selfcheck and
#      tests/gpu_matrix.sh
# Prints one line per test (PASS name / FAIL name: why), then exactly one line
# "N passed, N failed"; exits non-zero if anything failed. Two lanes run side by
# side (main): 1, 2 and the sim's forward tests; then the sim's backward and MLA
# tests, 4 and 5, whose lines follow the first lane's.
# PTXGEN_TEST_JOBS sets the number of parallel ptxas workers (default 2).
set -u
cd "$(dirname "$0")/.." || exit 1

ARCHS="sm_80 sm_86 sm_89 sm_90 sm_90a sm_100 sm_100a sm_103 sm_103a sm_120 sm_120a"
DTYPES="bf16 fp16"
HDIMS="64 128 256"
JOBS=${PTXGEN_TEST_JOBS:-2}

n_pass=0
n_fail=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ptxgen_test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
export TMP

pass() { echo "PASS $1"; n_pass=$((n_pass + 1)); }
fail() { echo "FAIL $1: $2"; n_fail=$((n_fail + 1)); }
skip() { echo "SKIP $1: $2"; }
section() { echo "== $1"; }
one_line() { tr '\n' ' ' <"$1" | cut -c1-300; }   # a file's text on one line, for messages

# run_cli ARGS...: runs ./ptxgen; stdout in $TMP/out, stderr in $TMP/err, exit status in $rc
run_cli() {
    timeout 120 ./ptxgen "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
}

# crashed NAME: true (and counts a failure) if the last run_cli hung or died of a signal
crashed() {
    if [ "$rc" -eq 124 ]; then fail "$1" "hung (killed after 120 s)"; return 0; fi
    if [ "$rc" -ge 128 ]; then fail "$1" "crashed: exit $rc (signal $((rc - 128))): $(one_line "$TMP/err")"; return 0; fi
    return 1
}

# ---- 1. C tests ----

# ptxas_probes WHAT ARCH TEST...: each TEST writes its probes (--dump DIR); ptxas -arch=ARCH must accept
# every one of them.
ptxas_probes() {
    local what=$1 arch=$2 dir=$TMP/probes_$2 bad t
    shift 2
    rm -rf "$dir" && mkdir -p "$dir"
    if for t in "$@"; do build/tests/$t --seed 1 --dump "$dir" || exit 1; done >"$TMP/probes.log" 2>&1; then
        bad=$(find "$dir" -name '*.ptx' -print0 | xargs -0 -P "$JOBS" -n 16 sh -c \
            'for f; do ptxas -arch='"$arch"' "$f" -o /dev/null >/dev/null 2>&1 || echo "$(basename "$f")"; done' _)
        if [ -z "$bad" ]; then pass "ptxas -arch=$arch accepts the $(find "$dir" -name '*.ptx' | wc -l) $what"
        else fail "ptxas -arch=$arch accepts the $what" "refused: $(echo $bad | cut -c1-200)"; fi
    else
        fail "ptxas -arch=$arch accepts the $what" "the dump failed: $(one_line "$TMP/probes.log")"
    fi
}

# c_test NAME [ARGS...]: runs build/tests/NAME. One whose last line is "N passed, N failed"
# adds its own counts; any other counts as one test that passes on exit 0.
c_test() {
    local bin=build/tests/$1
    if [ ! -x "$bin" ]; then fail "$1" "$bin is not built (make test builds it)"; return; fi
    counted_test "$1" "$bin" "${@:2}"
}

# counted_test NAME CMD [ARGS...]: the same for any command
counted_test() {
    local name=$1 out rc last
    shift
    out=$(timeout 300 "$@" 2>&1)
    rc=$?
    last=$(printf '%s\n' "$out" | tail -n 1)
    if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        printf '%s\n' "$out" | sed '$d'
        echo "-- $name: $last (exit $rc)"
        n_pass=$((n_pass + BASH_REMATCH[1]))
        n_fail=$((n_fail + BASH_REMATCH[2]))
        if [ "$rc" -ne 0 ] && [ "${BASH_REMATCH[2]}" -eq 0 ]; then fail "$name" "exit $rc with no failed check"; fi
        if [ "$rc" -eq 0 ] && [ "${BASH_REMATCH[2]}" -ne 0 ]; then fail "$name" "exit 0 despite failed checks"; fi
    elif [ "$rc" -eq 0 ]; then
        pass "$name: $last"
    else
        fail "$name" "exit $rc: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-300)"
    fi
}

c_tests() {
    section "C tests"
    local src
    # test_manifest_sim takes a generated set's files: mla_bwd_tc_sim_tests runs it
    for src in tests/test_*.c; do [ "$src" = tests/test_manifest_sim.c ] || c_test "$(basename "$src" .c)"; done
}

# ---- 2. ptxas over every default config ----

# ptxas_wgmma_loss LOG: the first line of ptxas's advice (C75xx) in LOG that it serialized wgmma or injected a wait
# for one, which costs a kernel its overlap without failing anything else; empty when there is none
ptxas_wgmma_loss() { grep -E 'Potential Performance Loss|is injected in .* by compiler' "$1" | head -n 1 | tr -s ' ' | cut -c1-240; }

# ptxas_bad LOG ALLOW: why the kernels of ptxas -v's LOG break the rule that none spills or keeps more than ALLOW
# bytes on its stack or has its wgmma serialized; empty when they keep it
ptxas_bad() {
    local props bad loss
    props=$(grep 'bytes stack frame' "$1")
    bad=$(printf '%s\n' "$props" | awk -v a="$2" '{ if ($1 > a || $5 > a || $9 > a) print }')
    loss=$(ptxas_wgmma_loss "$1")
    if [ -z "$props" ]; then echo "no 'bytes stack frame' line in ptxas -v output"
    elif [ -n "$bad" ]; then echo "stack or spills: $(printf '%s' "$bad" | tr -s ' \n' ' ')"
    elif [ -n "$loss" ]; then echo "$loss"; fi
}

# ptxas_job KERNEL ARCH DTYPE D CAUSAL(0|1): generates one config and assembles it;
# writes "PASS name" or "FAIL name: why" to its .res file (runs in a worker).
# No config may spill, use a stack, or have its wgmma serialized.
ptxas_job() {
    local kern=$1 arch=$2 dt=$3 d=$4 causal=$5 flag="" kind=noncausal
    if [ "$causal" = 1 ]; then flag=--causal; kind=causal; fi
    # mla_bwd has no causal mode: its fifth field picks the deterministic set
    if [ "$kern" = mla_bwd ]; then flag="--tile deterministic=$causal"; kind=deterministic=$causal; fi
    local name="ptxas $kern $arch $dt d=$d $kind" base=$TMP/ptxas/${kern}_${arch}_${dt}_${d}_${causal}
    if ! timeout 120 ./ptxgen --arch "$arch" --kernel "$kern" --dtype "$dt" --hdim "$d" $flag -o "$base.ptx" \
        >"$base.gen" 2>&1; then
        echo "FAIL $name: ptxgen: $(one_line "$base.gen")" >"$base.res"
        return 0
    fi
    if ! timeout 300 ptxas -arch="$arch" -v "$base.ptx" -o /dev/null >"$base.log" 2>&1; then
        local msg
        msg=$(grep -m 3 -i error "$base.log" | tr '\n' ' ' | cut -c1-300)
        echo "FAIL $name: ptxas: ${msg:-$(one_line "$base.log")}" >"$base.res"
        return 0
    fi
    local regs why
    # the deterministic mla_bwd (the wgmma main's fixed-point conversions and
    # 64-bit reductions beside a second chunk's accumulator: 44 B, faster than
    # none with one accumulator) may keep a few words on the stack; nothing
    # else may spill
    local allow=0
    [ "$kern $causal" = "mla_bwd 1" ] && allow=64
    why=$(ptxas_bad "$base.log" $allow)
    regs=$(grep -o 'Used [0-9]* registers' "$base.log" | head -n 1)
    if [ -n "$why" ]; then
        echo "FAIL $name: $why" >"$base.res"
    else
        local most
        most=$(grep 'bytes stack frame' "$base.log" | awk '{ m = $1 > m ? $1 : m; m = $5 > m ? $5 : m } END { print m + 0 }')
        if [ "$most" -gt 0 ]; then echo "PASS $name ($regs, $most B stack/spill, within the $allow B allowed)" >"$base.res"
        else echo "PASS $name ($regs, no spills)" >"$base.res"; fi
    fi
}
export -f ptxas_job ptxas_bad ptxas_wgmma_loss one_line

ptxas_configs() {   # one "kernel arch dtype d causal" line per config
    local a t d c
    for a in $ARCHS; do for t in $DTYPES; do
        for c in 0 1; do
            for d in $HDIMS; do echo "attn_fwd $a $t $d $c"; done
            for d in 64 128; do echo "attn_bwd $a $t $d $c"; done
            case $a in sm_90a|sm_100a|sm_103a) echo "attn_bwd $a $t 256 $c" ;; esac   # wgmma and tcgen05 split d 256
        done
        echo "mla_fwd $a $t 576 0"
        echo "mla_bwd $a $t 576 0"; echo "mla_bwd $a $t 576 1"
    done; done
}

ptxas_matrix() {
    local start=$SECONDS n=0 k a t d c res
    section "ptxas: every default config, $JOBS workers"
    mkdir -p "$TMP/ptxas"
    ptxas_configs | xargs -P "$JOBS" -n 5 bash -c 'ptxas_job "$@"' _
    while read -r k a t d c; do
        n=$((n + 1))
        res=$TMP/ptxas/${k}_${a}_${t}_${d}_${c}.res
        if [ ! -s "$res" ]; then fail "ptxas $k $a $t d=$d causal=$c" "the job left no result"; continue; fi
        cat "$res"
        case $(head -c 4 "$res") in
            PASS) n_pass=$((n_pass + 1)) ;;
            *) n_fail=$((n_fail + 1)) ;;
        esac
    done < <(ptxas_configs)
    echo "-- ptxas: $n configs in $((SECONDS - start)) s"
    ptxas_guard_test
}

# The wgmma-serialization guard itself: a kernel that reads a wgmma's accumulator before waiting for it makes ptxas
# inject a wait (C7517), which ptxas_wgmma_loss must report.
ptxas_guard_test() {
    local name="ptxas guard: ptxas's wgmma advice (an accumulator read before its wait) fails a config" f=$TMP/early_read.ptx
    local acc
    acc=$(seq -s ', ' -f '%%f%g' 0 31)
    cat >"$f" <<PTX
.version 8.0
.target sm_90a
.address_size 64
.visible .entry early_read(.param .u64 p)
{
	.reg .f32 %f<32>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd0, [p];
	mov.b64 %rd1, 0;
	mov.b64 %rd2, 0;
$(seq -f '	mov.f32 %%f%g, 0f00000000;' 0 31)
	wgmma.fence.sync.aligned;
	wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$acc}, %rd1, %rd2, 1, 1, 1, 0, 0;
	wgmma.commit_group.sync.aligned;
	st.global.f32 [%rd0], %f0;
	wgmma.wait_group.sync.aligned 0;
	st.global.f32 [%rd0+4], %f1;
	ret;
}
PTX
    if ! ptxas -arch=sm_90a -v "$f" -o /dev/null >"$TMP/early_read.log" 2>&1; then fail "$name" "$(one_line "$TMP/early_read.log")"
    elif [ -n "$(ptxas_wgmma_loss "$TMP/early_read.log")" ]; then pass "$name"
    else fail "$name" "no advice found in: $(one_line "$TMP/early_read.log")"; fi
}

# ---- oracle: NVIDIA's kernels from their launch records ----
# tests/oracle.sh prints its own PASS/FAIL/SKIP lines and ends with
# "N passed, N failed, N skipped"; its passes and failures count here.
oracle_tests() {
    section "oracle: NVIDIA's kernels on the sim from their launch records (ptxgen sim --launch)"
    local out rc last
    out=$(timeout 900 bash tests/oracle.sh 2>&1)
    rc=$?
    last=$(printf '%s\n' "$out" | tail -n 1)
    if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
        printf '%s\n' "$out" | sed '$d'
        echo "-- oracle: $last (exit $rc)"
        n_pass=$((n_pass + BASH_REMATCH[1]))
        n_fail=$((n_fail + BASH_REMATCH[2]))
    else
        fail "tests/oracle.sh" "exit $rc: $(printf '%s' "$out" | tail -n 5 | tr '\n' ' ' | cut -c1-300)"
    fi
}

# ---- 3. the sim device ----

# sim_check NAME ARGS...: check of attn_fwd on the sim must pass
sim_check() {
    local name=$1
    shift
    run_cli check --kernel attn_fwd --device sim "$@"
    expect_rc "$name" 0 && expect_output "$name" '^check: PASS' && pass "$name"
}

# sim_bwd NAME ARGS...: check of attn_bwd on the sim must pass (deterministic
# sets are run twice and must agree bit for bit)
sim_bwd() {
    local name=$1
    shift
    run_cli check --kernel attn_bwd --device sim "$@"
    expect_rc "$name" 0 && expect_output "$name" '^check: PASS' '^  dq: ' '^  dk: ' '^  dv: ' && pass "$name"
}

# sim_mla NAME ARGS...: check of mla_fwd on the sim must pass
sim_mla() {
    local name=$1
    shift
    run_cli check --kernel mla_fwd --device sim "$@"
    expect_rc "$name" 0 && expect_output "$name" '^check: PASS' '^  o: ' '^  lse: ' && pass "$name"
}

# sim_mla_mutant NAME SED_SCRIPT PHRASE ARGS...: the wgmma mla_fwd edited by SED_SCRIPT must fail on the sim
# with PHRASE (shape ARGS)
sim_mla_mutant() {
    local name=$1 script=$2 phrase=$3
    shift 3
    ./ptxgen --kernel mla_fwd --arch sm_90a | sed "$script" >"$TMP/mutant.ptx"
    if cmp -s <(./ptxgen --kernel mla_fwd --arch sm_90a) "$TMP/mutant.ptx"; then fail "$name" "the edit changed nothing"; return; fi
    run_cli check --device sim --kernel mla_fwd --arch sm_90a "$@" --ptx "$TMP/mutant.ptx"
    expect_rc "$name" 1 && expect_output "$name" "$phrase" && pass "$name"
}

# sim_bwd_wg_mutant NAME EDIT PHRASE [TILE [SHAPE [HDIM]]]: the wgmma attn_bwd (d HDIM or 64, TILE or deterministic=1: dQ added in
# key-block order) edited by the awk program EDIT must fail on the sim with PHRASE at SHAPE (by default one group of
# two key blocks). A semaphore that never reaches its count spins: the step limit turns that into an error naming
# the loop.
sim_bwd_wg_mutant() {
    local name=$1 edit=$2 phrase=$3 tile=${4:-deterministic=1} shape=${5:---sq 130 --sk 200 --hq 2 --hkv 1} hd=${6:-64}
    local gen=(./ptxgen --kernel attn_bwd --arch sm_90a --hdim $hd --tile "$tile")
    "${gen[@]}" | awk "$edit" >"$TMP/mutant.ptx"
    if cmp -s <("${gen[@]}") "$TMP/mutant.ptx"; then fail "$name" "the edit changed nothing"; return; fi
    PTXGEN_SIM_MAX_STEPS=3000000 run_cli check --device sim --kernel attn_bwd --arch sm_90a --hdim $hd --tile "$tile" \
        $shape --ptx "$TMP/mutant.ptx"
    expect_rc "$name" 1 && expect_output "$name" "$phrase" && pass "$name"
}

# sim_tc_mutant NAME AWK PHRASE KERNEL GEN_ARGS... -- SHAPE_ARGS...: the tcgen05 KERNEL (sm_100a) built with
# GEN_ARGS and edited by the awk program AWK must fail on the sim naming PHRASE, at SHAPE_ARGS
sim_tc_mutant() {
    local name=$1 edit=$2 phrase=$3 kern=$4 gen=() shape=()
    shift 4
    while [ $# -gt 0 ] && [ "$1" != -- ]; do gen+=("$1"); shift; done
    shift
    shape=("$@")
    ./ptxgen --kernel "$kern" --arch sm_100a "${gen[@]}" | awk "$edit" >"$TMP/mutant.ptx"
    if cmp -s <(./ptxgen --kernel "$kern" --arch sm_100a "${gen[@]}") "$TMP/mutant.ptx"; then
        fail "$name" "the edit changed nothing"
        return
    fi
    run_cli check --device sim --kernel "$kern" --arch sm_100a "${gen[@]}" "${shape[@]}" --ptx "$TMP/mutant.ptx"
    expect_rc "$name" 1 && expect_output "$name" "$phrase" && pass "$name"
}

# sim_mla_bwd NAME ARGS...: check of mla_bwd on the sim must pass
sim_mla_bwd() {
    local name=$1
    shift
    run_cli check --kernel mla_bwd --device sim "$@"
    expect_rc "$name" 0 && expect_output "$name" '^check: PASS' '^  dq: ' '^  dkv: ' && pass "$name"
}

# sim_floor NAME KERNEL FLOORED ARGS...: check of KERNEL on the sim must pass with each output named in FLOORED
# (space-separated) judged against its terms' norm floor, which its line must say (runner/verify.h)
sim_floor() {
    local name=$1 kern=$2 floored=$3 pats=() o
    shift 3
    for o in $floored; do pats+=("^  $o: rel_l2=[^ ]+ \\(of the terms' norm floor [^;]+; \\|\\|ref\\|\\| "); done
    run_cli check --kernel "$kern" --device sim "$@"
    expect_rc "$name" 0 && expect_output "$name" '^check: PASS' "${pats[@]}" && pass "$name"
}

# Gradients whose terms cancel: with one kv row per token (or one key per query row) dS = P (dP - delta) sums to 0 over
# the row, and so do dq and attn_bwd's dk. The float64 reference holds ~1e-16 of noise (or 0), a right kernel the fp32
# rounding of dP - delta, ~1e-7 of the terms, and ||out - ref|| / ||ref|| was 1e8: these outputs are judged against
# their terms' norm floor, and say so. A random shape's lines say nothing of a floor.
cancel_sim_tests() {
    section "sim device: gradients that cancel (one kv row, one key), judged against their terms' norm floor"
    local a
    for a in sm_80 sm_90a sm_100a; do
        sim_floor "sim mla_bwd $a s_kv=1: dq cancels, judged by the floor" mla_bwd dq --arch $a --sq 2 --skv 1 --hq 16 --topk 16
    done
    sim_floor "sim mla_bwd sm_90a deterministic s_kv=1 h_q=64: dq cancels, judged by the floor" mla_bwd dq --arch sm_90a \
        --tile deterministic=1 --sq 1 --skv 1 --hq 64 --topk 64
    for a in sm_80 sm_90a; do
        sim_floor "sim attn_bwd $a s_k=1: dq and dk cancel, judged by the floor" attn_bwd "dq dk" --arch $a --sq 77 --sk 1 \
            --hq 2 --hkv 1
    done
    local name="sim mla_bwd sm_90a random shape: no output judged by a floor"
    run_cli check --kernel mla_bwd --device sim --arch sm_90a --sq 3 --skv 300 --hq 64 --topk 130
    if expect_rc "$name" 0 && expect_output "$name" '^check: PASS' '^  dq: rel_l2='; then
        if grep -q "norm floor" "$TMP/out"; then fail "$name" "$(grep "norm floor" "$TMP/out" | head -n 1)"; else pass "$name"; fi
    fi
}

# Variable lengths (issue 18): the mma.sync attn_fwd over packed sequences on the sim (empty sequences, a sequence
# with no keys, s_q != s_k per sequence with causal, GQA, fp16, padded strides, other archs); the kinds that do not
# take them refuse naming the one that does; bad length lists are usage errors. Each check's reference runs sequence
# by sequence and every output row is poisoned first, so a CTA that reads or writes past its sequence fails it.
varlen_tests() {
    local f
    section "sim device: attn_fwd over variable lengths (cu_seqlens) against the float64 reference"
    for f in "--varlen 100,0,37,130 --hq 4 --hkv 2" "--varlen 77,1,200 --varlen-k 130,0,64 --causal --hq 2 --hkv 1" \
             "--varlen 64,65,128 --hdim 64 --dtype fp16 --hq 3 --hkv 3 --pad 8" "--varlen 300,5 --varlen-k 40,290 --causal --hdim 256" \
             "--varlen 0,0,9 --hdim 64 --hq 8 --hkv 1 --arch sm_120" "--varlen 129,1,128 --arch sm_80 --dtype fp16 --causal"; do
        sim_check "sim varlen $f" $f --seed $((RANDOM + 1))
    done
    for f in "--varlen 100,0,37,130 --hq 4 --hkv 2" "--varlen 77,1,200 --varlen-k 130,0,64 --causal --hq 2 --hkv 1" \
             "--varlen 0,50,3 --varlen-k 70,50,0 --hq 2 --hkv 1" "--varlen 64,65,128 --hdim 64 --dtype fp16 --hq 3 --hkv 3 --pad 8 --tile deterministic=0" \
             "--varlen 300,5 --varlen-k 40,290 --causal --hdim 64 --arch sm_120" "--varlen 200,130 --tile deterministic=0 --causal --hq 3 --hkv 1"; do
        sim_bwd "sim varlen bwd $f" $f --seed $((RANDOM + 1))
    done
    # the wgmma forward (sm_90a, --mma auto): the producer's TMA rows from the sequence's first packed row, O by
    # plain stores of the sequence's rows; every tile layout
    for f in "--varlen 100,0,37,130 --hq 4 --hkv 2" "--varlen 77,1,200 --varlen-k 130,0,64 --causal --hq 2 --hkv 1" \
             "--varlen 64,65,128 --hdim 64 --dtype fp16 --hq 3 --hkv 3 --pad 8" "--varlen 300,5 --varlen-k 40,290 --causal --hdim 256" \
             "--tile pingpong=0 --varlen 300,1,0,77 --varlen-k 200,40,9,300 --causal --hq 4 --hkv 1" \
             "--tile producer=1,bn=96 --varlen 300,1,0,77 --varlen-k 200,40,9,300 --hq 4 --hkv 1" \
             "--tile bm=192,bn=64 --varlen 400,3 --causal --hdim 64"; do
        sim_check "sim varlen wgmma $f" --arch sm_90a $f --seed $((RANDOM + 1))
        expect_output "sim varlen wgmma $f: the wgmma kernel" "^kernel: attn_fwd_wg_.*_varlen" &&
            pass "sim varlen wgmma $f: the wgmma kernel"
    done
    # the tcgen05 forward (sm_100a/103a, strict): one head and one CTA per row block, two Q tiles, d_v != d
    export PTXGEN_SIM_STRICT=1
    for f in "sm_100a --varlen 100,0,37,130 --hq 4 --hkv 2" "sm_103a --varlen 77,1,200 --varlen-k 130,0,64 --causal --hq 2 --hkv 1" \
             "sm_100a --varlen 64,65,128 --hdim 64 --dtype fp16 --hq 3 --hkv 3 --pad 8" "sm_100a --varlen 300,5 --varlen-k 40,290 --causal --hdim 256" \
             "sm_103a --varlen 300,9,140 --tile qtiles=2 --causal" "sm_100a --varlen 3,9 --hq 8 --hkv 1 --hdim 192 --hdim-v 128"; do
        set -- $f
        local arch=$1
        shift
        sim_check "sim varlen tcgen05 $arch $*" --arch $arch "$@" --seed $((RANDOM + 1))
        expect_output "sim varlen tcgen05 $arch $*: the tcgen05 kernel" "^kernel: attn_fwd_tc_.*_varlen" &&
            pass "sim varlen tcgen05 $arch $*: the tcgen05 kernel"
    done
    unset PTXGEN_SIM_STRICT
    tc_ptxas "ptxas attn_fwd tcgen05 varlen sm_100a causal: 0 spills" --kernel attn_fwd --arch sm_100a --varlen --causal
    tc_ptxas "ptxas attn_fwd tcgen05 varlen sm_103a qtiles=2: 0 spills" --kernel attn_fwd --arch sm_103a --varlen --tile qtiles=2
    usage_error "varlen with packed heads on the tcgen05 attn_fwd: refused" "variable lengths take one query head per CTA" \
        "got pack=8 ctas=1" -- --arch sm_100a --kernel attn_fwd --varlen --tile pack=8
    # the tcgen05 backward: rows past a sequence are the next one's (TMA does not zero them), so the compute
    # threads mask them; d 256 in parts, deterministic chains per sequence, two CTAs per SM
    export PTXGEN_SIM_STRICT=1
    for f in "sm_100a --varlen 100,0,37,130 --hq 4 --hkv 2" "sm_103a --varlen 77,1,200 --varlen-k 130,0,64 --causal --hq 2 --hkv 1" \
             "sm_100a --varlen 0,50,3 --varlen-k 70,50,0 --hq 2 --hkv 1" "sm_100a --varlen 64,65,128 --hdim 64 --dtype fp16 --hq 3 --hkv 3 --pad 8" \
             "sm_103a --varlen 300,5 --varlen-k 140,290 --causal --hdim 256" "sm_100a --varlen 200,130 --tile deterministic=1 --causal --hq 3 --hkv 1"; do
        set -- $f
        local arch=$1
        shift
        PTXGEN_SIM_CTAS_PER_SM=2 sim_bwd "sim varlen tcgen05 bwd $arch $*" --arch $arch "$@" --seed $((RANDOM + 1))
        expect_output "sim varlen tcgen05 bwd $arch $*: the tcgen05 kernel" "^kernel: attn_bwd_tc_main_.*_varlen" &&
            pass "sim varlen tcgen05 bwd $arch $*: the tcgen05 kernel"
    done
    unset PTXGEN_SIM_STRICT
    tc_ptxas "ptxas attn_bwd tcgen05 varlen sm_100a causal: 0 spills" --kernel attn_bwd --arch sm_100a --varlen --causal
    tc_ptxas "ptxas attn_bwd tcgen05 varlen sm_103a d=256 deterministic: 0 spills" --kernel attn_bwd --arch sm_103a --varlen \
        --hdim 256 --tile deterministic=1
    # the wgmma backward (sm_90a): the same masks; dK and dV by plain stores of the sequence's keys; dQ reduce-adds
    # at the packed rows, in key-block order under the semaphores when deterministic; d64's 128-row blocks span two
    # pre-kernel CTAs, whose stats padding rows must both be written. 13 SMs: the CTAs start in key_block_order's
    # chunks, so a CTA past its sequence's keys is known by the (batch, key block) it was given, not by its grid place
    for f in "--varlen 100,0,37,130 --hq 4 --hkv 2" "--varlen 77,1,200 --varlen-k 130,0,64 --causal --hq 2 --hkv 1" \
             "--varlen 64,65,128 --hdim 64 --dtype fp16 --hq 3 --hkv 3 --pad 8" "--varlen 200,130 --tile deterministic=1 --causal --hq 3 --hkv 1" \
             "--varlen 300,0,140 --varlen-k 100,33,0 --tile deterministic=1,dqbufs=2 --causal --hq 4 --hkv 1 --hdim 64" \
             "--varlen 100,0,37,130 --varlen-k 120,30,0,130 --hdim 256 --causal --hq 4 --hkv 2" \
             "--varlen 100,0,37,130 --hdim 256 --tile deterministic=1 --hq 2 --hkv 1"; do
        PTXGEN_SIM_STRICT=1 PTXGEN_SIM_CTAS_PER_SM=2 PTXGEN_SIM_SMS=13 sim_bwd "sim varlen wgmma bwd $f" --arch sm_90a $f \
            --seed $((RANDOM + 1))
        expect_output "sim varlen wgmma bwd $f: the wgmma kernel" "^kernel: attn_bwd_wg_main_.*_varlen" &&
            pass "sim varlen wgmma bwd $f: the wgmma kernel"
    done
    tc_ptxas "ptxas attn_fwd varlen sm_90 d=128 causal: 0 spills" --kernel attn_fwd --arch sm_90 --varlen --causal
    for f in "--hdim 64 --causal" "--hdim 64" "--hdim 128 --causal --tile deterministic=1" "--hdim 64 --tile deterministic=1" \
             "--hdim 256 --causal" "--hdim 256 --tile deterministic=1"; do
        tc_ptxas "ptxas attn_bwd wgmma varlen sm_90a $f: 0 spills" --kernel attn_bwd --arch sm_90a --varlen $f
    done
    tc_ptxas "ptxas attn_fwd wgmma varlen sm_90a d=64 causal: 0 spills" --kernel attn_fwd --arch sm_90a --varlen --hdim 64 --causal
    tc_ptxas "ptxas attn_fwd varlen sm_120 d=256: 0 spills" --kernel attn_fwd --arch sm_120 --varlen --hdim 256
    tc_ptxas "ptxas attn_bwd varlen sm_90 d=128 causal: 0 spills" --kernel attn_bwd --arch sm_90 --varlen --causal
    tc_ptxas "ptxas attn_bwd varlen sm_80 d=64 atomics: 0 spills" --kernel attn_bwd --arch sm_80 --varlen --hdim 64 \
        --tile deterministic=0
    usage_error "varlen on mla_fwd: refused, sparse MLA has no batch" "mla_fwd takes no variable lengths" -- \
        --arch sm_90 --kernel mla_fwd --varlen
    usage_error "varlen check with a bad length list" "--varlen needs lengths 0 .. 16777216 separated by commas" -- \
        check --kernel attn_fwd --device sim --arch sm_90 --varlen 10,x,3
    usage_error "varlen check with key lengths for fewer sequences" "--varlen-k has 1 lengths, --varlen 2" -- \
        check --kernel attn_fwd --device sim --arch sm_90 --varlen 10,3 --varlen-k 4
    usage_error "varlen check with a trailing comma (a length left out)" "a trailing ','" -- \
        check --kernel attn_fwd --device sim --arch sm_90 --varlen 10,3,
    usage_error "key lengths without --varlen: refused, not ignored" "--varlen-k needs --varlen" -- \
        check --kernel attn_fwd --device sim --arch sm_90 --varlen-k 4
    usage_error "varlen check with no query rows at all" "no query rows at all" -- \
        check --kernel attn_fwd --device sim --arch sm_90 --varlen 0,0 --varlen-k 5,0
    # every sequence without keys: k and v of no rows (allocated, never read); o 0 and lse +inf everywhere
    sim_check "sim varlen with no key rows at all (wgmma)" --arch sm_90a --varlen 90,3 --varlen-k 0,0 --causal --hq 4 --hkv 2
    sim_bwd "sim varlen bwd with no key rows at all (tcgen05)" --arch sm_100a --varlen 5,7 --varlen-k 0,0 --hdim 256
    usage_error "varlen check without lengths" "a varlen set runs on --varlen L1,L2" -- \
        check --kernel attn_fwd --device sim --arch sm_90 --varlen
}

# mla_bwd on the sim: both dkv paths (atomics, deterministic fixed point), every
# head block, scalar reductions (sm_80), ragged heads, topk_length, padding.
# sparse_mutant NAME KERNEL PERL GEN_ARGS... -- RUN_ARGS...: the block-sparse set built with GEN_ARGS (on
# $MUTANT_ARCH, else sm_80), its PTX edited by the perl expression PERL, must fail check on the sim (and print
# $MUTANT_SAYS where set)
sparse_mutant() {
    local name=$1 kernel=$2 expr=$3 gen=() arch=${MUTANT_ARCH:-sm_80}
    shift 3
    while [ $# -gt 0 ] && [ "$1" != -- ]; do gen+=("$1"); shift; done
    shift
    ./ptxgen --kernel "$kernel" --arch "$arch" "${gen[@]}" | perl -pe "$expr" >"$TMP/mutant.ptx"
    if cmp -s <(./ptxgen --kernel "$kernel" --arch "$arch" "${gen[@]}") "$TMP/mutant.ptx"; then fail "$name" "the edit changed nothing"; return; fi
    run_cli check --kernel "$kernel" --arch "$arch" --device sim "${gen[@]}" "$@" --ptx "$TMP/mutant.ptx"
    expect_rc "$name" 1 && expect_output "$name" '^check: FAIL' && expect_output "$name" "${MUTANT_SAYS:-}" && pass "$name"
}

# sparse_sims LABEL CHECK KERNEL_RE ARCH CFG...: CHECK (sim_check or sim_bwd) of each CFG on ARCH (unless CFG names
# one) must pass with a kernel matching KERNEL_RE in the set
sparse_sims() {
    local label=$1 check=$2 want=$3 arch=$4 f
    shift 4
    for f in "$@"; do
        [[ $f == *--arch* ]] || f="--arch $arch $f"
        $check "sim sparse $label $f" $f --seed $((RANDOM + 1))
        expect_output "sim sparse $label $f: $want" "^kernel: $want" && pass "sim sparse $label $f: $want"
    done
}

sparse_tests() {
    section "sim device: block-sparse attn_fwd and attn_bwd (every family) against the float64 reference with the mask"
    # random densities including none and all, a band, causal with s_q != s_k, GQA with a dense head among
    # sparse ones (head 0), ragged lengths, mask blocks of several tiles, varlen with empty sequences
    sparse_sims fwd sim_check attn_sparse_key_lists sm_80 \
        "--block-mask random:0.4 --sq 300 --sk 257 --hq 4 --hkv 2" "--block-mask random:0 --sq 130 --sk 200 --hq 3 --hkv 1" \
        "--block-mask random:1 --causal --sq 200 --sk 333 --hq 2 --hkv 1" "--block-mask local:1 --causal --sq 333 --sk 200 --hq 3 --hkv 3" \
        "--block-mask random:0.3 --block-m 256 --block-n 64 --sq 400 --sk 300 --hq 4 --hkv 1 --hdim 64 --dtype fp16 --pad 8" \
        "--block-mask random:0.5 --mask-heads 3 --b 2 --sq 150 --sk 150 --hq 4 --hkv 2 --hdim 256 --causal" \
        "--block-mask random:0.5 --varlen 100,0,257,64 --varlen-k 120,30,0,200 --causal --hq 4 --hkv 2 --block-n 64" \
        "--block-mask local:2 --arch sm_120 --sq 260 --sk 390 --hq 2 --hkv 2 --block-n 64"
    sparse_sims bwd sim_bwd attn_sparse_query_lists sm_80 \
        "--block-mask random:0.4 --sq 300 --sk 257 --hq 4 --hkv 2 --block-n 64" "--block-mask random:0 --sq 130 --sk 200 --hq 3 --hkv 1" \
        "--block-mask random:1 --causal --sq 200 --sk 333 --hq 2 --hkv 1 --tile deterministic=0" \
        "--block-mask local:1 --causal --sq 333 --sk 200 --hq 3 --hkv 3 --block-m 64 --block-n 64" \
        "--block-mask random:0.3 --block-m 256 --block-n 64 --sq 400 --sk 300 --hq 4 --hkv 1 --hdim 64 --dtype fp16 --pad 8" \
        "--block-mask random:0.5 --mask-heads 3 --b 2 --sq 150 --sk 150 --hq 4 --hkv 2 --causal --tile deterministic=0" \
        "--block-mask random:0.5 --varlen 100,0,257,64 --varlen-k 120,30,0,200 --causal --hq 4 --hkv 2 --block-n 64" \
        "--block-mask local:2 --arch sm_120 --sq 260 --sk 390 --hq 2 --hkv 2 --hdim 64"
    # the wgmma family (sm_90a): the producer's TMA rows and the consumers' masks follow the list; every tile layout
    sparse_sims "wgmma fwd" sim_check "attn_fwd_wg_.*_sparse" sm_90a \
        "--block-mask random:0.4 --sq 300 --sk 457 --hq 4 --hkv 2" "--block-mask random:0 --causal --sq 130 --sk 200 --hq 3 --hkv 1" \
        "--block-mask random:1 --causal --sq 200 --sk 333 --hq 2 --hkv 1 --hdim 64" \
        "--block-mask local:1 --sq 333 --sk 700 --hq 3 --hkv 3 --hdim 256 --causal" \
        "--tile pingpong=0,producer=1,bn=64 --block-n 64 --block-mask random:0.3 --sq 500 --sk 600 --hdim 64 --hq 2 --hkv 1" \
        "--block-mask random:0.5 --varlen 100,0,257,64 --varlen-k 120,30,0,200 --causal --hq 4 --hkv 2" \
        "--block-mask random:0.8 --causal --sq 300 --sk 4700 --hq 1 --hkv 1" \
        "--block-mask random:0.5 --hdim 256 --block-n 160 --sq 300 --sk 500 --hq 2 --hkv 1"
    expect_output "sparse wgmma fwd d=256 --block-n 160: the 80-key step" "^kernel: attn_fwd_wg_.*_d256_bm128_bn80_" &&
        pass "sparse wgmma fwd d=256 --block-n 160: the 80-key step"
    # (the backward at 13 SMs: its CTAs start in key_block_order's chunks)
    PTXGEN_SIM_SMS=13 sparse_sims "wgmma bwd" sim_bwd "attn_bwd_wg_main_.*_sparse" sm_90a \
        "--block-mask random:0.4 --sq 300 --sk 457 --hq 4 --hkv 2" "--block-mask random:0 --causal --sq 130 --sk 200 --hq 3 --hkv 1" \
        "--block-mask local:1 --hdim 64 --sq 500 --sk 600 --hq 2 --hkv 1 --causal --block-m 128 --block-n 256" \
        "--block-mask random:1 --sq 200 --sk 333 --hq 2 --hkv 2 --dtype fp16 --pad 8" \
        "--block-mask random:0.5 --varlen 100,0,257,64 --varlen-k 120,30,0,200 --causal --hq 4 --hkv 2" \
        "--block-mask random:0.5 --hdim 256 --sq 300 --sk 400 --hq 4 --hkv 2 --causal" \
        "--block-mask random:0.5 --block-m 160 --sq 400 --sk 300 --hq 4 --hkv 2 --causal"
    expect_output "sparse wgmma bwd --block-m 160: the 80-query step" "^kernel: attn_bwd_wg_main_.*_bm80_.*_sparse" &&
        pass "sparse wgmma bwd --block-m 160: the 80-query step"
    usage_error "sparse deterministic wgmma attn_bwd: refused" "deterministic block-sparse is not in the wgmma attn_bwd" \
        -- --arch sm_90a --kernel attn_bwd --block-m 128 --block-n 128 --tile deterministic=1
    # the tcgen05 family (sm_100a/103a, strict): the producer's rows, the softmax's masks and the query steps follow the
    # lists; two Q tiles (256-row key lists), d 256 in two parts per key block, two CTAs per SM
    export PTXGEN_SIM_STRICT=1
    sparse_sims "tcgen05 fwd" sim_check "attn_fwd_tc_.*_sparse" sm_100a \
        "--block-mask random:0.4 --sq 300 --sk 457 --hq 4 --hkv 2" "--block-mask random:0 --causal --sq 130 --sk 200 --hq 3 --hkv 1" \
        "--block-mask local:1 --arch sm_103a --sq 333 --sk 700 --hq 3 --hkv 3 --hdim 256 --causal" \
        "--tile qtiles=2 --block-m 256 --block-mask random:0.5 --sq 600 --sk 700 --hq 2 --hkv 1 --causal" \
        "--block-mask random:0.5 --varlen 100,0,257,64 --varlen-k 120,30,0,200 --causal --hq 4 --hkv 2 --hdim 64 --dtype fp16"
    PTXGEN_SIM_CTAS_PER_SM=2 sparse_sims "tcgen05 bwd" sim_bwd "attn_bwd_tc_main_.*_sparse" sm_100a \
        "--block-mask random:0.4 --sq 300 --sk 457 --hq 4 --hkv 2" "--block-mask local:1 --hdim 64 --sq 500 --sk 600 --hq 2 --hkv 1 --causal" \
        "--block-mask random:0.5 --arch sm_103a --hdim 256 --sq 200 --sk 300 --hq 2 --hkv 1" \
        "--block-mask random:0.5 --varlen 100,0,257,64 --varlen-k 120,30,0,200 --causal --hq 4 --hkv 2"
    unset PTXGEN_SIM_STRICT
    usage_error "sparse deterministic tcgen05 attn_bwd: refused" "deterministic block-sparse is not in the tcgen05 attn_bwd" \
        -- --arch sm_100a --kernel attn_bwd --block-m 128 --block-n 128 --tile deterministic=1
    usage_error "sparse with packed heads on the tcgen05 attn_fwd: refused" "a key list belongs to one head's row block" \
        "got pack=8 ctas=1" -- --arch sm_100a --kernel attn_fwd --block-m 128 --block-n 128 --tile pack=8
    # a mask and head types from a file: 1 x 2 mask heads x 1 x 2 blocks, then 3 head types
    printf '1 0\n0 1\n0 1 2\n' >"$TMP/mask.txt"
    sim_check "sim sparse fwd mask file" --arch sm_80 --block-mask "$TMP/mask.txt" --sq 100 --sk 130 --hq 3 --hkv 1
    sim_bwd "sim sparse bwd mask file" --arch sm_80 --block-mask "$TMP/mask.txt" --sq 100 --sk 130 --hq 3 --hkv 1
    printf '1 0\n0 1\n0 1\n' >"$TMP/mask.txt"
    run_cli check --kernel attn_fwd --arch sm_80 --device sim --block-mask "$TMP/mask.txt" --sq 100 --sk 130 --hq 3 --hkv 1
    expect_rc "sparse mask file one short: refused" 2 && expect_output "sparse mask file one short: refused" \
        "want exactly 7 integers .*found fewer" && pass "sparse mask file one short: refused"
    printf '1 0\n0 1\n0 1 3\n' >"$TMP/mask.txt"
    run_cli check --kernel attn_fwd --arch sm_80 --device sim --block-mask "$TMP/mask.txt" --sq 100 --sk 130 --hq 3 --hkv 1
    expect_rc "sparse head type past the mask heads: refused" 2 && expect_output "sparse head type past the mask heads: refused" \
        "head_mask_type\[2\] is 3: 0 \(dense\) or a mask head 1 .. 2" && pass "sparse head type past the mask heads: refused"
    printf '1 0\n0 1\n0 1 4294967297\n' >"$TMP/mask.txt"   # past int32: refused, not read as 1
    run_cli check --kernel attn_fwd --arch sm_80 --device sim --block-mask "$TMP/mask.txt" --sq 100 --sk 130 --hq 3 --hkv 1
    expect_rc "sparse mask file value past int32: refused" 2 && expect_output "sparse mask file value past int32: refused" \
        "integer 7 is 4294967297, past int32" && pass "sparse mask file value past int32: refused"
    # a mask of 2^62 entries (it once wrapped the file's buffer to 4 bytes and wrote past it)
    run_cli check --kernel attn_fwd --arch sm_80 --device sim --b 32768 --sq 8388608 --sk 8388608 --hq 1 --hkv 1 \
        --mask-heads 32768 --block-mask "$TMP/mask.txt"
    expect_rc "sparse mask of 2^62 entries: refused" 2 && expect_output "sparse mask of 2^62 entries: refused" \
        "4611686018427387904 entries .*the kernels index in 32 bits" && pass "sparse mask of 2^62 entries: refused"
    run_cli check --kernel attn_fwd --arch sm_80 --device sim --block-mask random:1.5
    expect_rc "sparse density past 1: refused" 2 && expect_output "sparse density past 1: refused" "density in \[0, 1\]" &&
        pass "sparse density past 1: refused"
    # planted bugs: each must fail the check
    sparse_mutant "sparse mutant: key lists read the mask inverted" attn_fwd 's/setp.ne.u32/setp.eq.u32/ if /setp.ne.u32/ && !$n++' \
        --block-m 128 --block-n 64 -- --block-mask random:0.5 --sq 300 --sk 257 --hq 2 --hkv 1
    sparse_mutant "sparse mutant: a dense head gets the mask's lists" attn_fwd '$_ = "" if /or.pred/ && !$n++' \
        --block-m 128 --block-n 64 -- --block-mask random:0.5 --sq 300 --sk 257 --hq 2 --hkv 1
    sparse_mutant "sparse mutant: query lists read the mask inverted" attn_bwd \
        's/setp.ne.u32/setp.eq.u32/ if /setp.ne.u32/ && ++$n == 1' --block-m 128 --block-n 64 --tile deterministic=0 -- \
        --block-mask random:0.5 --sq 300 --sk 257 --hq 2 --hkv 1
    sparse_mutant "sparse mutant: the dQ kernel's key lists read the mask inverted" attn_bwd \
        's/setp.ne.u32/setp.eq.u32/ if /setp.ne.u32/ && ++$n == 1' --block-m 128 --block-n 64 -- \
        --block-mask random:0.5 --sq 300 --sk 257 --hq 2 --hkv 1
    # the persistent wgmma attn_fwd hands its tiles out longest first where their key blocks differ much (attn_sched.h),
    # its CTAs running together on the sim (as many as persist), so that each fetch and the last one come from any
    PTXGEN_SIM_CTAS_PER_SM=3 sparse_sims "wgmma fwd persistent" sim_check "attn_fwd_wg_.*_sparse_ps3" sm_90a \
        "--tile persist=3 --block-mask random:0.3 --mask-heads 2 --b 2 --sq 700 --sk 900 --hq 4 --hkv 2 --causal" \
        "--tile persist=3 --block-mask random:0.15 --sq 1000 --sk 1024 --hq 3 --hkv 1 --hdim 64"
    # the filing: a mask with known counts (head 0 dense, 8 key blocks a tile; head 1 row r the blocks 0 .. r - 1), each
    # class's tiles read back from tile_order [8][16] (tile h * 8 + m; causal: h * 8 + 7 - m, the longest rows first)
    { for r in $(seq 0 7); do for c in $(seq 0 7); do printf '%d ' $((c < r)); done; echo; done
      for r in $(seq 0 7); do echo 0 0 0 0 0 0 0 0; done; echo 0 1; } >"$TMP/order_mask.txt"
    local c want
    for c in "" --causal; do
        if [ -z "$c" ]; then want="3: 0 1 2 3 4 5 6 7 15 | 2: 11 12 13 14 | 1: 9 10 | 0: 8"
        else want="3: 0 1 8 | 2: 2 3 4 5 9 10 11 12 | 1: 6 7 13 14 | 0: 15"; fi
        PTXGEN_DUMP_WORKSPACE=tile_order run_cli check --kernel attn_fwd --arch sm_90a --device sim --tile persist=3 \
            --block-mask "$TMP/order_mask.txt" --sq 1024 --sk 1024 --hq 2 --hkv 1 $c
        local got
        got=$(awk -v want="$want" '/^workspace tile_order u32\[128\]:/ {
            n = split(want, part, " [|] "); out = ""
            for (p = 1; p <= n; p++) {
                split(part[p], kv, ": "); q = kv[1]; k = split(kv[2], e, " ")
                delete v; for (i = 0; i < k; i++) v[i] = $(4 + q * 16 + i)
                for (i = 0; i < k; i++) for (j = i + 1; j < k; j++) if (v[j] + 0 < v[i] + 0) { x = v[i]; v[i] = v[j]; v[j] = x }
                s = q ":"; for (i = 0; i < k; i++) s = s " " v[i]
                out = out (p > 1 ? " | " : "") s }
            print out }' "$TMP/out")
        expect_rc "sparse wgmma fwd: tiles filed by class ${c:-noncausal}" 0 &&
            if [ "$got" = "$want" ]; then pass "sparse wgmma fwd: tiles filed by class ${c:-noncausal}"
            else fail "sparse wgmma fwd: tiles filed by class ${c:-noncausal}" "want $want, got $got"; fi
    done
    # planted bugs: each fetch mapped to the class above its own (both copies of the walk: the first fetch and the
    # loop's), with the classes of the file above 0 to 3 apart; with every tile in one class (random:1) the tiles go in
    # their own order and the same edit changes nothing the check sees; the class counts not set back to 0
    local one_class='$_ = "" if /\@!%p\d+ sub.u32 (%r\d+), \1, 1;/ && ++$n % 7 == 1'
    PTXGEN_SIM_CTAS_PER_SM=3 MUTANT_ARCH=sm_90a sparse_mutant "sparse mutant: tile order, a fetch one class too high" \
        attn_fwd "$one_class" --block-m 128 --block-n 128 --tile persist=3 -- --block-mask "$TMP/order_mask.txt" \
        --sq 1024 --sk 1024 --hq 2 --hkv 1
    ./ptxgen --kernel attn_fwd --arch sm_90a --block-m 128 --block-n 128 --tile persist=3 | perl -pe "$one_class" >"$TMP/one.ptx"
    PTXGEN_SIM_CTAS_PER_SM=3 run_cli check --kernel attn_fwd --arch sm_90a --device sim --block-m 128 --block-n 128 \
        --tile persist=3 --block-mask random:1 --sq 700 --sk 900 --hq 4 --hkv 2 --ptx "$TMP/one.ptx"
    expect_rc "sparse wgmma fwd: tiles of one class go in their own order (the order's walk unused)" 0 &&
        pass "sparse wgmma fwd: tiles of one class go in their own order (the order's walk unused)"
    PTXGEN_SIM_CTAS_PER_SM=3 MUTANT_ARCH=sm_90a MUTANT_SAYS="workspace tile_classes \(kept_zero" sparse_mutant \
        "sparse mutant: tile order, the class counts left set" attn_fwd \
        '$_ = "" if /st.global.v4.b32 \[%rd\d+(\+16)?\], \{(%r\d+), \2, \2, \2\};/' --block-m 128 --block-n 128 \
        --tile persist=3 -- --block-mask random:0.3 --sq 700 --sk 900 --hq 4 --hkv 2
    # check's PTXGEN_DUMP_WORKSPACE: a workspace after the run (the counter, left at 0), and a name the set lacks
    PTXGEN_DUMP_WORKSPACE=tile_counter run_cli check --kernel attn_fwd --arch sm_90a --device sim --block-mask random:0.3 \
        --sq 200 --sk 200 --hq 1 --hkv 1
    expect_rc "PTXGEN_DUMP_WORKSPACE prints a workspace after the run" 0 && expect_output \
        "PTXGEN_DUMP_WORKSPACE prints a workspace after the run" "^workspace tile_counter u32\[1\]: 0$" &&
        pass "PTXGEN_DUMP_WORKSPACE prints a workspace after the run"
    PTXGEN_DUMP_WORKSPACE=tile_orders run_cli check --kernel attn_fwd --arch sm_90a --device sim --block-mask random:0.3 \
        --sq 200 --sk 200 --hq 1 --hkv 1
    expect_rc "PTXGEN_DUMP_WORKSPACE of a name the set lacks: refused" 1 && expect_output \
        "PTXGEN_DUMP_WORKSPACE of a name the set lacks: refused" "no workspace tile_orders in this set \(it has: key_lists tile_classes tile_order" &&
        pass "PTXGEN_DUMP_WORKSPACE of a name the set lacks: refused"
    # the wgmma forward's consumers count the entries that need no mask (the only popc of two registers): none counted
    # as masked, the causal diagonal goes unmasked (lists of up to 37 entries, the last ones masked)
    MUTANT_ARCH=sm_90a sparse_mutant "sparse mutant: wgmma consumers take every entry as unmasked" attn_fwd \
        's/popc.b32 (%r\d+), (?!\1;)%r\d+;/mov.b32 $1, 0;/' --block-m 128 --block-n 128 --causal -- \
        --block-mask random:0.8 --sq 300 --sk 4700 --hq 1 --hkv 1
    sparse_mutant "sparse mutant: a list one entry short" attn_fwd 's/popc.b32 (%r\d+), \1;/popc.b32 $1, $1;\n\tsub.u32 $1, $1, 1;/ if /popc.b32 (%r\d+), \1;/ && ++$n == 2' \
        --block-m 128 --block-n 64 -- --block-mask random:1 --sq 300 --sk 257 --hq 2 --hkv 1
    # refusals name the tile or the family
    usage_error "sparse mask blocks not whole tiles: refused" "must be whole tiles of the mma.sync attn_fwd, 128x32" \
        -- --arch sm_80 --kernel attn_fwd --block-m 96 --block-n 128
    usage_error "sparse mask blocks not whole wgmma tiles: refused" "whole tiles of the wgmma attn_bwd, 64x128" \
        -- --arch sm_90a --kernel attn_bwd --block-m 128 --block-n 64
    usage_error "sparse on mla_fwd: refused" "mla_fwd takes no block mask" -- --arch sm_80 --kernel mla_fwd --block-m 128
    usage_error "sparse check --ref gpu: refused before a launch" "--ref gpu: the GPU reference takes no block mask" -- \
        check --kernel attn_fwd --arch sm_90a --block-mask random:0.5 --sq 100 --sk 100 --ref gpu
    usage_error "paged check --ref gpu: refused before a launch" "the GPU reference takes no paged cache" -- \
        check --kernel attn_fwd --arch sm_90a --page-size 64 --sq 1 --sk 100 --ref gpu
    local a k
    for a in sm_80 sm_90a sm_120 sm_90a:wgmma sm_100a:tcgen05 sm_103a:tcgen05; do for k in attn_fwd attn_bwd; do
        local mma=${a#*:}
        [ "$mma" = "$a" ] && mma=sync
        a=${a%:*}
        run_cli --arch $a --kernel $k --mma $mma --block-m 128 --block-n 128 --causal -o "$TMP/sp.ptx"
        if expect_rc "ptxas sparse $k $a" 0 && ptxas -arch=$a -v "$TMP/sp.ptx" -o /dev/null >"$TMP/sparse_ptxas.log" 2>&1; then
            if grep -qE "[1-9][0-9]* bytes spill" "$TMP/sparse_ptxas.log"; then fail "ptxas sparse $k $a" "spills: $(one_line "$TMP/sparse_ptxas.log")"
            else pass "ptxas sparse $k $a: 0 spills"; fi
        else fail "ptxas sparse $k $a" "$(one_line "$TMP/sparse_ptxas.log")"; fi
    done; done
}

paged_tests() {
    local f
    section "sim device: attn_fwd over a paged KV cache and split-KV (mma.sync) against the float64 reference"
    # lengths drawn per seed (0 included), pages in shuffled order, -1 past each sequence's pages (a read of one is
    # out of bounds); GQA decode shapes, causal s_q != s_k, every page size, those shorter than the key tile (16) in a
    # load a page
    for f in "--page-size 64 --b 4 --sq 3 --sk 300 --hq 8 --hkv 2" "--page-size 32 --b 6 --sq 1 --sk 200 --hq 8 --hkv 1" \
             "--page-size 256 --b 3 --sq 16 --sk 700 --hq 4 --hkv 4 --causal --hdim 64 --dtype fp16 --pad 8" \
             "--page-size 128 --b 5 --sq 130 --sk 260 --hq 2 --hkv 1 --causal --hdim 256" \
             "--page-size 32 --b 12 --sq 2 --sk 3 --hq 2 --hkv 1" "--page-size 64 --arch sm_120 --b 7 --sq 2 --sk 129 --hq 4 --hkv 2" \
             "--split-kv --sq 3 --sk 700 --hq 8 --hkv 2 --causal --splits 5" "--split-kv --sq 130 --sk 300 --hq 2 --hkv 1 --causal --splits 7" \
             "--split-kv --sq 5 --sk 100 --hq 2 --hkv 1 --splits 64" "--split-kv --sq 200 --sk 50 --hq 2 --hkv 2 --causal" \
             "--split-kv --page-size 64 --b 4 --sq 2 --sk 900 --hq 8 --hkv 1 --splits 4" \
             "--split-kv --page-size 128 --b 3 --sq 16 --sk 1000 --hq 4 --hkv 2 --causal --hdim 64 --dtype fp16 --splits 16" \
             "--split-kv --page-size 64 --arch sm_120 --b 2 --sq 1 --sk 2000 --hq 16 --hkv 2 --splits 9 --hdim 256" \
             "--page-size 16 --b 3 --sq 70 --sk 150 --hq 2 --hkv 1 --causal" "--page-size 16 --b 2 --sq 40 --sk 150 --hq 2 --hkv 1 --hdim 256" \
             "--page-size 16 --b 2 --sq 70 --sk 100 --hq 4 --hkv 4 --causal --hdim 64 --dtype fp16" \
             "--split-kv --page-size 16 --b 2 --sq 3 --sk 500 --hq 8 --hkv 2 --splits 5"; do
        [[ $f == *--arch* ]] || f="--arch sm_80 $f"
        sim_check "sim paged $f" $f --seed $((RANDOM + 1))
    done
    run_cli check --kernel attn_fwd --arch sm_80 --device sim --split-kv --sq 3 --sk 300 --hq 2 --hkv 1
    expect_rc "split-KV: the combine kernel last" 0 && expect_output "split-KV: the combine kernel last" \
        "^kernel: attn_fwd_splitkv_combine" && pass "split-KV: the combine kernel last"
    # planted bugs: the prologue's K from the next page of the table; the combine's weights not exponentiated
    sparse_mutant "paged mutant: a key block from the wrong page" attn_fwd \
        's/(\@%p\d+ ld.global.nc.b32 %r\d+, \[%rd\d+)\]/$1+4]/ if /\@%p\d+ ld.global.nc.b32/ && !$n++' --page-size 64 \
        --tile bm=16,warps=1,bn=64,pack=2 -- --b 1 --sq 3 --sk 300 --hq 2 --hkv 1
    sparse_mutant "split-KV mutant: the combine's weights not exponentiated" attn_fwd \
        '$c = 1 if /splitkv_combine/; s/ex2.approx.ftz.f32 (%f\d+), (%f\d+)/mov.f32 $1, $2/ if $c' --split-kv --tile pack=1 -- \
        --sq 3 --sk 700 --hq 2 --hkv 1 --splits 5
    # decode packing (tile key pack): pack query heads of a kv head share the CTA's rows, head innermost; ragged groups
    # (12 heads in packs of 8: the second CTA's last 4 heads idle), multi-token causal, every bm, split-KV, unpaged
    sparse_sims "sim packed decode" sim_check 'attn_fwd_.*_pack[0-9]+' sm_80 \
        "--page-size 64 --b 5 --sq 1 --sk 500 --hq 16 --hkv 2 --tile bm=16,warps=1,bn=64,pack=8" \
        "--page-size 64 --b 3 --sq 3 --sk 300 --hq 24 --hkv 2 --causal --tile bm=32,warps=2,bn=64,pack=8" \
        "--page-size 32 --b 4 --sq 5 --sk 200 --hq 12 --hkv 1 --causal --tile bm=64,warps=4,bn=32,pack=16 --dtype fp16" \
        "--page-size 128 --b 2 --sq 16 --sk 400 --hq 8 --hkv 4 --causal --tile bm=64,warps=2,bn=128,pack=2 --hdim 64 --pad 8" \
        "--page-size 64 --b 2 --sq 2 --sk 190 --hq 8 --hkv 2 --tile bm=16,warps=1,bn=64,pack=4 --hdim 256" \
        "--b 3 --sq 7 --sk 333 --hq 32 --hkv 4 --causal --tile bm=128,warps=4,pack=8" \
        "--b 2 --sq 1 --sk 1000 --hq 6 --hkv 1 --tile bm=16,warps=1,pack=8 --scale 0.3" \
        "--split-kv --page-size 64 --b 2 --sq 1 --sk 3000 --hq 16 --hkv 2 --splits 11 --tile bm=16,warps=1,bn=64,pack=8" \
        "--split-kv --b 2 --sq 4 --sk 900 --hq 12 --hkv 3 --causal --splits 6 --tile bm=16,warps=1,pack=4"
    local name="sim paged decode: the mma.sync attn_fwd packs the group's heads in the fewest rows by itself, saying so"
    run_cli check --kernel attn_fwd --arch sm_90 --device sim --page-size 64 --b 3 --sq 1 --sk 300 --hq 16 --hkv 2 --full-kv
    expect_rc "$name" 0 && expect_output "$name" \
        '^tile: pack=8 for the decode shape \(s_q 1, 8 query heads per kv head\).*; bm=16 warps=1 bn=64, the fewest rows that hold its 8$' \
        '^kernel: attn_fwd_bf16_d128_bm16_bn64_w1_pack8_page64$' 'seqlens_k 300,300,300;' '^check: PASS' && pass "$name"
    sparse_mutant "packed mutant: every CTA of a kv head takes its group's first heads" attn_fwd \
        's/rem\.u32 (%r\d+), %r\d+, %r\d+;/mov.u32 $1, 0;/ if /rem\.u32 %r\d+, %r\d+, %r\d+;/ && !$n++' --tile bm=16,warps=1,pack=8 -- --sq 1 --sk 300 --hq 16 --hkv 1
    usage_error "pack with varlen: refused" "pack=8: the mma.sync attn_fwd packs query heads without varlen or a block mask" \
        -- --arch sm_80 --kernel attn_fwd --varlen --tile pack=8
    usage_error "pack with a block mask: refused" "pack=4: the mma.sync attn_fwd packs query heads without varlen" \
        -- --arch sm_80 --kernel attn_fwd --block-m 128 --block-n 128 --tile pack=4
    usage_error "--full-kv without a paged cache: refused" "--full-kv needs --page-size" -- check --kernel attn_fwd --full-kv
    usage_error "paged: a page size not a power of two: refused" "page size 48: a power of two from 16 to 256" \
        -- --arch sm_80 --kernel attn_fwd --page-size 48
    usage_error "paged: a page the mma.sync loader's pass does not fill: refused" \
        "page size 16: the mma.sync attn_fwd's 256 threads copy 32 rows of d=64 a pass" \
        -- --arch sm_80 --kernel attn_fwd --hdim 64 --page-size 16 --tile warps=8
    usage_error "paged: a key tile neither within a page nor whole pages: refused" \
        "page size 32 is not a whole number of the wgmma attn_fwd's key tiles (bn=80), nor are its key tiles whole pages" \
        -- --arch sm_90a --kernel attn_fwd --hdim 256 --page-size 32 --tile bn=80
    # the tcgen05 attn_fwd (sm_100a/103a, strict): pages by TMA (block_table picks the box's page), query heads packed
    # for decode, the issuer zeroing V's rows past the sequence (the runner fills every row no sequence owns with NaN)
    export PTXGEN_SIM_STRICT=1
    sparse_sims "sim paged tcgen05" sim_check 'attn_fwd_tc_.*_page[0-9]+' sm_100a \
        "--page-size 64 --b 3 --sq 1 --sk 300 --hq 16 --hkv 2" "--page-size 64 --b 4 --sq 5 --sk 200 --hq 12 --hkv 1 --causal --dtype fp16" \
        "--page-size 128 --b 2 --sq 130 --sk 260 --hq 2 --hkv 1 --causal" \
        "--page-size 256 --b 3 --sq 16 --sk 700 --hq 4 --hkv 4 --causal --hdim 64 --pad 8" \
        "--page-size 64 --b 2 --sq 2 --sk 190 --hq 8 --hkv 2 --hdim 256" "--arch sm_103a --page-size 64 --b 5 --sq 3 --sk 129 --hq 8 --hkv 8" \
        "--page-size 128 --b 6 --sq 8 --sk 50 --hq 16 --hkv 2 --tile bn=64,stages=3,pack=16" \
        "--page-size 64 --b 3 --sq 1 --sk 500 --hq 4 --hkv 1 --hdim 192 --hdim-v 128 --tile poly=2" \
        "--page-size 16 --b 2 --sq 40 --sk 260 --hq 2 --hkv 1" "--page-size 32 --b 2 --sq 130 --sk 200 --hq 2 --hkv 2 --causal" \
        "--page-size 16 --b 1 --sq 70 --sk 200 --hq 2 --hkv 1 --causal --hdim 256"
    PTXGEN_SIM_CTAS_PER_SM=2 sim_check "sim paged tcgen05, two CTAs per SM" --arch sm_100a --page-size 64 --b 4 --sq 2 \
        --sk 333 --hq 8 --hkv 2 --causal --seed $((RANDOM + 1))
    unset PTXGEN_SIM_STRICT
    sim_tc_mutant "paged tcgen05 mutant: V's rows past the sequence left as the page holds them (NaN)" \
        '!/st\.shared\.v4\.b32 .*\{%r[0-9]+, %r[0-9]+, %r[0-9]+, %r[0-9]+\};/ || !/@%p/' 'nonfinite=' attn_fwd \
        --page-size 64 --tile bn=64 -- --b 3 --sq 1 --sk 300 --hq 16 --hkv 2
    sim_tc_mutant "paged tcgen05 mutant: every key block from the sequence's first page" \
        '{ if (/shr\.u32 %r[0-9]+, %r[0-9]+, 6;/ && !m++) sub(/, 6;/, ", 31;"); print }' \
        '^check: FAIL' attn_fwd --page-size 64 --tile bn=64 -- --b 2 --sq 1 --sk 300 --hq 4 --hkv 2
    usage_error "paged tcgen05 with two Q tiles: refused" "a paged KV cache and split-KV take one Q tile and one CTA per MMA" \
        -- --arch sm_100a --kernel attn_fwd --page-size 128 --tile qtiles=2
    # split-KV in the tcgen05 attn_fwd: every role walks the split's blocks [lo, hi), counting its steps from 0
    export PTXGEN_SIM_STRICT=1
    sparse_sims "sim split-KV tcgen05" sim_check 'attn_fwd_tc_.*_split' sm_100a \
        "--split-kv --sq 3 --sk 700 --hq 8 --hkv 2 --causal --splits 5" \
        "--split-kv --page-size 64 --b 2 --sq 1 --sk 3000 --hq 16 --hkv 2 --splits 11" \
        "--split-kv --sq 130 --sk 300 --hq 2 --hkv 1 --causal --splits 7" "--split-kv --sq 5 --sk 100 --hq 2 --hkv 1 --splits 64" \
        "--split-kv --page-size 128 --b 3 --sq 16 --sk 1000 --hq 4 --hkv 2 --causal --hdim 64 --dtype fp16 --splits 16" \
        "--arch sm_103a --split-kv --page-size 64 --b 1 --sq 2 --sk 2000 --hq 12 --hkv 1 --hdim 256 --splits 9"
    PTXGEN_SIM_CTAS_PER_SM=2 sim_check "sim split-KV tcgen05, two CTAs per SM" --arch sm_100a --split-kv --page-size 64 --b 2 \
        --sq 4 --sk 900 --hq 8 --hkv 2 --causal --splits 6 --seed $((RANDOM + 1))
    unset PTXGEN_SIM_STRICT
    sim_tc_mutant "split-KV tcgen05 mutant: the producer reads block n, not the split's block lo + n" \
        '!($1 == "mad.lo.u32" && $4 == "128," && substr($2, 1, length($2) - 1) == substr($5, 1, length($5) - 1))' \
        '^check: FAIL' attn_fwd --split-kv --tile pack=1 -- --sq 3 --sk 700 --hq 2 --hkv 1 --splits 5
    # and in the wgmma attn_fwd: the producer walks the split's blocks, the consumers mask by block, the partial rows
    # come from the mma.sync-shaped accumulators (splitkv_store)
    export PTXGEN_SIM_STRICT=1
    sparse_sims "sim split-KV wgmma" sim_check 'attn_fwd_wg_.*_split' sm_90a \
        "--split-kv --sq 130 --sk 700 --hq 4 --hkv 2 --causal --splits 5" \
        "--split-kv --page-size 64 --b 2 --sq 100 --sk 3000 --hq 2 --hkv 2 --splits 11" \
        "--split-kv --sq 70 --sk 100 --hq 2 --hkv 1 --splits 64 --hdim 64 --dtype fp16" \
        "--split-kv --sq 300 --sk 200 --hq 2 --hkv 2 --causal --hdim 256 --splits 3" \
        "--split-kv --sq 20 --sk 900 --hq 2 --hkv 1 --splits 4 --tile bm=64,producer=1,pingpong=0,stages=3"
    unset PTXGEN_SIM_STRICT
    local wsm="$TMP/wg_split.ptx"   # the producer's row from step n, not from its block lo + n: the first row multiply
    # after a slot wait reads the step n the add of lo + n read
    ./ptxgen --kernel attn_fwd --arch sm_90a --split-kv 2>/dev/null |
        awk '$1 == "add.u32" && $3 ~ /^%r/ && $4 ~ /^%r/ { n_of[$2] = $3 }
             !done && w && $1 == "mul.lo.u32" && $4 == "128;" && ($3 in n_of) { $3 = n_of[$3]; done = 1 }
             /mbarrier.try_wait/ { w = 1 } { print }' >"$wsm"
    if cmp -s <(./ptxgen --kernel attn_fwd --arch sm_90a --split-kv 2>/dev/null) "$wsm"; then
        fail "split-KV wgmma mutant: the producer reads block n, not the split's block lo + n" "the edit changed nothing"
    fi
    run_cli check --kernel attn_fwd --arch sm_90a --device sim --split-kv --sq 130 --sk 700 --hq 2 --hkv 1 --splits 5 --ptx "$wsm"
    expect_rc "split-KV wgmma mutant: the producer reads block n, not the split's block lo + n" 1 &&
        expect_output "split-KV wgmma mutant: the producer reads block n, not the split's block lo + n" '^check: FAIL' &&
        pass "split-KV wgmma mutant: the producer reads block n, not the split's block lo + n"
    usage_error "split-KV tcgen05 with two Q tiles: refused" "a paged KV cache and split-KV take one Q tile and one CTA per MMA" \
        -- --arch sm_100a --kernel attn_fwd --split-kv --tile qtiles=2
    # the wgmma attn_fwd (sm_90a, strict): pages by TMA, the producer zeroing the last V block's rows past the
    # sequence before the consumers' P V (the tail barrier); a decode shape with GQA goes to mma.sync's packing
    export PTXGEN_SIM_STRICT=1
    sparse_sims "sim paged wgmma" sim_check 'attn_fwd_wg_.*_page[0-9]+' sm_90a \
        "--page-size 64 --b 3 --sq 100 --sk 300 --hq 4 --hkv 2" "--page-size 128 --b 2 --sq 130 --sk 260 --hq 2 --hkv 1 --causal" \
        "--page-size 64 --b 4 --sq 70 --sk 200 --hq 4 --hkv 2 --causal --dtype fp16 --hdim 64" \
        "--page-size 256 --b 3 --sq 40 --sk 700 --hq 2 --hkv 2 --hdim 256 --pad 8" \
        "--page-size 64 --b 2 --sq 1 --sk 190 --hq 2 --hkv 2 --tile stages=3,producer=1,pingpong=0" \
        "--page-size 128 --b 5 --sq 20 --sk 129 --hq 3 --hkv 1 --mma wgmma" \
        "--page-size 16 --b 2 --sq 70 --sk 300 --hq 4 --hkv 2 --causal" "--page-size 32 --b 3 --sq 1 --sk 200 --hq 8 --hkv 1 --mma wgmma" \
        "--page-size 16 --b 2 --sq 200 --sk 250 --hq 2 --hkv 1 --causal --hdim 64 --dtype fp16" \
        "--page-size 32 --b 1 --sq 100 --sk 300 --hq 2 --hkv 2 --hdim 256"
    unset PTXGEN_SIM_STRICT
    run_cli check --kernel attn_fwd --arch sm_90a --device sim --page-size 64 --b 3 --sq 1 --sk 300 --hq 16 --hkv 2
    expect_rc "sim paged decode on sm_90a: mma.sync's packing, saying so" 0 && \
        expect_output "sim paged decode on sm_90a: mma.sync's packing, saying so" \
        'the wgmma attn_fwd packs no query heads, so this decode shape \(s_q 1, 8 query heads per kv head\) on sm_90a gets mma.sync' \
        '^kernel: attn_fwd_bf16_d128_bm16_bn64_w1_pack8_page64$' '^check: PASS' && \
        pass "sim paged decode on sm_90a: mma.sync's packing, saying so"
    MUTANT_ARCH=sm_90a sparse_mutant "paged wgmma mutant: a key block over small pages reads every page's rows from its first" \
        attn_fwd 's/^\s*\@%p\d+ ld.global.nc.b32 .*\n//' --page-size 16 -- --b 2 --sq 70 --sk 300 --hq 4 --hkv 2
    local wm="$TMP/wg_tail.ptx"
    ./ptxgen --kernel attn_fwd --arch sm_90a --page-size 64 2>/dev/null | awk '!/st\.shared\.v4\.b32 .*\{%r[0-9]+, %r[0-9]+, %r[0-9]+, %r[0-9]+\};/' >"$wm"
    run_cli check --kernel attn_fwd --arch sm_90a --device sim --page-size 64 --b 3 --sq 100 --sk 300 --hq 4 --hkv 2 --ptx "$wm"
    expect_rc "paged wgmma mutant: V's tail left as the page holds it (NaN)" 1 && \
        expect_output "paged wgmma mutant: V's tail left as the page holds it (NaN)" 'nonfinite=[1-9]' && \
        pass "paged wgmma mutant: V's tail left as the page holds it (NaN)"
    usage_error "paged attn_bwd: refused" "a paged KV cache is not in the mma.sync attn_bwd yet; attn_fwd takes it in every family" \
        -- --arch sm_80 --kernel attn_bwd --page-size 64
    usage_error "split-KV with varlen: refused" "not with --varlen or a block mask" -- --arch sm_80 --kernel attn_fwd --split-kv --varlen
    usage_error "--splits without --split-kv: refused" "--splits needs --split-kv" -- check --kernel attn_fwd --splits 4
    # a flag only the other side reads: refused, not ignored
    usage_error "emit given a run's flag (--seed): refused" "--seed is read by check, bench" -- \
        --arch sm_80 --kernel attn_fwd --seed 5
    usage_error "check given an emit's flag (-o): refused" "-o is read when emitting PTX" -- \
        check --kernel attn_fwd --device sim -o "$TMP/never.ptx"
    local a
    tc_ptxas "ptxas paged wgmma attn_fwd sm_90a: 0 spills" --kernel attn_fwd --arch sm_90a --mma wgmma --page-size 64 --causal
    tc_ptxas "ptxas paged wgmma attn_fwd sm_90a d=256: 0 spills" --kernel attn_fwd --arch sm_90a --mma wgmma --page-size 64 --hdim 256
    tc_ptxas "ptxas paged split-KV wgmma attn_fwd sm_90a: 0 spills" --kernel attn_fwd --arch sm_90a --mma wgmma --page-size 128 \
        --split-kv --causal
    for a in sm_100a sm_103a; do
        tc_ptxas "ptxas paged split-KV tcgen05 attn_fwd $a: 0 spills" --kernel attn_fwd --arch $a --page-size 64 --split-kv \
            --tile bn=64,pack=8
        tc_ptxas "ptxas paged tcgen05 attn_fwd $a: 0 spills" --kernel attn_fwd --arch $a --page-size 64 --tile bn=64,pack=8
        tc_ptxas "ptxas paged tcgen05 attn_fwd $a d=256 causal: 0 spills" --kernel attn_fwd --arch $a --page-size 128 \
            --hdim 256 --causal
    done
    # decode tiles that ptxas 13.0 held at 80 or 128 registers and spilled before they asked for .minnctapersm 1, and
    # the 64-key steps over pages of 32 that spill even so (d 256, and 4-warp tiles on sm_86/sm_89 before they kept 32):
    # each shape picks its tile (pack, bm, bn) as the default does
    for f in "sm_80 128 32 1 2" "sm_80 128 32 5 4" "sm_86 128 16 1 4" "sm_89 128 32 2 16" "sm_90 64 32 5 4" \
             "sm_90 128 32 9 2" "sm_120 64 16 1 2" "sm_120 128 16 3 8" "sm_100 64 32 9 4" "sm_80 256 32 1 2" \
             "sm_90 256 32 1 16 --causal" "sm_86 128 32 5 8 --causal" "sm_89 128 32 3 16 --causal" "sm_86 256 16 1 8"; do
        set -- $f
        tc_ptxas "ptxas decode attn_fwd $1 d=$2 pages of $3, s_q $4, $5 heads a kv head ${6:-}: 0 spills" --kernel attn_fwd \
            --arch $1 --mma sync --hdim $2 --page-size $3 --sq $4 --hq $((8 * $5)) --hkv 8 ${6:-}
    done
    for a in sm_80 sm_90 sm_120; do
        tc_ptxas "ptxas paged split-KV attn_fwd $a: 0 spills" --kernel attn_fwd --arch $a --page-size 64 --split-kv --causal
        for t in bm=16,warps=1,bn=64,pack=8 bm=32,warps=2,bn=64,pack=8 "bm=16,warps=1,bn=64,pack=8 --hdim 256" \
                 "bm=64,warps=4,bn=64,pack=16 --hdim 64 --causal"; do
            tc_ptxas "ptxas packed decode attn_fwd $a --tile $t: 0 spills" --kernel attn_fwd --arch $a --page-size 64 --tile $t
        done
    done
}

# tests/sim_cuda/*.cu (our CUDA C++, README there): nvcc -ptx for each arch of its "// archs:" line, its
# expect/block/smem/strict lines in front, then the sim through test_sim, which must pass the kernel or name
# the planted bug
sim_cuda_tests() {
    section "sim device: what nvcc writes for our CUDA C++ kernels (tests/sim_cuda)"
    if ! command -v nvcc >/dev/null 2>&1; then skip "sim on nvcc's PTX" "no nvcc on PATH"; return; fi
    local f a base name
    for f in tests/sim_cuda/*.cu; do
        for a in $(sed -n 's|^// archs: ||p' "$f"); do
            base=$TMP/$(basename "$f" .cu)_$a name="sim on nvcc's PTX: $(basename "$f") $a"
            if ! tests/sim_cuda/ptx.sh "$f" "$a" "$base.ptx" >"$base.log" 2>&1; then
                fail "$name" "nvcc: $(one_line "$base.log")"
                continue
            fi
            if build/tests/test_sim "$base.ptx" >"$base.out" 2>&1 && grep -q "^PASS sim $(basename "$base.ptx")" "$base.out"
            then pass "$name"
            else fail "$name" "$(grep -m 1 -A 1 "^FAIL sim" "$base.out" | tr '\n' ' ' | cut -c1-300)"; fi
        done
    done
}

# persist_mutant NAME AWK PHRASE HDIM ARGS...: the persistent wgmma attn_fwd (persist=2 and $PERSIST_TILE's keys, head
# dim HDIM) edited by AWK must fail check on the sim (strict) with PHRASE in its output
persist_mutant() {
    local name=$1 prog=$2 phrase=$3 g=(--kernel attn_fwd --arch sm_90a --tile "persist=2${PERSIST_TILE:+,$PERSIST_TILE}" --hdim $4)
    shift 4
    ./ptxgen "${g[@]}" | awk "$prog" >"$TMP/persist.ptx"
    if cmp -s <(./ptxgen "${g[@]}") "$TMP/persist.ptx"; then fail "$name" "the edit changed nothing"; return; fi
    PTXGEN_SIM_STRICT=1 run_cli check "${g[@]}" --device sim "$@" --ptx "$TMP/persist.ptx"
    expect_rc "$name" 1 && expect_output "$name" "$phrase" && pass "$name"
}

# The persistent wgmma attn_fwd (tile key persist): CTAs walking tiles from an atomic counter, on the sim with every
# tile layout, masks, empty key lists and grids larger than the tiles; the planted bugs the schedule must not have;
# the default (persistent where measured faster); its refusals, manifest and registers.
persist_tests() {
    section "sim device: the persistent wgmma attn_fwd (tile key persist)"
    export PTXGEN_SIM_STRICT=1
    sparse_sims "sim persistent wgmma" sim_check 'attn_fwd_wg_.*_ps[0-9]+' sm_90a \
        "--tile persist=2 --sq 300 --sk 457 --hq 3 --hkv 1 --b 2 --causal" \
        "--tile persist=3 --hdim 64 --dtype fp16 --pad 8 --sq 500 --sk 300 --hq 4 --hkv 2" \
        "--tile persist=1,bm=64,stages=3 --causal --sq 333 --sk 333 --hq 2 --hkv 1" \
        "--tile persist=2,pingpong=0,producer=1,bm=64 --sq 300 --sk 200 --hq 2 --hkv 2 --b 2 --causal" \
        "--tile persist=3 --block-mask random:0.4 --sq 300 --sk 457 --hq 4 --hkv 2" \
        "--tile persist=4 --block-mask random:0 --causal --sq 130 --sk 200 --hq 3 --hkv 1" \
        "--tile persist=4 --sq 10 --sk 50 --hq 1 --hkv 1" "--causal --sq 200 --sk 300 --hq 2 --hkv 1 --hdim 128" \
        "--hdim 64 --sq 500 --sk 377 --hq 3 --hkv 1 --b 2 --causal" \
        "--hdim 64 --tile persist=2,bm=192 --sq 600 --sk 300 --hq 2 --hkv 2 --dtype fp16 --pad 8" \
        "--hdim 256 --sq 300 --sk 200 --hq 2 --hkv 1 --b 2" "--hdim 256 --tile persist=3 --causal --sq 260 --sk 300 --hq 3 --hkv 1" \
        "--hdim 256 --tile persist=2 --causal --sq 400 --sk 90 --hq 2 --hkv 1" \
        "--tile persist=2 --block-mask random:0.15 --sq 600 --sk 300 --hq 3 --hkv 1" \
        "--tile persist=2,pingpong=0 --causal --sq 300 --sk 200 --hq 3 --hkv 1"
    PTXGEN_SIM_CTAS_PER_SM=2 sim_check "sim persistent wgmma, two CTAs per SM sharing the counter" --arch sm_90a \
        --tile persist=4,bm=64 --hdim 64 --sq 500 --sk 377 --hq 3 --hkv 1 --b 2 --causal --seed $((RANDOM + 1))
    unset PTXGEN_SIM_STRICT
    # (check reads every kept_zero workspace back after each run: the counter left set fails the first run)
    persist_mutant "persistent mutant: the last fetch leaves the counter, so the next launch finds no tile" \
        '!/st\.global\.b32 \[%rd[0-9]+\], 0;/' 'workspace tile_counter \(kept_zero' 128 --sq 300 --sk 200 --hq 2 --hkv 1
    # the producer's wait before its first TMA copy (Q's empty barrier) dropped, with its branch
    local drop_q_wait='{ l[NR] = $0 } /mbarrier.try_wait/ && !f { w = NR } /cp.async.bulk.tensor/ && !f { f = 1; t = w }
         END { for (i = 1; i <= NR; i++) if (i != t && i != t + 1) print l[i] }'
    # one key block a tile, so that nothing but Q's empty barrier orders a buffer's next load after its last tile's S
    persist_mutant "persistent mutant: a tile's Q loads before the consumers freed its buffer" \
        "$drop_q_wait" \
        'shared-memory race' 128 --sq 600 --sk 60 --hq 2 --hkv 1
    persist_mutant "persistent mutant: the consumers read every tile's Q from the first buffer" \
        '/mul.lo.u32 %r[0-9]+, %r[0-9]+, 32768;/ { seen++; if (seen == 2) sub(/32768/, "0") } { print }' \
        'check: FAIL' 128 --sq 600 --sk 300 --hq 2 --hkv 1
    PERSIST_TILE=qbufs=1 persist_mutant "persistent mutant qbufs=1: the next tile's Q loads before the consumers freed Q" \
        "$drop_q_wait" \
        'shared-memory race|before the TMA load .* has landed' 128 --sq 300 --sk 200 --hq 2 --hkv 1
    # the first wait for all but the newest group is carry_block's, whose epilogue reads the last tile's O
    persist_mutant "persistent mutant: the last tile's epilogue before its last P V is done (carried tile boundary)" \
        '!done && /wgmma.wait_group.sync.aligned 1;/ { done = 1; next } { print }' 'before wgmma.wait_group' 128 \
        --sq 600 --sk 300 --hq 2 --hkv 1
    persist_mutant "persistent mutant: O staged over the slabs the last tile's TMA store still reads" \
        '/cp.async.bulk.wait_group.read/ && !done { done = 1; next } { print }' 'in-flight TMA store|before that thread.s cp.async.bulk.wait_group covered it' 128 --sq 600 --sk 200 --hq 2 --hkv 1
    persist_mutant "persistent mutant d 256: Q freed before the TMA store read the O staged over it" \
        '/cp.async.bulk.commit_group/ { c = 1 } c && /cp.async.bulk.wait_group.read/ && !done { done = 1; next } { print }' \
        'while the TMA store .* still reads it' 256 --sq 600 --sk 200 --hq 2 --hkv 1
    local x want
    # persist, then qbufs: two Q buffers wherever a persistent tile has room for them (not d 256: O over Q)
    for x in "--causal:132,qbufs=2" "--hdim 64:132,qbufs=2" "--block-mask random:0.5 --block-m 128 --block-n 128:132,qbufs=2" \
             ":132,qbufs=2" "--hdim 256:132,qbufs=1" "--hdim 256 --causal:0,qbufs=1" "--tile persist=2:2,qbufs=2" \
             "--tile persist=132,qbufs=1:132,qbufs=1" "--hdim 256 --block-mask random:0.5 --block-m 128 --block-n 128:0,qbufs=1" \
             "--varlen 100,200 --causal:0,qbufs=1" "--page-size 128 --causal:0,qbufs=1" "--split-kv --causal:0,qbufs=1" \
             "--causal --tile persist=0:0,qbufs=1"; do
        want=${x##*:}
        run_cli --arch sm_90a --kernel attn_fwd --mma wgmma ${x%:*} --plan
        expect_rc "persist default [${x%:*}]: $want" 0 && expect_output "persist default [${x%:*}]: $want" "persist=$want\$" &&
            pass "persist default [${x%:*}]: $want"
    done
    usage_error "qbufs=2 without persist: refused" "qbufs=2" "persist=0 loads one Q per CTA" -- --arch sm_90a --kernel attn_fwd \
        --tile persist=0,qbufs=2
    usage_error "qbufs=2 at d 256: refused" "qbufs=2" "stages O over Q" -- --arch sm_90a --kernel attn_fwd --hdim 256 \
        --tile persist=132,qbufs=2
    run_cli --arch sm_90a --kernel attn_fwd --hdim 64 --plan
    expect_rc "persist default d 64: three consumer warpgroups (bm=192)" 0 && expect_output "persist default d 64: three consumer warpgroups (bm=192)" \
        'tile bm=192,bn=128,stages=2,pingpong=1,producer=4,persist=132,qbufs=2$' && pass "persist default d 64: three consumer warpgroups (bm=192)"
    run_cli --arch sm_90a --kernel attn_fwd --tile stages=3 --plan
    expect_rc "persist default: off where the tile asked leaves no room (stages=3)" 0 && \
        expect_output "persist default: off where the tile asked leaves no room (stages=3)" 'stages=3,pingpong=1,producer=4,persist=0,qbufs=1$' && \
        pass "persist default: off where the tile asked leaves no room (stages=3)"
    usage_error "persist with varlen: refused" "persist=132" "varlen launches a CTA per tile" -- --arch sm_90a --kernel attn_fwd \
        --varlen 100,200 --tile persist=132
    run_cli --arch sm_90a --kernel attn_fwd --hdim 256 --plan
    expect_rc "persist at d=256: O staged over Q" 0 && expect_output "persist at d=256: O staged over Q" 'persist=132,qbufs=1$' \
        '^  O .*over each warpgroup.s own Q rows, which it frees .*\[union over Q\]' && pass "persist at d=256: O staged over Q"
    run_cli --arch sm_90a --kernel attn_fwd --causal --manifest "$TMP/persist.json" -o /dev/null
    expect_rc "persistent manifest: grid, size b, the kept-zero counter" 0 && expect_output "persistent manifest: grid, size b, the kept-zero counter" \
        && grep -q '"min(cdiv(s_q, 128) \* h_q \* b, 132)", "1", "1"' "$TMP/persist.json" &&
        grep -q '"name": "tile_counter", "bytes": "4", "zero_init": true, "kept_zero": true' "$TMP/persist.json" &&
        pass "persistent manifest: grid, size b, the kept-zero counter" ||
        fail "persistent manifest: grid, size b, the kept-zero counter" "$(grep -E 'grid|tile_counter' "$TMP/persist.json" | tr -s ' \n' ' ')"
    for x in "--causal" "--hdim 64" "--hdim 256" "--block-mask random:0.5 --block-m 128 --block-n 128 --causal" "--tile persist=132,bm=64 --hdim 64" \
             "--tile persist=132,producer=1,pingpong=0,bm=64"; do
        tc_ptxas "ptxas persistent wgmma attn_fwd $x: 0 spills" --kernel attn_fwd --arch sm_90a --mma wgmma $x
    done
}

mla_bwd_sim_tests() {
    local t
    for t in bf16 fp16; do
        sim_mla_bwd "sim mla_bwd sm_90 $t default tile h_q=128" --dtype $t --sq 5 --skv 300 --hq 128 --topk 96 \
            --seed $((RANDOM + 1))
        sim_mla_bwd "sim mla_bwd sm_90 $t topk_length, ragged heads, pad" --dtype $t --sq 6 --skv 77 --hq 20 --topk 64 \
            --topk-length --pad 8 --seed $((RANDOM + 1))
    done
    sim_mla_bwd "sim mla_bwd sm_90 deterministic h_q=128" --tile deterministic=1 --sq 5 --skv 300 --hq 128 --topk 96 \
        --topk-length
    # deterministic: many tokens' slots on few rows (each row's sum of many fixed-point terms) and (topk_length) fewer
    sim_mla_bwd "sim mla_bwd sm_90 deterministic, slots in pieces" --tile deterministic=1 --sq 8 --skv 3000 --hq 16 \
        --topk 1500 --topk-length --seed $((RANDOM + 1))
    sim_mla_bwd "sim mla_bwd sm_90 deterministic, every slot in 20 rows" --tile deterministic=1 --sq 8 --skv 20 --hq 16 \
        --topk 1100 --seed $((RANDOM + 1))
    sim_mla_bwd "sim mla_bwd sm_100a bm=32 deterministic pad" --arch sm_100a --tile bm=32,deterministic=1 --sq 3 \
        --skv 600 --hq 32 --topk 64 --pad 8
    sim_mla_bwd "sim mla_bwd sm_80 scalar reductions" --arch sm_80 --sq 4 --skv 500 --hq 64 --topk 64
    sim_mla_bwd "sim mla_bwd sm_90 bm=16 s_kv=2" --tile bm=16 --sq 6 --skv 2 --hq 24 --topk 40
    mla_bwd_99k_tests
}

# mla_bwd on the 99 KB parts (sm_86, sm_89, sm_120: 101,376 B a block): seed 004's lesson, every candidate tile is
# planned; the ones the plan accepts must assemble and pass on the sim, the others be refused naming the bytes. Only
# bm=16 with one row buffer (stages=1: 76,032 B) fits; it is the default there.
mla_bwd_99k_tests() {
    local a bm st det name fits=0
    section "mla_bwd on 99 KB parts: every candidate tile planned, the fitting ones run on the sim"
    export PTXGEN_SIM_STRICT=1
    for a in sm_120 sm_86 sm_89; do for bm in 16 32 64; do for st in 1 2; do for det in 0 1; do
        name="mla_bwd $a bm=$bm stages=$st deterministic=$det"
        run_cli --arch $a --kernel mla_bwd --tile bm=$bm,stages=$st,deterministic=$det -o "$TMP/c.ptx"
        if [ "$rc" -ne 0 ]; then
            expect_output "$name: refused naming the shared memory it needs" "needs [0-9]+ B .* of shared memory per block; $a allows 101376 B" &&
                pass "$name: refused naming the shared memory it needs"
            continue
        fi
        fits=$((fits + 1))
        if ! ptxas -arch=$a "$TMP/c.ptx" -o /dev/null 2>"$TMP/err"; then fail "$name: ptxas" "$(one_line "$TMP/err")"; continue; fi
        sim_mla_bwd "sim $name (the plan fits)" --arch $a --tile bm=$bm,stages=$st,deterministic=$det --dtype fp16 \
            --sq 3 --skv 300 --hq 20 --topk 70 --topk-length --seed $((RANDOM + 1))
    done; done; done; done
    if [ "$fits" -eq 6 ]; then pass "mla_bwd on 99 KB parts: bm=16 stages=1 (x 2 dkv paths) fits on each of the three, nothing else"
    else fail "mla_bwd on 99 KB parts: candidates that fit" "$fits, expected 6 (bm=16 stages=1, both paths, 3 archs)"; fi
    sim_mla_bwd "sim mla_bwd sm_120 default tile bf16 h_q=64" --arch sm_120 --sq 4 --skv 500 --hq 64 --topk 96 --seed $((RANDOM + 1))
    # a softmax near one-hot (scale 1.7 at d_qk 576): dS cancels to what O's rounding leaves, so the references take
    # delta from the o the kernels read (they once took their own float64 O: dq 0.9 off of the terms' floor)
    sim_mla_bwd "sim mla_bwd one-hot softmax (--scale 1.7), sm_80" --arch sm_80 --sq 1 --skv 300 --hq 3 --topk 13 --scale 1.7 \
        --seed $((RANDOM + 1))
    sim_mla_bwd "sim mla_bwd one-hot softmax (--scale 1.7), wgmma fp16 topk_length" --arch sm_90a --dtype fp16 --pad 64 \
        --scale 1.7 --sq 2 --skv 300 --hq 3 --topk 13 --topk-length --seed $((RANDOM + 1))
    sim_bwd "sim attn_bwd one-hot softmax (--scale 1.7)" --arch sm_80 --sq 90 --sk 70 --hq 2 --hkv 1 --scale 1.7 \
        --seed $((RANDOM + 1))
    unset PTXGEN_SIM_STRICT
    name="mla_bwd sm_120 --plan: the default tile (bm=16, one row buffer) and the budget table in seed 000's form"
    run_cli --arch sm_120 --kernel mla_bwd --plan
    expect_rc "$name" 0 && expect_output "$name" '^mla_bwd bf16 d=576 on sm_120, mma.sync, tile bm=16,bn=32,stages=1' \
        '^budget \(buffer, shape, formula, bytes\):' '^  KV.0 +\[32, 576\] bf16 +bn x d_qk x 2 \(per stage\) +36864$' \
        '^  total +the regions, aligned +76032$' '^  limit +the opt-in maximum per block +101376$' \
        '^  headroom +limit - total +25344$' && pass "$name"
}

# sim_mla_bwd_wg_mutant NAME SED_SCRIPT PHRASE: the wgmma mla_bwd edited by SED_SCRIPT must fail on the sim with PHRASE
sim_mla_bwd_wg_mutant() {   # NAME SED PHRASE [TILE]
    local name=$1 script=$2 phrase=$3 tile=${4:-deterministic=0}
    ./ptxgen --kernel mla_bwd --arch sm_90a --tile "$tile" | sed "$script" >"$TMP/mutant.ptx"
    if cmp -s <(./ptxgen --kernel mla_bwd --arch sm_90a --tile "$tile") "$TMP/mutant.ptx"; then fail "$name" "the edit changed nothing"; return; fi
    run_cli check --device sim --kernel mla_bwd --arch sm_90a --tile "$tile" --sq 3 --skv 300 --hq 40 --topk 150 --ptx "$TMP/mutant.ptx"
    expect_rc "$name" 1 && expect_output "$name" "$phrase" && pass "$name"
}

# mla_bwd in the wgmma family on the sim (sm_90a, --mma auto): both dtypes, one and two head blocks, ragged
# heads, topk_length, padding, several steps, both dkv paths; strict (notes are errors). Then its
# synchronisation, each planted bug named by the sim.
mla_bwd_wg_sim_tests() {
    local a=(--arch sm_90a)
    export PTXGEN_SIM_STRICT=1
    local t
    for t in bf16 fp16; do
        sim_mla_bwd "sim wgmma mla_bwd $t h_q=64 topk=130" "${a[@]}" --dtype $t --sq 3 --skv 300 --hq 64 --topk 130 \
            --seed $((RANDOM + 1))
        sim_mla_bwd "sim wgmma mla_bwd $t topk_length, h_q=20, pad" "${a[@]}" --dtype $t --sq 6 --skv 77 --hq 20 --topk 64 \
            --topk-length --pad 8 --seed $((RANDOM + 1))
    done
    sim_mla_bwd "sim wgmma mla_bwd h_q=128 (two head blocks) topk_length" "${a[@]}" --sq 5 --skv 300 --hq 128 --topk 96 \
        --topk-length
    sim_mla_bwd "sim wgmma mla_bwd deterministic h_q=128" "${a[@]}" --tile deterministic=1 --sq 4 --skv 300 --hq 128 \
        --topk 96 --topk-length
    sim_mla_bwd "sim wgmma mla_bwd fp16 deterministic h_q=100 topk=512 (8 steps)" "${a[@]}" --dtype fp16 \
        --tile deterministic=1 --sq 2 --skv 2000 --hq 100 --topk 512
    sim_mla_bwd "sim wgmma mla_bwd h_q=24 s_kv=2" "${a[@]}" --sq 6 --skv 2 --hq 24 --topk 40
    unset PTXGEN_SIM_STRICT
    sim_mla_bwd_wg_mutant "sim mutant wgmma mla_bwd: no fence.proxy.async between P, dS and the wgmma that read them" \
        '/fence.proxy.async/{N;s/^\s*fence.proxy.async[^\n]*\n\(\s*bar.sync 1, 256\)/\1/}' \
        "written by the generic proxy .* with no fence.proxy.async"
    sim_mla_bwd_wg_mutant "sim mutant wgmma mla_bwd: dq's products read dS before the other half is written" \
        '/fence.proxy.async/{n;/bar.sync 1, 256/d}' "shared-memory race: the wgmma.mma_async reads word"
    sim_mla_bwd_wg_mutant "sim mutant wgmma mla_bwd: the slot freed before dq's products are done" \
        '/wgmma.wait_group.sync.aligned 1;/d' "(still (reads|writes)|written before wgmma.wait_group)"
    sim_mla_bwd_wg_mutant "sim mutant wgmma mla_bwd: the dkv lines' second lane exchange trades with the wrong lane" \
        '/.entry mla_bwd_main_wg/,/^}/ s/\(shfl.sync.bfly.b32 %f[0-9]*, %f[0-9]*, \)4, 31/\12, 31/' "dkv: .* FAIL"
    # the write-after-read case: a warpgroup's P and dS stores while the other's dkv wgmma may still read them
    sim_mla_bwd_wg_mutant "sim mutant wgmma mla_bwd: P and dS rewritten before the other warpgroup's products finished" \
        '$!N;s/\(cvt.rn.bf16x2.f32[^\n]*\)\n\s*bar.sync 1, 256;/\1/;P;D' "overwrites word .* that a wgmma.mma_async of warpgroup [0-9]+ read"
    # the H200 hung on this one: setmaxnreg moves only the registers the CTA got at launch (168 x 384)
    sim_mla_bwd_wg_mutant "sim mutant wgmma mla_bwd: the warp roles ask more registers than the launch gave the CTA" \
        's/setmaxnreg.dec.sync.aligned.u32 40;/setmaxnreg.dec.sync.aligned.u32 48;/' "deadlock"
    # deterministic=1's fixed point (gen/mla_bwd_fixed.c): the bound, the scale's agreement, the room, the sectors
    sim_mla_bwd_wg_mutant "sim mutant wgmma mla_bwd deterministic: pre never raises the bound (the point at 2^126 saturates)" \
        '/red.global.max.u32/d' "dkv: .* FAIL" deterministic=1
    sim_mla_bwd_wg_mutant "sim mutant wgmma mla_bwd deterministic: main's point one bit finer than convert's" \
        '/.entry mla_bwd_main_wg/,/^}/ s/\(sub.u32 %r[0-9]*\), 1084,/\1, 1085,/' "dkv: .* FAIL" deterministic=1
    sim_mla_bwd_wg_mutant "sim mutant wgmma mla_bwd deterministic: the point 24 bits finer than the bound allows (sums wrap)" \
        's/\(sub.u32 %r[0-9]*\), 1084,/\1, 1108,/' "dkv: .* FAIL" deterministic=1
    sim_mla_bwd_wg_mutant "sim mutant wgmma mla_bwd deterministic: the line exchange's second trade with the wrong lane" \
        '/.entry mla_bwd_main_wg/,/^}/ s/\(shfl.sync.bfly.b32 %f[0-9]*, %f[0-9]*, \)8, 31/\116, 31/' "dkv: .* FAIL" deterministic=1
}

# mla_bwd in the tcgen05 family on the sim: every h_q of the issue (16, 32,
# 40, 64, 128, and 20 with bm=16), both dtypes, topk_length, ragged top-k,
# both dkv paths, sm_100a and sm_103a. Every check draws invalid indices,
# duplicates and a token with no valid slot. Strict: notes are errors.
# attn_fwd and attn_bwd sets of every family launched from their PTX and manifest alone by an independent launcher
# (test_manifest_sim: tensors, strides, workspaces, tensor maps, grids and order from the JSON), on shapes of its own:
# dense, block-sparse, varlen (packed sequences, empty ones among them), paged (shuffled pages, ragged lengths, the
# pages no sequence owns NaN) and split-KV
attn_manifest_sim_tests() {
    local set=$TMP/attn_manifest name emit run n=0
    while IFS='|' read -r name emit run; do
        [ -z "$name" ] && continue
        n=$((n + 1))
        # shellcheck disable=SC2086
        if ./ptxgen $emit -o "$set.$n.ptx" --manifest "$set.$n.json" 2>"$TMP/err"; then
            # shellcheck disable=SC2086
            c_test test_manifest_sim "$set.$n.ptx" "$set.$n.json" --seed $((RANDOM + 1)) $run
        else fail "manifest-only launch: generating $name" "$(one_line "$TMP/err")"; fi
    done <<'EOF_SETS'
mma.sync attn_fwd causal GQA|--arch sm_80 --kernel attn_fwd --causal|--b 2 --sq 70 --sk 90 --hq 4 --hkv 2
mma.sync attn_fwd d256 fp16|--arch sm_80 --kernel attn_fwd --hdim 256 --dtype fp16|--b 1 --sq 33 --sk 65 --hq 2 --hkv 1
mma.sync attn_bwd causal GQA|--arch sm_80 --kernel attn_bwd --causal|--b 2 --sq 70 --sk 90 --hq 4 --hkv 2
mma.sync attn_bwd d64 atomics|--arch sm_80 --kernel attn_bwd --hdim 64 --tile deterministic=0|--b 1 --sq 50 --sk 130 --hq 4 --hkv 1
mma.sync sm_120 attn_bwd d64|--arch sm_120 --kernel attn_bwd --hdim 64|--b 1 --sq 40 --sk 40 --hq 2 --hkv 2
mma.sync attn_fwd block-sparse|--arch sm_80 --kernel attn_fwd --block-m 128 --block-n 128|--b 1 --sq 260 --sk 300 --hq 3 --hkv 1
mma.sync attn_bwd block-sparse causal|--arch sm_80 --kernel attn_bwd --block-m 128 --block-n 128 --causal|--b 1 --sq 260 --sk 300 --hq 3 --hkv 1
wgmma attn_fwd d64 causal|--arch sm_90a --kernel attn_fwd --hdim 64 --causal|--b 2 --sq 100 --sk 100 --hq 4 --hkv 4
wgmma attn_fwd d256|--arch sm_90a --kernel attn_fwd --hdim 256|--b 1 --sq 90 --sk 170 --hq 2 --hkv 1
wgmma attn_fwd persist=0 fp16|--arch sm_90a --kernel attn_fwd --tile persist=0 --dtype fp16|--b 1 --sq 129 --sk 60 --hq 3 --hkv 1
wgmma attn_fwd block-sparse causal|--arch sm_90a --kernel attn_fwd --block-m 128 --block-n 128 --causal|--b 2 --sq 300 --sk 400 --hq 3 --hkv 1
wgmma attn_bwd deterministic causal GQA|--arch sm_90a --kernel attn_bwd --tile deterministic=1 --causal|--b 1 --sq 100 --sk 170 --hq 4 --hkv 2
wgmma attn_bwd d64|--arch sm_90a --kernel attn_bwd --hdim 64|--b 2 --sq 90 --sk 70 --hq 2 --hkv 2
wgmma attn_bwd block-sparse|--arch sm_90a --kernel attn_bwd --block-m 128 --block-n 128|--b 1 --sq 300 --sk 260 --hq 3 --hkv 3
wgmma attn_bwd d256 causal GQA|--arch sm_90a --kernel attn_bwd --hdim 256 --causal|--b 2 --sq 70 --sk 150 --hq 4 --hkv 2
wgmma attn_bwd d256 deterministic varlen|--arch sm_90a --kernel attn_bwd --hdim 256 --varlen --tile deterministic=1|--varlen 100,0,37 --varlen-k 60,30,140 --hq 2 --hkv 1
tcgen05 attn_fwd causal GQA|--arch sm_100a --kernel attn_fwd --causal|--b 1 --sq 130 --sk 150 --hq 2 --hkv 1
tcgen05 attn_fwd d192 dv128|--arch sm_100a --kernel attn_fwd --hdim 192 --hdim-v 128|--b 1 --sq 70 --sk 80 --hq 2 --hkv 2
tcgen05 attn_fwd block-sparse|--arch sm_100a --kernel attn_fwd --block-m 128 --block-n 128|--b 1 --sq 260 --sk 300 --hq 3 --hkv 1
tcgen05 attn_bwd causal GQA|--arch sm_100a --kernel attn_bwd --causal|--b 1 --sq 100 --sk 140 --hq 2 --hkv 1
tcgen05 attn_bwd d256 deterministic|--arch sm_103a --kernel attn_bwd --hdim 256 --tile deterministic=1|--b 1 --sq 70 --sk 130 --hq 2 --hkv 2
tcgen05 attn_bwd block-sparse|--arch sm_100a --kernel attn_bwd --block-m 128 --block-n 128|--b 1 --sq 260 --sk 300 --hq 3 --hkv 1
wgmma attn_fwd varlen causal GQA|--arch sm_90a --kernel attn_fwd --varlen --causal|--varlen 100,0,37,130 --varlen-k 120,30,0,200 --hq 4 --hkv 2
wgmma attn_bwd varlen causal GQA|--arch sm_90a --kernel attn_bwd --varlen --causal|--varlen 100,0,37,130 --varlen-k 120,30,0,200 --hq 4 --hkv 2
mma.sync attn_fwd varlen|--arch sm_80 --kernel attn_fwd --varlen|--varlen 77,1,200 --hq 2 --hkv 1
mma.sync attn_bwd varlen causal|--arch sm_80 --kernel attn_bwd --varlen --causal|--varlen 77,1,200 --varlen-k 90,0,150 --hq 2 --hkv 1
tcgen05 attn_fwd varlen causal|--arch sm_100a --kernel attn_fwd --varlen --causal|--varlen 130,0,9 --varlen-k 100,5,140 --hq 2 --hkv 1
tcgen05 attn_bwd varlen|--arch sm_100a --kernel attn_bwd --varlen|--varlen 130,0,9 --varlen-k 100,5,140 --hq 2 --hkv 1
wgmma attn_fwd paged causal GQA|--arch sm_90a --kernel attn_fwd --page-size 64 --causal|--b 3 --sq 70 --sk 300 --hq 4 --hkv 2
wgmma attn_fwd paged decode|--arch sm_90a --kernel attn_fwd --page-size 128|--b 3 --sq 4 --sk 500 --hq 8 --hkv 2
mma.sync attn_fwd paged decode causal|--arch sm_80 --kernel attn_fwd --page-size 32 --causal|--b 2 --sq 5 --sk 200 --hq 8 --hkv 1
tcgen05 attn_fwd paged|--arch sm_100a --kernel attn_fwd --page-size 64|--b 2 --sq 40 --sk 260 --hq 2 --hkv 1
wgmma attn_fwd split-KV|--arch sm_90a --kernel attn_fwd --split-kv --splits 3|--b 2 --sq 70 --sk 600 --hq 2 --hkv 1 --splits 3
mma.sync attn_fwd split-KV paged|--arch sm_80 --kernel attn_fwd --split-kv --page-size 64|--b 2 --sq 3 --sk 700 --hq 8 --hkv 2 --splits 5
tcgen05 attn_fwd split-KV causal|--arch sm_100a --kernel attn_fwd --split-kv --causal|--b 1 --sq 30 --sk 500 --hq 2 --hkv 2 --splits 4
EOF_SETS
    # the launcher honours zero_init: without it the persistent forward's tile counter starts poisoned
    name="planted: the wgmma attn_fwd's tile counter not zeroed (zero_init dropped from its manifest)"
    if ./ptxgen --arch sm_90a --kernel attn_fwd -o "$set.z.ptx" --manifest "$set.z.json" 2>"$TMP/err"; then
        sed 's/"zero_init": true/"zero_init": false/' "$set.z.json" >"$set.z0.json"
        if cmp -s "$set.z.json" "$set.z0.json"; then fail "$name" "the edit changed nothing"
        elif build/tests/test_manifest_sim "$set.z.ptx" "$set.z0.json" --b 1 --sq 200 --hq 2 >"$TMP/out" 2>&1; then
            fail "$name" "it passed: $(one_line "$TMP/out")"
        else expect_output "$name" "FAIL" && pass "$name"; fi
    else fail "$name" "$(one_line "$TMP/err")"; fi
}

mla_bwd_tc_sim_tests() {
    local a=(--arch sm_100a --mma tcgen05)
    export PTXGEN_SIM_STRICT=1
    sim_mla_bwd "sim mla_bwd tcgen05 bf16 h_q=128 topk=256" "${a[@]}" --tile bm=32 --sq 3 --skv 300 --hq 128 --topk 256 --topk-length
    sim_mla_bwd "sim mla_bwd tcgen05 fp16 h_q=64 ragged topk=130" "${a[@]}" --tile bm=32 --dtype fp16 --sq 3 --skv 500 --hq 64 --topk 130
    sim_mla_bwd "sim mla_bwd tcgen05 fp16 h_q=40 pad 8" "${a[@]}" --tile bm=32 --dtype fp16 --sq 4 --skv 77 --hq 40 --topk 96 \
        --topk-length --pad 8
    sim_mla_bwd "sim mla_bwd tcgen05 bf16 h_q=32 deterministic" "${a[@]}" --tile bm=32,deterministic=1 --sq 3 --skv 200 --hq 32 \
        --topk 200 --topk-length
    sim_mla_bwd "sim mla_bwd tcgen05 bf16 h_q=16 bm=16 s_kv=2" "${a[@]}" --tile bm=16 --sq 4 --skv 2 --hq 16 --topk 40
    sim_mla_bwd "sim mla_bwd tcgen05 fp16 h_q=20 bm=16 deterministic" "${a[@]}" --dtype fp16 --tile bm=16,deterministic=1 \
        --sq 3 --skv 90 --hq 20 --topk 150 --topk-length
    sim_mla_bwd "sim mla_bwd tcgen05 sm_103a bf16 h_q=128 bm=32" --arch sm_103a --tile bm=32 --sq 2 --skv 400 --hq 128 \
        --topk 128 --topk-length
    sim_mla_bwd "sim mla_bwd tcgen05 sm_103a fp16 h_q=64 deterministic" --arch sm_103a --dtype fp16 \
        --tile bm=32,deterministic=1 --sq 2 --skv 300 --hq 64 --topk 160
    # the CTA-pair plan (the default): a cta_group::2 dq kernel over a cluster of 2, then the dkv kernel
    sim_mla_bwd "sim mla_bwd pair bf16 h_q=128 ragged topk=300" --arch sm_100a --sq 3 --skv 500 --hq 128 --topk 300
    sim_mla_bwd "sim mla_bwd pair fp16 h_q=100 topk_length" --arch sm_100a --dtype fp16 --sq 4 --skv 257 --hq 100 \
        --topk 200 --topk-length
    sim_mla_bwd "sim mla_bwd pair bf16 h_q=40 (the odd CTA all padding)" --arch sm_100a --sq 3 --skv 90 --hq 40 --topk 130
    sim_mla_bwd "sim mla_bwd pair bf16 h_q=192 (two head blocks) deterministic" --arch sm_100a --tile deterministic=1 \
        --sq 2 --skv 300 --hq 192 --topk 129
    sim_mla_bwd "sim mla_bwd pair sm_103a bf16 h_q=128 topk_length pad 8" --arch sm_103a --sq 3 --skv 400 --hq 128 \
        --topk 400 --topk-length --pad 8
    sim_mla_bwd "sim mla_bwd pair sm_103a fp16 h_q=64 deterministic" --arch sm_103a --dtype fp16 --tile deterministic=1 \
        --sq 2 --skv 300 --hq 64 --topk 256
    unset PTXGEN_SIM_STRICT
    # planted bugs in the generated kernel (the K-th mbarrier wait loop of the main entry dropped:
    # compute 1 KV_FULL, 2 S, 3-5 dkv chunks; producer 6 DQ; issuer 7 KV_FULL, 8 P, 9-10 FREE):
    # the sim must name each
    tc_mutant "planted: compute reads the step's kv rows before the producer published them" 1 \
        "shared-memory race: reads word .* that warp [5-7] wrote"
    tc_mutant "planted: S^T read before its MMA landed" 2 "tcgen05.ld reads TMEM lane .* before the tcgen05.mma at PTX line"
    tc_mutant "planted: a dkv chunk read before its MMA landed" 4 \
        "TMEM race: the tcgen05.mma overwrites lane|before the tcgen05.mma at PTX line"
    tc_mutant "planted: the next gather overwrites KV before dQ^T's MMAs (its readers) landed" 6 \
        "async write to shared .* while the (TMA load|tcgen05.mma)"
    tc_mutant "planted: the MMAs read KV before the producer's rows landed" 7 \
        "the async proxy reads shared .* that nothing has written|before the TMA load"
    tc_mutant "planted: dQ^T and dkv MMAs read P^T, dS^T before the compute warps wrote them" 8 \
        "the async proxy reads shared .* that nothing has written|tcgen05.mma reads TMEM"
    tc_mutant "planted: a dkv chunk overwritten before every compute warp read it out" 9 "deadlock|TMEM race"
    # the pair's kernels (dq: compute 1 S, 2 the last dQ; issuer 3 FULL, 4 P; producer 5 DQ, 6 the odd
    # CTA's FULL before its relay. dkv: the rope chunk's read-outs 1-4)
    tc_mutant "planted pair: P formed from S before its MMA landed" 1 "tcgen05.ld reads TMEM lane" mla_bwd_dq_pair
    tc_mutant "planted pair: the peer CTA's barrier not waited (the odd CTA says its rows landed before they did)" 6 \
        "reads shared 0x[0-9a-f]+ of CTA rank 1 before the TMA load" mla_bwd_dq_pair
    tc_mutant "planted pair: the MMAs read rows before the pair's gathers landed" 3 \
        "the async proxy reads shared .* that nothing has written|before the TMA load" mla_bwd_dq_pair
    tc_mutant "planted pair: dQ MMAs read dS before every compute thread of the pair wrote it" 4 \
        "the async proxy reads shared .* that nothing has written" mla_bwd_dq_pair
    tc_mutant "planted pair: the next gather overwrites rows before dQ's MMAs (their readers) landed" 5 \
        "async write to shared .* while the TMA load" mla_bwd_dq_pair
    tc_mutant "planted pair: a dkv block read out before its MMAs landed" 2 "tcgen05.ld reads TMEM lane .* before the tcgen05.mma" \
        mla_bwd_dkv_pair
    name="planted pair: a dkv TMEM buffer overwritten before it was read out"
    ./ptxgen --kernel mla_bwd --arch sm_100a | awk '/\.entry mla_bwd_dkv_pair/ { i = 1 } /\.entry / && !/dkv_pair/ { i = 0 }
        i && /tcgen05.mma/ { sub(/\+128\]/, "]") } { print }' >"$TMP/tc_mutant.ptx"
    run_cli check --device sim --kernel mla_bwd --arch sm_100a --sq 2 --skv 300 --hq 128 --topk 400 --ptx "$TMP/tc_mutant.ptx"
    expect_rc "$name" 1 && expect_output "$name" "tcgen05.ld reads TMEM lane .* before the tcgen05.mma" && pass "$name"
    # deterministic=1's fixed point out of TMEM (mla_dkv_fixed_tmem): the warp's second 16 slots read from its first
    # 16 TMEM lanes, or their rows taken from the first half's lanes
    local m
    for m in '16x256b=/16x256b/ && s/\+(\d{7})\]/"+".($1 - 1048576)."]"/e' 'rows=s/(add.u32 %r\d+, %r\d+, )(1[6-9]|2\d|3[01]);/${1}0;/'; do
        name="planted pair deterministic: the fixed point's second half of the warp (${m%%=*})"
        ./ptxgen --kernel mla_bwd --arch sm_100a --tile deterministic=1 |
            perl -pe '$i = 1 if /\.entry mla_bwd_dkv_pair/; $i = 0 if /\.entry / && !/dkv_pair/; if ($i) { '"${m#*=}"' }' \
            >"$TMP/tc_mutant.ptx"
        if cmp -s <(./ptxgen --kernel mla_bwd --arch sm_100a --tile deterministic=1) "$TMP/tc_mutant.ptx"; then
            fail "$name" "the edit changed nothing"; continue; fi
        run_cli check --device sim --kernel mla_bwd --arch sm_100a --tile deterministic=1 --sq 2 --skv 300 --hq 128 \
            --topk 256 --ptx "$TMP/tc_mutant.ptx"
        expect_rc "$name" 1 && expect_output "$name" "dkv: .* FAIL" && pass "$name"
    done
    # an independent launcher runs the set from its PTX and manifest alone (tensor map included)
    local set=$TMP/manifest_set
    if ./ptxgen --arch sm_100a --kernel mla_bwd --tile bm=32 -o "$set.ptx" --manifest "$set.json" 2>"$TMP/err" &&
        ./ptxgen --arch sm_103a --kernel mla_bwd --tile bm=32,deterministic=1 -o "$set.det.ptx" --manifest "$set.det.json" \
            2>>"$TMP/err" &&
        ./ptxgen --arch sm_100a --kernel mla_bwd -o "$set.pair.ptx" --manifest "$set.pair.json" 2>>"$TMP/err" &&
        ./ptxgen --arch sm_103a --kernel mla_bwd --tile deterministic=1 -o "$set.pdet.ptx" --manifest "$set.pdet.json" \
            2>>"$TMP/err" &&
        ./ptxgen --arch sm_100a --kernel mla_fwd -o "$set.fwd.ptx" --manifest "$set.fwd.json" 2>>"$TMP/err" &&
        ./ptxgen --arch sm_103a --kernel mla_fwd --tile bm=16 -o "$set.fwd16.ptx" --manifest "$set.fwd16.json" 2>>"$TMP/err"; then
        c_test test_manifest_sim "$set.ptx" "$set.json" --seed $((RANDOM + 1)) --sq 6 --topk-length
        c_test test_manifest_sim "$set.det.ptx" "$set.det.json" --seed $((RANDOM + 1)) --sq 4 --hq 128 --topk 200
        c_test test_manifest_sim "$set.pair.ptx" "$set.pair.json" --seed $((RANDOM + 1)) --sq 5 --hq 128 --topk-length
        c_test test_manifest_sim "$set.pdet.ptx" "$set.pdet.json" --seed $((RANDOM + 1)) --sq 3 --hq 72 --topk 140
        c_test test_manifest_sim "$set.fwd.ptx" "$set.fwd.json" --seed $((RANDOM + 1)) --sq 8 --skv 600 --hq 40 --topk 300 --topk-length
        c_test test_manifest_sim "$set.fwd16.ptx" "$set.fwd16.json" --seed $((RANDOM + 1)) --sq 4 --skv 90 --hq 20 --topk 130
        # deterministic=1 where its fixed-point bound is nearly met (dkv = s_q h_q against s_q h_q (1 + 2^-20 ...)),
        # in every family, and the bound without max|dO| (W0), which random inputs never notice, failing there
        c_test test_manifest_sim "$set.det.ptx" "$set.det.json" --tight --skv 1 --sq 5 --hq 64 --topk 64
        c_test test_manifest_sim "$set.pdet.ptx" "$set.pdet.json" --tight --skv 1 --sq 3 --hq 128 --topk 128
        local arch
        for arch in sm_90 sm_90a; do
            if ./ptxgen --arch $arch --kernel mla_bwd --tile deterministic=1 -o "$set.$arch.ptx" --manifest "$set.$arch.json" \
                2>"$TMP/err"
            then c_test test_manifest_sim "$set.$arch.ptx" "$set.$arch.json" --tight --skv 1 --sq 5 --hq 128 --topk 64
            else fail "manifest-only launch: the $arch deterministic set" "$(one_line "$TMP/err")"; fi
        done
        name="planted: the fixed-point bound without max|dO| (the tight inputs overflow it)"
        sed 's/selp.b32 \(%r[0-9]*\), %r[0-9]*, 0x7fc00000/selp.b32 \1, 0, 0x7fc00000/' "$set.sm_90a.ptx" >"$TMP/w0.ptx"
        if cmp -s "$set.sm_90a.ptx" "$TMP/w0.ptx"; then fail "$name" "the edit changed nothing"
        elif build/tests/test_manifest_sim "$TMP/w0.ptx" "$set.sm_90a.json" --tight --skv 1 --sq 5 --hq 128 --topk 64 \
            >"$TMP/out" 2>&1; then fail "$name" "it passed: $(one_line "$TMP/out")"
        else expect_output "$name" "FAIL dkv matches float64" && pass "$name"; fi
    else
        fail "manifest-only launch: generating the sets" "$(one_line "$TMP/err")"
    fi
    local f
    for f in "sm_100a 16" "sm_103a 16" "sm_100a 32" "sm_100a 128" "sm_103a 128"; do
        set -- $f
        tc_ptxas "ptxas $1 mla_bwd tcgen05 bm=$2 fp16 deterministic: 0 spills" --kernel mla_bwd --arch $1 --dtype fp16 \
            --tile bm=$2,deterministic=1
    done
}

# tc_mutant NAME K PHRASE: mla_bwd's tcgen05 main kernel with its K-th mbarrier wait loop removed
# must fail on the sim, naming PHRASE (an extended regular expression)
tc_mutant() {
    local name=$1 k=$2 phrase=$3 ent=${4:-mla_bwd_main_tc} args=(--kernel mla_bwd --arch sm_100a --mma tcgen05)
    [ "$ent" = mla_bwd_main_tc ] && args+=(--tile bm=32)
    ./ptxgen "${args[@]}" | awk -v w="$k" -v ent="$ent" '
        $0 ~ "\\.entry " ent { inmain = 1 }
        /\.entry / && $0 !~ ent { inmain = 0 }
        inmain && /mbarrier.try_wait/ { nw++; if (nw == w) { drop = 1; next } }
        drop && /bra/ { drop = 0; next }
        { print }' >"$TMP/tc_mutant.ptx"
    if cmp -s <(./ptxgen "${args[@]}") "$TMP/tc_mutant.ptx"; then fail "$name" "the edit changed nothing"; return; fi
    run_cli check --device sim "${args[@]}" --sq 2 --skv 300 --hq "$([ "$ent" = mla_bwd_main_tc ] && echo 64 || echo 128)" \
        --topk 256 --ptx "$TMP/tc_mutant.ptx"
    expect_rc "$name" 1 && expect_output "$name" "$phrase" && pass "$name"
}

# tc_ptxas NAME ARGS...: the set ptxgen ARGS emits assembles with no spill or stack
tc_ptxas() {
    local name=$1 arch
    shift
    arch=$(printf '%s\n' "$@" | grep -m1 '^sm_')
    if ! ./ptxgen "$@" -o "$TMP/tc.ptx" 2>"$TMP/err"; then fail "$name" "$(one_line "$TMP/err")"; return; fi
    if ! ptxas -arch="$arch" -v "$TMP/tc.ptx" -o /dev/null >"$TMP/tc.log" 2>&1; then fail "$name" "$(one_line "$TMP/tc.log")"; return; fi
    if grep 'bytes stack frame' "$TMP/tc.log" | awk '{ if ($1 || $5 || $9) bad = 1 } END { exit !bad }'; then
        fail "$name" "$(grep 'bytes stack frame' "$TMP/tc.log" | tr -s ' \n' ' ')"
    elif [ -n "$(ptxas_wgmma_loss "$TMP/tc.log")" ]; then
        fail "$name" "$(ptxas_wgmma_loss "$TMP/tc.log")"
    else pass "$name ($(grep -o 'Used [0-9]* registers' "$TMP/tc.log" | sort -t' ' -k2 -n | tail -1))"; fi
}

# sim_mutant NAME SED_SCRIPT PHRASE [ARCH]: attn_fwd d=64's generated PTX for ARCH (sm_90: mma.sync,
# sm_90a: wgmma), edited by SED_SCRIPT, must be refused naming PHRASE
sim_mutant() {   # ... [ARCH [KERNEL [TILE]]]
    local name=$1 script=$2 phrase=$3 gen=(--kernel "${5:-attn_fwd}" --hdim 64 --arch "${4:-sm_90}")
    [ -n "${6:-}" ] && gen+=(--tile "$6")
    ./ptxgen "${gen[@]}" | sed "$script" >"$TMP/mutant.ptx"
    if cmp -s <(./ptxgen "${gen[@]}") "$TMP/mutant.ptx"; then fail "$name" "the edit changed nothing"; return; fi
    run_cli check --device sim "${gen[@]}" --sq 77 --sk 300 --hq 2 --hkv 1 --ptx "$TMP/mutant.ptx"
    expect_rc "$name" 1 && expect_output "$name" "$phrase" && pass "$name"
}

sim_tests() {
    local start=$SECONDS d t c shape f
    section "sim device: attn_fwd at small ragged shapes against the float64 reference"
    for d in 64 128 256; do for t in bf16 fp16; do for c in "" --causal; do
        for shape in "--sq 1 --sk 130 --hq 4 --hkv 2" "--sq 77 --sk 130 --hq 2 --hkv 1" \
                     "--sq 130 --sk 77 --hq 3 --hkv 3" "--b 2 --sq 200 --sk 333 --hq 2 --hkv 1 --pad 8"; do
            sim_check "sim d=$d $t ${c:-noncausal} $shape" --hdim $d --dtype $t $c $shape --seed $((RANDOM + 1))
        done
    done; done; done
    sim_check "sim sm_86 d=256 (99 KB tile)" --arch sm_86 --hdim 256 --sq 77 --sk 130 --causal
    sim_check "sim sm_100a d=128 (mma.sync)" --arch sm_100a --mma sync --hdim 128 --sq 77 --sk 130
    sim_check "sim sm_120 d=64 MQA" --arch sm_120 --hdim 64 --sq 100 --sk 70 --hq 4 --hkv 1 --causal
    # a module header the sim cannot honour is refused at load, naming it (it once skipped both values unread, and
    # took an unsized .shared array without .extern and parameters with no ',' between them, which ptxas refuses)
    local hdr want
    for hdr in "s/^\.version .*/.version banana/|.version needs MAJOR.MINOR, found 'banana'" \
               "s/^\.address_size .*/.address_size 32/|.address_size 32: the sim models 64-bit addresses only" \
               "s/^\.extern \.shared/.shared/|.shared ptxgen_smem has no size: an array of none is .extern .shared" \
               "s/^\t\.param \.u64 q,/\t.param .u64 q/|parameters are separated by ','"; do
        want=${hdr#*|}
        if ./ptxgen --arch sm_80 --kernel attn_fwd --hdim 64 | sed "${hdr%%|*}" >"$TMP/hdr.ptx"; then
            run_cli check --device sim --kernel attn_fwd --arch sm_80 --hdim 64 --ptx "$TMP/hdr.ptx"
            expect_rc "sim refuses a bad header: $want" 1 && expect_output "sim refuses a bad header: $want" "load: sim: .*$want" &&
                pass "sim refuses a bad header: $want"
        else fail "sim refuses a bad header: $want" "emit failed"; fi
    done
    sim_check "sim tile bm=64,bn=32,warps=4" --hdim 128 --tile bm=64,bn=32,warps=4 --sq 150 --sk 77 --causal
    sim_check "sim tile bm=128,bn=128,warps=8" --hdim 64 --tile bm=128,bn=128,warps=8 --sq 77 --sk 300
    sim_check "sim tile bm=64,bn=64,warps=4 d=256" --hdim 256 --tile bm=64,bn=64,warps=4 --sq 65 --sk 129 --causal
    varlen_tests
    sparse_tests
    paged_tests
    persist_tests

    section "sim device: attn_fwd in the wgmma family (sm_90a) against the float64 reference"
    for d in 64 128 256; do for t in bf16 fp16; do for c in "" --causal; do
        for shape in "--sq 1 --sk 130 --hq 4 --hkv 2" "--sq 77 --sk 130 --hq 2 --hkv 1" \
                     "--sq 130 --sk 77 --hq 3 --hkv 3" "--b 2 --sq 200 --sk 333 --hq 2 --hkv 1 --pad 8"; do
            sim_check "sim wgmma d=$d $t ${c:-noncausal} $shape" --arch sm_90a --hdim $d --dtype $t $c $shape --seed $((RANDOM + 1))
        done
    done; done; done
    # every tile key at a value off the default; s_k spans several ring turns so the phases wrap
    for f in "64 bm=64,bn=64,stages=3" "64 bm=192,bn=64,stages=2" "64 bn=192,stages=2" "128 bn=128,stages=2" \
             "128 bm=64,bn=96,stages=4" "128 pingpong=0" "64 pingpong=0,bm=128,bn=64" "128 producer=1,bn=96" \
             "64 producer=1,bm=64,bn=128,stages=3" "128 producer=1,pingpong=0,bn=64" "256 pingpong=0,stages=3,bm=64" \
             "256 bm=64,producer=1" "256 bn=64" "256 bn=80,persist=2"; do
        set -- $f
        for c in "" --causal; do
            sim_check "sim wgmma d=$1 tile $2 ${c:-noncausal}" --arch sm_90a --hdim $1 --tile $2 $c --sq 200 --sk 777 --hq 2 --hkv 1 \
                --seed $((RANDOM + 1))
        done
    done

    section "sim device: attn_fwd in the tcgen05 family (sm_100a, sm_103a) against the float64 reference"
    export PTXGEN_SIM_STRICT=1
    for d in 64 128 256; do for t in bf16 fp16; do for c in "" --causal; do
        for shape in "--sq 1 --sk 130 --hq 4 --hkv 2" "--sq 77 --sk 300 --hq 2 --hkv 1" \
                     "--sq 300 --sk 77 --hq 3 --hkv 3" "--b 2 --sq 200 --sk 333 --hq 2 --hkv 1 --pad 8"; do
            sim_check "sim tcgen05 d=$d $t ${c:-noncausal} $shape" --arch sm_100a --hdim $d --dtype $t $c $shape \
                --seed $((RANDOM + 1))
        done
    done; done; done
    for f in "sm_103a 64 --causal" "sm_103a 128" "sm_103a 256 --causal" "sm_100a 128 --tile bn=64" \
             "sm_100a 128 --tile stages=3 --causal" "sm_100a 64 --tile bn=64,stages=3"; do
        set -- $f
        local arch=$1 hd=$2
        shift 2
        sim_check "sim tcgen05 $f" --arch "$arch" --hdim "$hd" "$@" --sq 250 --sk 700 --hq 4 --hkv 1 --seed $((RANDOM + 1))
    done
    # decode-shaped GQA: the query heads of a kv head packed into the 128 rows (explicit pack, ragged groups)
    for f in "64 8 1 8 300 pack=8" "128 16 2 16 300 pack=8 --causal" "64 12 2 5 77 pack=4" "256 6 2 40 200 pack=4 --causal" \
             "64 32 2 3 500 pack=16 --dtype fp16 --pad 8 --b 2" "128 4 4 70 90 pack=2"; do
        set -- $f
        local hd=$1 hq=$2 hkv=$3 sq=$4 sk=$5 tile=$6
        shift 6
        sim_check "sim tcgen05 d=$hd h $hq/$hkv s_q $sq $tile $*" --arch sm_100a --hdim $hd --hq $hq --hkv $hkv --sq $sq \
            --sk $sk --tile $tile "$@" --seed $((RANDOM + 1))
    done
    local name="sim tcgen05: a decode shape (s_q 8, GQA 64/8) packs its 8 heads per CTA by itself, saying so"
    run_cli check --device sim --kernel attn_fwd --arch sm_103a --sq 8 --sk 400 --hq 64 --hkv 8 --causal --seed $((RANDOM + 1))
    expect_rc "$name" 0 && expect_output "$name" '^tile: pack=8 for the decode shape \(s_q 8, 8 query heads per kv head\)' \
        '^kernel: attn_fwd_tc_bf16_d128_bm128_bn128_st2_pack8_causal$' 'grid 1x8x1' '^check: PASS' && pass "$name"
    for f in "--sq 77 --sk 300 --hq 2 --hkv 1" "--causal --sq 300 --sk 77 --hq 3 --hkv 3 --dtype fp16" \
             "--b 2 --sq 5 --sk 333 --hq 8 --hkv 1 --pad 8"; do   # d 192: 64-key steps
        sim_check "sim tcgen05 d=192 $f" --arch sm_100a --hdim 192 $f --seed $((RANDOM + 1))
    done
    # d_v != d: MLA prefill's 192/128 (both key-step sizes fit it), and the other way round
    for f in "sm_100a 192 128 --sq 77 --sk 300 --hq 2 --hkv 1" "sm_103a 192 128 --tile bn=128 --causal --sq 300 --sk 77 --hq 3 --hkv 1" \
             "sm_100a 192 128 --tile bn=128 --dtype fp16 --b 2 --sq 130 --sk 200 --hq 4 --hkv 2 --pad 8" \
             "sm_100a 64 256 --tile bn=64 --causal --sq 77 --sk 300 --hq 2 --hkv 2" "sm_100a 128 64 --sq 8 --sk 300 --hq 16 --hkv 2" \
             "sm_100a 128 256 --causal --sq 130 --sk 300 --hq 2 --hkv 1" "sm_103a 256 64 --sq 77 --sk 300 --hq 2 --hkv 2"; do
        set -- $f
        local arch=$1 hd=$2 hv=$3
        shift 3
        sim_check "sim tcgen05 d=$hd d_v=$hv $arch $*" --arch $arch --hdim $hd --hdim-v $hv "$@" --seed $((RANDOM + 1))
    done
    # two Q tiles a CTA (FA4's M = 2 x 128): ragged, causal with s_q != s_k (rows of the second tile past s_q, and
    # with no key), GQA, packed decode rows, d_v != d, poly, 3 stages; then a CTA pair (ctas=2: cta_group::2, M = 256,
    # half of each K and V tile a CTA): causal pairs taken last first, an odd CTA with no row below s_q, d 256 (two
    # slabs of V a CTA), 192/128, 64/128, 3 and 4 stages, sm_103a
    for f in "sm_100a 64 qtiles=2 --causal --sq 300 --sk 77 --hq 2 --hkv 1" "sm_103a 128 qtiles=2 --sq 77 --sk 300 --hq 4 --hkv 2" \
             "sm_100a 128 qtiles=2 --causal --sq 513 --sk 700 --hq 2 --hkv 1 --dtype fp16" \
             "sm_100a 64 qtiles=2,stages=3 --b 2 --sq 260 --sk 900 --hq 2 --hkv 1 --pad 8" \
             "sm_103a 192 qtiles=2,bn=64 --hdim-v 128 --causal --sq 250 --sk 260 --hq 2 --hkv 2" \
             "sm_100a 128 qtiles=2,pack=8 --sq 8 --sk 300 --hq 16 --hkv 2" "sm_100a 128 qtiles=2,poly=2 --causal --sq 1 --sk 130 --hq 4 --hkv 2" \
             "sm_100a 128 ctas=2 --causal --sq 513 --sk 700 --hq 2 --hkv 1" "sm_103a 128 ctas=2 --sq 100 --sk 300 --hq 4 --hkv 2" \
             "sm_100a 256 ctas=2 --causal --sq 130 --sk 200 --hq 2 --hkv 2" \
             "sm_100a 128 ctas=2,stages=3 --dtype fp16 --b 2 --sq 200 --sk 333 --hq 2 --hkv 1 --pad 8" \
             "sm_103a 192 ctas=2 --hdim-v 128 --causal --sq 250 --sk 260 --hq 2 --hkv 2" \
             "sm_100a 64 ctas=2,stages=4 --hdim-v 128 --sq 77 --sk 900 --hq 2 --hkv 1" \
             "sm_100a 128 ctas=2,poly=2,bn=64 --causal --sq 300 --sk 77 --hq 3 --hkv 1"; do
        set -- $f
        local arch=$1 hd=$2 tile=$3
        shift 3
        sim_check "sim tcgen05 d=$hd $tile $arch $*" --arch $arch --hdim $hd --tile $tile "$@" --seed $((RANDOM + 1))
    done
    for f in "sm_100a --hdim 128 --tile ctas=2" "sm_103a --hdim 256 --causal --tile ctas=2" "sm_100a --hdim 192 --hdim-v 128 --tile ctas=2,stages=4" \
             "sm_100a --hdim 64 --tile qtiles=2" "sm_103a --hdim 128 --causal --tile qtiles=2" \
             "sm_100a --hdim 128 --dtype fp16 --tile qtiles=2,pack=8" "sm_103a --hdim 192 --hdim-v 128 --tile qtiles=2,bn=64" \
             "sm_100a --hdim 128 --tile qtiles=2,poly=2"; do
        set -- $f
        tc_ptxas "ptxas attn_fwd tcgen05 $*: 0 spills" --kernel attn_fwd --arch "$@"
    done
    # the lazy rescale (a row's max moves only once it grew by 2^8): logits scaled up, so maxima move by more and less
    for f in "128 --scale 1.0 --causal --sq 200 --sk 900 --hq 2 --hkv 1 --dtype fp16" "256 --scale 0.5 --sq 130 --sk 600 --hq 2 --hkv 1" \
             "128 --scale 1.0 --tile poly=2,qtiles=2 --sq 300 --sk 900 --hq 2 --hkv 1"; do
        set -- $f
        local hd=$1
        shift
        sim_check "sim tcgen05 lazy rescale d=$hd $*" --arch sm_100a --hdim $hd "$@" --seed $((RANDOM + 1))
    done
    # exp2 partly by polynomial: rows with no valid key (causal, s_q > s_k) must still sum to exactly 0
    for f in "64 poly=2 --causal --sq 300 --sk 77 --hq 2 --hkv 1" "128 poly=4 --sq 77 --sk 300 --hq 4 --hkv 2 --dtype fp16" \
             "256 poly=8 --causal --sq 130 --sk 200 --hq 2 --hkv 2" "128 poly=2,pack=8 --sq 8 --sk 300 --hq 8 --hkv 1"; do
        set -- $f
        local hd=$1 tile=$2
        shift 2
        sim_check "sim tcgen05 d=$hd $tile $*" --arch sm_100a --hdim $hd --tile $tile "$@" --seed $((RANDOM + 1))
    done
    sim_tc_mutant "planted tcgen05 fwd poly: P summed without flushing the polynomial's subnormals" \
        '{ gsub(/add\.ftz\.f32/, "add.f32") } { print }' 'lse: .* FAIL .*ref inf' attn_fwd --hdim 64 --causal --tile poly=2 \
        -- --sq 130 --sk 77 --hq 2 --hkv 1
    local g gen   # one CTA (d 64), and a CTA pair (d 128), whose MMAs the even CTA issues for both
    for g in "64" "128 --tile ctas=2"; do
        gen=(--hdim $g)
        PTXGEN_SIM_MAX_STEPS=3000000 sim_tc_mutant "planted tcgen05 fwd ${gen[*]}: P read by the MMA before its tcgen05.st waited" \
            '/tcgen05\.wait::st/ { next } { print }' "tcgen05.mma reads A from TMEM lane" attn_fwd "${gen[@]}" -- --sq 130 --sk 300 \
            --hq 2 --hkv 1
        PTXGEN_SIM_MAX_STEPS=3000000 sim_tc_mutant "planted tcgen05 fwd ${gen[*]}: O rescaled and P rewritten while P V is in flight" \
            '/wait: P_\{n-1\} V_\{n-1\} done/ { skip = 1 } skip && /fence::after_thread_sync/ { skip = 0; next } !skip' \
            "TMEM race|tcgen05.ld reads TMEM lane|tcgen05.st .* while" attn_fwd "${gen[@]}" -- --sq 130 --sk 300 --hq 2 --hkv 1
    done
    PTXGEN_SIM_MAX_STEPS=3000000 sim_tc_mutant "planted tcgen05 fwd qtiles=2: P over S read by P V before its tcgen05.st waited" \
        '/tcgen05\.wait::st/ { next } { print }' "tcgen05.mma reads A from TMEM lane" attn_fwd --hdim 64 --tile qtiles=2 \
        -- --sq 300 --sk 300 --hq 2 --hkv 1
    PTXGEN_SIM_MAX_STEPS=3000000 sim_tc_mutant "planted tcgen05 fwd qtiles=2: a tile's S read before its MMAs landed" \
        "/wait: this tile's S_n landed/ { skip = 1 } skip && /fence::after_thread_sync/ { skip = 0; next } !skip" \
        "tcgen05.ld reads TMEM lane" attn_fwd --hdim 64 --tile qtiles=2 -- --sq 130 --sk 300 --hq 2 --hkv 1
    PTXGEN_SIM_MAX_STEPS=3000000 sim_tc_mutant "planted tcgen05 fwd ctas=2: the pair's arrivals never reach the even CTA's issuer" \
        '/mbarrier.arrive.release.cluster.shared::cluster.b64/ { next } { print }' "deadlock: .*mbarrier" attn_fwd --hdim 128 \
        --tile ctas=2 -- --sq 300 --sk 300 --hq 2 --hkv 1
    unset PTXGEN_SIM_STRICT

    section "sim device: mla_fwd in the tcgen05 family (sm_100a, sm_103a) against the float64 reference"
    export PTXGEN_SIM_STRICT=1
    for f in "sm_100a --sq 3 --skv 300 --hq 32 --topk 200" "sm_100a --sq 3 --skv 300 --hq 64 --topk 256 --topk-length" \
             "sm_100a --dtype fp16 --sq 2 --skv 77 --hq 40 --topk 130 --pad 8" "sm_100a --tile bm=16 --sq 4 --skv 2 --hq 20 --topk 40" \
             "sm_100a --tile bm=16 --dtype fp16 --sq 2 --skv 70000 --hq 16 --topk 300 --topk-length" \
             "sm_100a --sq 2 --skv 500 --hq 100 --topk 129" "sm_103a --sq 2 --skv 400 --hq 128 --topk 128" \
             "sm_103a --tile bm=16 --sq 3 --skv 90 --hq 8 --topk 64 --topk-length"; do
        set -- $f
        local arch=$1
        shift
        sim_mla "sim tcgen05 mla_fwd $f" --arch "$arch" "$@" --seed $((RANDOM + 1))
    done
    sim_tc_mutant "planted tcgen05 mla_fwd: P^T rows read by the MMA with no fence.proxy.async" \
        '/fence\.proxy\.async\.shared::cta/ && n++ == 1 { next } { print }' "the async proxy reads shared" mla_fwd -- --sq 3 --skv 600 --hq 32 --topk 300
    sim_tc_mutant "planted tcgen05 mla_fwd: the heads' maxima read before every warp wrote its own" \
        '/bar\.sync %r[0-9]+, 128;/ && !n++ { next } { print }' "shared-memory race" mla_fwd -- --sq 3 --skv 600 --hq 32 --topk 300
    unset PTXGEN_SIM_STRICT

    section "sim device: attn_bwd in the tcgen05 family (sm_100a, sm_103a) against the float64 reference"
    export PTXGEN_SIM_STRICT=1
    for d in 64 128; do for t in bf16 fp16; do for c in "" --causal; do
        for shape in "--sq 77 --sk 130 --hq 4 --hkv 2" "--sq 130 --sk 77 --hq 2 --hkv 1 --pad 8" "--sq 1 --sk 65 --hq 2 --hkv 2" \
                     "--b 2 --sq 200 --sk 333 --hq 3 --hkv 1"; do
            sim_bwd "sim tcgen05 bwd d=$d $t ${c:-noncausal} $shape" --arch sm_100a --hdim $d --dtype $t $c $shape \
                --seed $((RANDOM + 1))
        done
    done; done; done
    for f in "sm_103a 128 --causal" "sm_103a 64 --tile deterministic=1" "sm_100a 128 --tile deterministic=1 --causal" \
             "sm_100a 64 --tile stages=1 --causal" "sm_100a 128 --tile stages=3,deterministic=1"; do
        set -- $f
        local arch=$1 hd=$2
        shift 2
        sim_bwd "sim tcgen05 bwd $f" --arch "$arch" --hdim "$hd" "$@" --sq 300 --sk 200 --hq 4 --hkv 2 --seed $((RANDOM + 1))
    done
    # d 192 and 256: dK, dV and dQ split over 3 and 2 CTAs per key block (tile key dsplit), and other splits
    for f in "sm_100a 192 bf16 --sq 77 --sk 130 --hq 4 --hkv 2" "sm_103a 192 fp16 --causal --b 2 --sq 200 --sk 333 --hq 3 --hkv 1" \
             "sm_100a 256 fp16 --sq 130 --sk 77 --hq 2 --hkv 1 --pad 8" "sm_103a 256 bf16 --causal --sq 77 --sk 130 --hq 4 --hkv 2" \
             "sm_100a 256 bf16 --tile dsplit=4 --causal --sq 200 --sk 150 --hq 2 --hkv 2" \
             "sm_100a 128 fp16 --tile dsplit=2 --causal --b 2 --sq 100 --sk 260 --hq 4 --hkv 1"; do
        set -- $f
        local arch=$1 hd=$2 dt=$3
        shift 3
        sim_bwd "sim tcgen05 bwd d=$hd $dt $arch $*" --arch $arch --hdim $hd --dtype $dt "$@" --seed $((RANDOM + 1))
    done
    # deterministic=1: dQ added in key-block order under a semaphore per (head, query block, part); two CTAs per SM
    # interleave, so a key block waits on the one below it
    for f in "sm_100a 256 --causal --b 2 --sq 200 --sk 333 --hq 4 --hkv 2" "sm_103a 192 --sq 300 --sk 200 --hq 3 --hkv 3" \
             "sm_100a 64 --causal --sq 77 --sk 400 --hq 4 --hkv 1" "sm_100a 128 --tile dsplit=2 --sq 130 --sk 260 --hq 2 --hkv 2"; do
        set -- $f
        local arch=$1 hd=$2
        shift 2
        local tile=deterministic=1
        if [ "$1" = --tile ]; then tile=$tile,$2; shift 2; fi
        PTXGEN_SIM_CTAS_PER_SM=2 sim_bwd "sim tcgen05 bwd deterministic d=$hd $arch $tile $*, 2 CTAs per SM" --arch $arch \
            --hdim $hd --tile $tile "$@" --seed $((RANDOM + 1))
    done
    PTXGEN_SIM_MAX_STEPS=3000000 sim_tc_mutant "planted tcgen05 bwd deterministic: the dQ semaphore is never raised" \
        '/red\.release\.gpu\.global\.add\.u32/ { sub(/%r[0-9]+;/, "0;") } { print }' "endless loop" \
        attn_bwd --hdim 64 --tile deterministic=1 -- --sq 130 --sk 300 --hq 2 --hkv 1
    PTXGEN_SIM_MAX_STEPS=3000000 sim_tc_mutant "planted tcgen05 bwd deterministic: the pre kernel leaves the semaphores unset" \
        '/\.entry attn_bwd_pre/ { pre = 1 } /\.entry attn_bwd_tc_main/ { pre = 0 } pre && /st\.global\.b32/ { next } { print }' \
        "endless loop" attn_bwd --hdim 256 --tile deterministic=1 -- --sq 130 --sk 300 --hq 2 --hkv 1
    for f in "sm_100a --hdim 192" "sm_103a --hdim 192 --causal" "sm_100a --hdim 256 --causal" "sm_103a --hdim 256 --dtype fp16" \
             "sm_100a --hdim 128 --tile dsplit=2" "sm_103a --hdim 256 --tile deterministic=1 --causal"; do
        set -- $f
        tc_ptxas "ptxas attn_bwd tcgen05 $*: 0 spills" --kernel attn_bwd --arch "$@"
    done
    PTXGEN_SIM_MAX_STEPS=3000000 sim_tc_mutant "planted tcgen05 bwd: P^T read by the dV MMA before its tcgen05.st waited" \
        '/tcgen05\.wait::st/ { next } { print }' "tcgen05.mma reads A from TMEM lane" attn_bwd --hdim 64 -- --sq 200 --sk 130 --hq 2 --hkv 1
    PTXGEN_SIM_MAX_STEPS=3000000 sim_tc_mutant "planted tcgen05 bwd: dQ read out while the step's MMAs may still run" \
        '/wait: the step.s MMAs done/ { skip = 1 } skip && /fence::after_thread_sync/ { skip = 0; next } !skip' \
        "TMEM race|tcgen05.ld reads TMEM lane" attn_bwd --hdim 64 -- --sq 200 --sk 130 --hq 2 --hkv 1
    unset PTXGEN_SIM_STRICT
    echo "-- sim (attention forward, tcgen05 backward): $((SECONDS - start)) s"
}

# the sim's backward and MLA tests, the planted bugs and the counters (the other lane of main runs sim_tests)
sim_tests_bwd() {
    local start=$SECONDS d t c shape f

    section "sim device: attn_bwd at small ragged shapes against the float64 reference"
    for d in 64 128; do for t in bf16 fp16; do for c in "" --causal; do
        for shape in "--sq 77 --sk 130 --hq 4 --hkv 2" "--sq 130 --sk 77 --hq 2 --hkv 1 --pad 8" "--sq 1 --sk 65 --hq 2 --hkv 2"; do
            sim_bwd "sim bwd d=$d $t ${c:-noncausal} $shape" --hdim $d --dtype $t $c $shape --seed $((RANDOM + 1))
        done
    done; done; done
    for c in "" --causal; do
        sim_bwd "sim bwd atomics (deterministic=0) d=64 GQA ${c:-noncausal}" --hdim 64 --tile deterministic=0 $c --sq 200 --sk 145 --hq 4 --hkv 2
        sim_bwd "sim bwd atomics bm=64,bn=128,warps=8 d=128 ${c:-noncausal}" --hdim 128 --tile deterministic=0,bm=64,bn=128,warps=8 $c --sq 150 --sk 200 --hq 2 --hkv 1 --pad 8
        sim_bwd "sim bwd bm=128,bn=128,warps=8 d=64 MQA ${c:-noncausal}" --hdim 64 --tile bm=128,bn=128,warps=8 $c --sq 140 --sk 260 --hq 3 --hkv 1
    done
    sim_bwd "sim bwd sm_80 d=128 b=2" --arch sm_80 --hdim 128 --b 2 --sq 70 --sk 90 --causal
    # deterministic with fewer warps than bm's 16-row slices: no dQ slices (dQ is the dq kernel's); the emitter once
    # divided by the slices' column groups anyway (0 here: SIGFPE)
    sim_bwd "sim bwd deterministic bm=128,bn=64,warps=4 d=64 GQA causal" --arch sm_80 --hdim 64 --tile bm=128,bn=64,warps=4 \
        --sq 300 --sk 200 --hq 4 --hkv 2 --causal
    sim_bwd "sim bwd sm_100a d=64 (mma.sync)" --arch sm_100a --mma sync --hdim 64 --sq 90 --sk 70 --causal

    section "sim device: attn_bwd in the wgmma family (sm_90a) against the float64 reference"
    for d in 64 128 256; do for t in bf16 fp16; do for c in "" --causal; do
        for shape in "--sq 77 --sk 130 --hq 4 --hkv 2" "--sq 130 --sk 77 --hq 2 --hkv 1 --pad 8" "--sq 1 --sk 65 --hq 2 --hkv 2" \
                     "--b 2 --sq 200 --sk 333 --hq 3 --hkv 1"; do
            sim_bwd "sim wgmma bwd d=$d $t ${c:-noncausal} $shape" --arch sm_90a --hdim $d --dtype $t $c $shape --seed $((RANDOM + 1))
        done
    done; done; done
    # every tile key off its default; s_q spans several ring turns so the phases and the dS buffers wrap
    # (d 128 steps over 80 queries by default, dQ^T = K^T dS^T: bm=64 keeps dQ = dS K covered there)
    for f in "64 deterministic=1" "128 deterministic=1" "64 stages=1" "64 bn=64,bm=64,stages=3,deterministic=1" "64 bn=64,bm=64" \
             "64 bn=64,bm=64,stages=3" "128 stages=1,deterministic=1" "64 dqbufs=2" "128 dqbufs=2,deterministic=1" \
             "128 bm=64" "128 bm=64,deterministic=1" "128 bm=80,stages=1" "256 deterministic=1" "256 stages=1" \
             "256 stages=1,dqbufs=2,deterministic=1" "128 bm=32" "128 bm=32,deterministic=1" "128 bm=128,dsplit=2,stages=1"; do
        set -- $f
        for c in "" --causal; do
            sim_bwd "sim wgmma bwd d=$1 tile $2 ${c:-noncausal}" --arch sm_90a --hdim $1 --tile $2 $c --sq 700 --sk 200 --hq 2 --hkv 1 \
                --seed $((RANDOM + 1))
        done
    done
    # deterministic=1 adds dQ in key-block order: GQA, ragged, two batches, chain order with causal; two CTAs per SM
    # interleave, so a key block's writer waits on the semaphore of the one before it
    # (the chain runs down from key block 0 with GQA, up from the last key block without)
    for c in "" --causal; do for h in "--hq 4 --hkv 2" "--hq 3 --hkv 3"; do
        PTXGEN_SIM_CTAS_PER_SM=2 sim_bwd "sim wgmma bwd deterministic d=128 $h b=2 ragged ${c:-noncausal}, 2 CTAs per SM" \
            --arch sm_90a --hdim 128 --tile deterministic=1 $c --b 2 --sq 200 --sk 333 $h --seed $((RANDOM + 1))
    done; done
    # the CTAs' order (key_block_order): chunks of (kv head, batch) pairs, as many as fill %nsmid x CTAs per SM with
    # their key blocks, key block-major inside; without GQA the whole grid, with GQA the last chunk alone. 13 SMs over
    # 3 key blocks make chunks of 4, 4 and 1 of the 9 pairs, 7 SMs chunks of 2 (the last one 1 pair), 40 SMs one chunk
    # of all 9, 1 SM (the sim's own) the grid's order; deterministic causal sets keep the grid's order
    for sms in 13 7 40; do for t in "deterministic=0 --causal" deterministic=1; do
        set -- $t
        for h in 3 6; do
            PTXGEN_SIM_SMS=$sms sim_bwd "sim wgmma bwd $1 $(t=${2:---noncausal}; echo ${t#--}) b=3 h=$h/3 ragged, $sms SMs" \
                --arch sm_90a --hdim 64 --tile $1 ${2:-} --b 3 --sq 300 --sk 300 --hq $h --hkv 3 --seed $((RANDOM + 1))
        done
    done; done
    PTXGEN_SIM_SMS=13 sim_bwd "sim wgmma bwd deterministic=1 causal b=3 GQA ragged, 13 SMs" --arch sm_90a --hdim 64 \
        --tile deterministic=1 --causal --b 3 --sq 300 --sk 300 --hq 6 --hkv 3 --seed $((RANDOM + 1))
    # d 256: two CTAs a key block (dsplit=2), neighbours in the order; deterministic, a semaphore chain per part
    for t in deterministic=0 deterministic=1; do
        PTXGEN_SIM_SMS=7 PTXGEN_SIM_CTAS_PER_SM=2 sim_bwd "sim wgmma bwd d=256 $t GQA b=2 ragged causal, 7 SMs, 2 CTAs per SM" \
            --arch sm_90a --hdim 256 --tile $t --causal --b 2 --sq 300 --sk 333 --hq 4 --hkv 2 --seed $((RANDOM + 1))
    done
    sim_bwd_wg_mutant "sim mutant wgmma bwd d=256: both CTAs of a key block take part 0" \
        '/rem\.u32 %r[0-9]+, %r[0-9]+, 2;/ { split($0, a, /[ \t,;]+/); print "\tmov.b32 " a[3] ", 0;"; next } { print }' \
        'unwritten=[1-9]' deterministic=0 "--sq 100 --sk 200 --hq 2 --hkv 1" 256
    sim_bwd_wg_mutant "sim mutant wgmma bwd d=256 deterministic: the two parts share one semaphore" \
        '/mad\.lo\.u32 %r[0-9]+, %r[0-9]+, 2, %r[0-9]+;/ && !n++ { next } { print }' \
        'endless loop' deterministic=1 "--sq 100 --sk 200 --hq 2 --hkv 1" 256
    PTXGEN_SIM_SMS=13 sim_bwd_wg_mutant "sim mutant wgmma bwd: the CTA order's last chunk taken as full" \
        '/%nsmid/ { k = 1 } k && /min\.u32/ { split($0, a, /[ \t,;]+/); print "\tmov.b32 " a[3] ", " a[5] ";"; k = 0; next } { print }' \
        'unwritten=[1-9]' deterministic=0 "--b 3 --sq 300 --sk 300 --hq 3 --hkv 3"
    PTXGEN_SIM_SMS=40 sim_bwd_wg_mutant "sim mutant wgmma bwd: GQA's last chunk as wide as the slots' pairs, not the grid's" \
        '/%nsmid/ { split($0, a, /[ \t,;]+/); per = a[3]; k = 1 }
         k && /selp\.b32/ && ++n == 2 { split($0, b, /[ \t,;]+/); print "\tselp.b32 " b[3] ", " per ", " b[5] ", " b[6] ";"; k = n = 0; next }
         { print }' \
        'unwritten=[1-9]' deterministic=0 "--b 3 --sq 300 --sk 300 --hq 6 --hkv 3"
    for v in 0 1025 x 4y; do   # the sim's SM count is refused when out of range, not clamped
        PTXGEN_SIM_SMS=$v run_cli check --kernel attn_bwd --device sim --arch sm_90a --hdim 64 --sq 70 --sk 70
        expect_rc "sim PTXGEN_SIM_SMS=$v refused" 1 && expect_output "sim PTXGEN_SIM_SMS=$v refused" 'PTXGEN_SIM_SMS\) must be an integer 1\.\.1024' &&
            pass "sim PTXGEN_SIM_SMS=$v refused"
    done
    for c in "" --causal; do   # two dQ staging buffers: the consumers run a block ahead of a waiting writer
        PTXGEN_SIM_CTAS_PER_SM=2 sim_bwd "sim wgmma bwd deterministic dqbufs=2 d=64 GQA b=2 ragged ${c:-noncausal}, 2 CTAs per SM" \
            --arch sm_90a --hdim 64 --tile deterministic=1,dqbufs=2 $c --b 2 --sq 300 --sk 333 --hq 4 --hkv 2 --seed $((RANDOM + 1))
    done
    sim_bwd_wg_mutant "sim mutant wgmma bwd dqbufs=2: the writer takes every block from buffer 0" \
        '/dQ writer/ { w = 1 } w && /and\.b32 %r[0-9]+, %r[0-9]+, 1;/ && !done { sub(/, 1;/, ", 0;"); done = 1 } { print }' \
        'deadlock' deterministic=1,dqbufs=2
    sim_bwd_wg_mutant "sim mutant wgmma bwd deterministic: the semaphore is never raised" \
        '/red\.release\.gpu\.global\.add\.u32/ { sub(/%r[0-9]+;/, "0;") } { print }' \
        'endless loop'
    sim_bwd_wg_mutant "sim mutant wgmma bwd deterministic: the pre kernel leaves the semaphores unset" \
        '/\.entry attn_bwd_pre/ { pre = 1 } /\.entry attn_bwd_wg_main/ { pre = 0 } pre && /st\.global\.b32/ { next } { print }' \
        'endless loop'
    sim_bwd_wg_mutant "sim mutant wgmma bwd deterministic: the dQ writer adds before every part is staged" \
        '/bar\.sync %r[0-9]+, %r[0-9]+;/ && !n++ { next } { print }' 'the async proxy reads shared .* that nothing has written'
    # a programmatic dependent's wait deleted: its first global access comes before any wait (strict: an error)
    sim_bwd_wg_mutant "sim mutant wgmma bwd: main touches memory before griddepcontrol.wait" \
        '/\.entry attn_bwd_wg_main/ { m = 1 } m && /griddepcontrol\.wait;/ && !d++ { next } { print }' \
        'before griddepcontrol.wait in a grid launched as a programmatic dependent'
    sim_bwd_wg_mutant "sim mutant wgmma bwd: the dQ convert touches memory before griddepcontrol.wait" \
        '/\.entry attn_bwd_dq_convert/ { m = 1 } m && /griddepcontrol\.wait;/ && !d++ { next } { print }' \
        'before griddepcontrol.wait in a grid launched as a programmatic dependent'
    # the writer waits on warpgroup 0's part, then on warpgroup 1's (a barrier pair each); then the consumers' waits
    sim_bwd_wg_mutant "sim mutant wgmma bwd deterministic: the dQ writer adds warpgroup 1's part before it is staged" \
        '/bar\.sync %r[0-9]+, %r[0-9]+;/ && n++ == 1 { next } { print }' 'cp.reduce.async.bulk.tensor reads word .* that warp .* wrote'
    sim_bwd_wg_mutant "sim mutant wgmma bwd deterministic: consumers stage dQ before the writer's adds read the last one" \
        '/bar\.sync %r[0-9]+, %r[0-9]+;/ && n++ == 2 { next } { print }' 'overwrites word .* that warp 1 read'
    # non-deterministic, dK goes behind dQ and dQ is staged while dK runs: a wait that lets dQ's products run on
    sim_bwd_wg_mutant "sim mutant wgmma bwd: dQ staged before its products are done" \
        '/wgmma\.wait_group\.sync\.aligned 1;/ && ++n == 2 { sub(/ 1;/, " 2;") } { print }' \
        'accumulator register .* read before wgmma.wait_group' deterministic=0
    # bm=80 (d 128): dS goes to shared memory transposed by stmatrix.trans; the pre kernel's 64-row CTAs run past the
    # last 80-row stats block of a head, whose rows must store nothing (they would land in the next head's block)
    sim_bwd_wg_mutant "sim mutant wgmma bwd bm=80: dS stored untransposed" \
        '/stmatrix/ { sub(/x4\.trans/, "x4") } { print }' 'dq: .* FAIL' bm=80 "--sq 130 --sk 200 --hq 3 --hkv 1" 128
    sim_bwd_wg_mutant "sim mutant wgmma bwd bm=80: the pre kernel stores the stats rows past its blocks" \
        '/\.entry attn_bwd_pre/ { pre = 1 } /\.entry attn_bwd_wg_main/ { pre = 0 } pre && /and\.pred/ { next } { print }' \
        'out-of-bounds global store' bm=80 "--sq 130 --sk 200 --hq 3 --hkv 1" 128
    sim_bwd_wg_mutant "sim mutant wgmma bwd bm=80 deterministic: the pre kernel zeroes semaphores past its blocks" \
        '/\.entry attn_bwd_pre/ { pre = 1 } /\.entry attn_bwd_wg_main/ { pre = 0 } pre && /and\.pred/ { next } { print }' \
        'out-of-bounds global store' bm=80,deterministic=1 "--sq 130 --sk 200 --hq 3 --hkv 1" 128

    section "sim device: mla_fwd (invalid indices, duplicates, empty tokens) against the float64 reference"
    for t in bf16 fp16; do
        sim_mla "sim mla_fwd sm_90 $t default tile" --dtype $t --sq 9 --skv 300 --hq 64 --topk 130 --seed $((RANDOM + 1))
        sim_mla "sim mla_fwd sm_90 $t topk_length, ragged heads, pad" --dtype $t --sq 16 --skv 77 --hq 40 --topk 96 \
            --topk-length --pad 8 --seed $((RANDOM + 1))
    done
    sim_mla "sim mla_fwd sm_80 bm=64,bn=32 h_q=128" --arch sm_80 --sq 4 --skv 500 --hq 128 --topk 64
    sim_mla "sim mla_fwd sm_86 bm=16,bn=32 s_kv=1" --arch sm_86 --sq 6 --skv 1 --hq 16 --topk 40 --topk-length
    sim_mla "sim mla_fwd sm_100a tile bm=32,bn=64 (mma.sync)" --arch sm_100a --mma sync --tile bm=32,bn=64 --sq 5 --skv 129 --hq 32 --topk 200
    sim_mla "sim mla_fwd sm_120 bm=16 h_q=20" --arch sm_120 --sq 7 --skv 64 --hq 20 --topk 64 --pad 8

    section "sim device: mla_fwd in the wgmma family (sm_90a) against the float64 reference"
    for t in bf16 fp16; do
        sim_mla "sim wgmma mla_fwd $t h_q=64 topk=130" --arch sm_90a --dtype $t --sq 9 --skv 300 --hq 64 --topk 130 \
            --seed $((RANDOM + 1))
        sim_mla "sim wgmma mla_fwd $t topk_length, h_q=40, pad" --arch sm_90a --dtype $t --sq 16 --skv 77 --hq 40 \
            --topk 96 --topk-length --pad 8 --seed $((RANDOM + 1))
    done
    sim_mla "sim wgmma mla_fwd h_q=128 (two head blocks)" --arch sm_90a --sq 4 --skv 500 --hq 128 --topk 64
    sim_mla "sim wgmma mla_fwd h_q=16 s_kv=1" --arch sm_90a --sq 6 --skv 1 --hq 16 --topk 40 --topk-length
    sim_mla "sim wgmma mla_fwd h_q=20 topk=512 (8 steps)" --arch sm_90a --sq 3 --skv 2000 --hq 20 --topk 512 --pad 8
    sim_mla "sim wgmma mla_fwd h_q=64 topk=320 (5 blocks: the last pair's second block empty)" --arch sm_90a --sq 2 \
        --skv 900 --hq 64 --topk 320 --topk-length --seed $((RANDOM + 1))
    # its synchronisation: the gather's completion and the consumers' proxy fence, the exchanges between the
    # warpgroups (maxima by mbarrier, P tiles by named barrier), the ring's halves
    local gm=(--sq 3 --skv 300 --hq 40 --topk 230)
    sim_mla_mutant "sim mutant wgmma mla_fwd: the producer arrives before its copies landed" \
        's/cp\.async\.mbarrier\.arrive\.noinc\.shared::cta\.b64 \[\(%r[0-9]*\)\]/mbarrier.arrive.shared::cta.b64 %rd0, [\1]/' \
        "before the cp.async .* has landed" "${gm[@]}"
    sim_mla_mutant "sim mutant wgmma mla_fwd: no fence.proxy.async after the gather" \
        '0,/fence.proxy.async/{/fence.proxy.async/d}' "written by the generic proxy .* with no fence.proxy.async" "${gm[@]}"
    sim_mla_mutant "sim mutant wgmma mla_fwd: warpgroup 0 reads warpgroup 1's maxima without waiting" \
        '/warpgroup 0, pair n/,/+148224\]/{/try_wait/d;/^\t@!%p[0-9]* bra/d}' \
        "(shared-memory race: reads word|reads shared memory at .* that nothing has written)" "${gm[@]}"
    sim_mla_mutant "sim mutant wgmma mla_fwd: P read by the other warpgroup before its barrier" \
        '/bar.sync 1, 256/d' "shared-memory race: the wgmma.mma_async reads word" "${gm[@]}"
    sim_mla_mutant "sim mutant wgmma mla_fwd: a ring half freed before P V is done" \
        '/m64n256k16/,/wgmma.wait_group/{/wgmma.wait_group/d}' "(still reads|written before wgmma.wait_group)" "${gm[@]}"
    sim_mla_mutant "sim mutant wgmma mla_fwd: the consumers never free a ring half" \
        '/wgmma.wait_group.sync.aligned 0/{n;/mbarrier.arrive.shared/d}' "deadlock" "${gm[@]}"

    section "sim device: mla_bwd"
    mla_bwd_sim_tests
    mla_bwd_wg_sim_tests
    mla_bwd_tc_sim_tests
    cancel_sim_tests

    section "sim device: attn_fwd and attn_bwd launched from the manifest alone"
    attn_manifest_sim_tests

    section "sim device: random configurations (a new seed each run, printed; scripts/random_checks.py)"
    counted_test random_checks python3 scripts/random_checks.py --device sim --count 30 --seconds 90 --timeout 120
    reduce_bounds_test

    section "sim device: generated PTX with a planted bug is refused"
    sim_mutant "sim mutant: no cp.async.wait_group" '/cp.async.wait_group/d' "is still filling it"
    PTXGEN_SIM_MAX_STEPS=200000 sim_mutant "sim mutant: an endless loop is stopped after a bounded instruction count" \
        '0,/^{$/s//{\nENDLESS:\n\tbra.uni ENDLESS;/' "instructions without finishing .endless loop"
    sim_mutant "sim mutant: wait_group 1 instead of 0" 's/cp.async.wait_group 0/cp.async.wait_group 1/' "is still filling it"
    sim_mutant "sim mutant: first bar.sync dropped" '0,/bar.sync/{/bar.sync/d}' "missing bar.sync"
    sim_mutant "sim mutant: every bar.sync dropped" '/bar.sync/d' "shared-memory race"
    sim_mutant "sim mutant: O stored 64 KB off" 's/st.global.v4.b32 \[%rd\([0-9]*\)\]/st.global.v4.b32 [%rd\1+65536]/' \
        "out-of-bounds global store"
    sim_mutant "sim mutant: ldmatrix 8 B off alignment" '0,/ldmatrix/{/ldmatrix/s/\]/+8]/}' "misaligned 16-byte shared load"
    # stores that stay inside the allocation, into an output's canary zone (d=64: an O row is 128 B)
    sim_mutant "sim mutant: O stored one row (128 B) late" 's/st.global.v4.b32 \[%rd\([0-9]*\)\]/st.global.v4.b32 [%rd\1+128]/' \
        "canary after o overwritten at byte \\+0 "
    sim_mutant "sim mutant: LSE stored 4 B early" 's/st.global.f32 \[%rd\([0-9]*\)\]/st.global.f32 [%rd\1+-4]/' \
        "canary before lse overwritten at byte -4 "

    # the wgmma kernel's pipeline: each wait its TMA ring, its wgmma groups and its TMA store need (the two that name
    # a wait by its place, a CTA per tile: persist_tests plants the persistent kernel's own)
    sim_mutant "sim mutant wgmma: a consumer's first key-slot wait dropped" \
        '0,/wgmma.fence/{/mbarrier.try_wait/{x;s/^/x/;/^xxxx$/{x;d};x}}' "before the TMA load .* has landed" sm_90a attn_fwd persist=0
    sim_mutant "sim mutant wgmma: wgmma.wait_group 1 where the kernel waits for 0" \
        's/wgmma.wait_group.sync.aligned 0/wgmma.wait_group.sync.aligned 1/' "(while the wgmma.mma_async .* still reads it|accumulator register .* written before wgmma.wait_group)" sm_90a
    sim_mutant "sim mutant wgmma: no arrive on the slots' empty barriers" '/@%p[0-9]* mbarrier.arrive.shared/d' \
        "deadlock: .*mbarrier" sm_90a
    sim_mutant "sim mutant wgmma: the first wgmma.fence dropped" '0,/wgmma.fence/{/wgmma.fence/d}' \
        "wgmma.mma_async before any wgmma.fence" sm_90a
    sim_mutant "sim mutant wgmma: no fence.proxy.async before the O store" '/fence.proxy.async/d' \
        "no fence.proxy.async by its writer" sm_90a
    sim_mutant "sim mutant wgmma: exit before the O store has read shared memory" '/cp.async.bulk.wait_group.read/d' \
        "the CTA exits while the TMA store .* still reads its shared memory" sm_90a attn_fwd persist=0

    # the wgmma attn_bwd's own synchronisation: the dS^T exchange between consumers, dQ's staging and its rows
    sim_mutant "sim mutant wgmma bwd: the consumers' dS^T barrier dropped" '0,/bar.sync %r[0-9]*, 256;/{/bar.sync %r[0-9]*, 256;/d}' \
        "shared-memory race: the wgmma.mma_async reads word" sm_90a attn_bwd
    sim_mutant "sim mutant wgmma bwd: no fence.proxy.async after the dS^T stores" '0,/fence.proxy.async/{/fence.proxy.async/d}' \
        "written by the generic proxy .* with no fence.proxy.async by its writer" sm_90a attn_bwd
    # each warpgroup's dQ part is freed once its own reduce-add read it (a barrier pair per warpgroup)
    sim_mutant "sim mutant wgmma bwd: warpgroup 0's dQ staged again before its reduce-add read it" \
        '0,/wait_group.read/{/wait_group.read/d}' \
        "overwrites (shared memory at .* that the in-flight TMA reduce .* still reads|word .* that warp 1 read)" sm_90a attn_bwd
    sim_mutant "sim mutant wgmma bwd: warpgroup 1's dQ staged again before its reduce-add read it" \
        '/wait_group.read/{x;s/^/x/;/^x\{2\}$/{x;d};x}' \
        "overwrites shared memory at .* that the in-flight TMA reduce .* still reads" sm_90a attn_bwd
    sim_mutant "sim mutant wgmma bwd: dQ reduced into the wrong rows" \
        's/\(cp.reduce.async.bulk.tensor.4d.*\[%rd[0-9]*, {\)\(%r[0-9]*\), \(%r[0-9]*\)/\1\2, %r0/' "^  dq: .*FAIL" sm_90a attn_bwd

    section "sim device: planted-bug PTX files assemble (the bugs are invisible to ptxas)"
    local arch refuses
    for f in tests/sim/*.ptx; do
        arch=$(sed -n 's|^// arch: ||p' "$f"); arch=${arch:-sm_80}   # a file's "// arch:" header, sm_80 by default
        # a file of PTX that ptxas refuses as the sim does says so, with ptxas's words: "// ptxas refuses: TEXT"
        refuses=$(sed -n 's|^// ptxas refuses: ||p' "$f")
        if [ -n "$refuses" ]; then
            if ptxas -arch="$arch" "$f" -o /dev/null >"$TMP/ptxas.log" 2>&1; then
                fail "ptxas refuses $(basename "$f")" "ptxas took it"
            elif grep -qF "$refuses" "$TMP/ptxas.log"; then pass "ptxas refuses $(basename "$f"), as the sim does"
            else fail "ptxas refuses $(basename "$f")" "not with '$refuses': $(one_line "$TMP/ptxas.log")"; fi
            continue
        fi
        if ptxas -arch="$arch" "$f" -o /dev/null >"$TMP/ptxas.log" 2>&1; then pass "ptxas accepts $(basename "$f")"
        else fail "ptxas accepts $(basename "$f")" "$(one_line "$TMP/ptxas.log")"; fi
    done
    sim_cuda_tests
    # the probes the sim's unit tests write as PTX text (every configuration and planted bug)
    ptxas_probes "wgmma probes of test_sim_wgmma" sm_90a test_sim_wgmma
    ptxas_probes "tcgen05 probes of test_sim_tcgen05{,_cp}" sm_100a test_sim_tcgen05 test_sim_tcgen05_cp
    # the programs the golden files' GPU runs take (a few of test_fuzz_alu's, every one of test_approx's)
    ptxas_probes "programs of test_fuzz_alu and test_approx" sm_90 test_fuzz_alu test_approx

    # the emitter-written cross-check probes: xprobe (sm_90a), tprobe and tprobe_pair (tcgen05, sm_100a and sm_103a)
    local probe parch
    for probe in "xprobe sm_90a" "tprobe sm_100a" "tprobe sm_103a" "tprobe_pair sm_100a" "tprobe_pair sm_103a"; do
        set -- $probe
        parch=$2; [ "$1" = xprobe ] && parch=""
        if build/tests/test_$1 --ptx ${parch:+--arch $parch} >"$TMP/$1.ptx" 2>"$TMP/probe.log" &&
           ptxas -arch="$2" "$TMP/$1.ptx" -o /dev/null >"$TMP/ptxas.log" 2>&1; then pass "ptxas -arch=$2 accepts the $1 probe"
        else fail "ptxas -arch=$2 accepts the $1 probe" "$(one_line "$TMP/probe.log") $(one_line "$TMP/ptxas.log")"; fi
    done

    section "sim device: counters and refusals"
    run_cli check --kernel attn_fwd --device sim --hdim 64 --sq 77 --sk 130 --stats
    expect_rc "sim --stats" 0 && expect_output "sim --stats" '^ +tensor \(mma\) +[0-9]+' 'shared memory: [0-9]+ requests' \
        'bank-conflict wavefronts [0-9]+' 'global memory: [0-9]+ requests, [0-9]+ sectors' && pass "sim --stats"
    usage_error "--stats needs the sim" "--stats" "sim" -- check --kernel attn_fwd --stats
    usage_error "bench refuses the sim" "bench needs a GPU" -- bench --kernel attn_fwd --device sim
    usage_error "--device bogus" "--device" -- check --kernel attn_fwd --device gpu7
    usage_error "--ptx missing file" "cannot read" -- check --kernel attn_fwd --device sim --ptx /nonexistent.ptx
    echo "-- sim (backward, MLA, planted bugs, counters): $((SECONDS - start)) s"
}

# ---- 4. the command line ----

# usage_error NAME PHRASE... -- ARGS...: ptxgen ARGS must exit 2 with exactly one
# line on stderr that contains every PHRASE.
usage_error() {
    local name=$1 phrases=() p lines
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do phrases+=("$1"); shift; done
    shift
    run_cli "$@"
    crashed "$name" && return
    lines=$(grep -c '' "$TMP/err")
    if [ "$rc" -ne 2 ]; then fail "$name" "exit $rc, want 2; stderr: $(one_line "$TMP/err")"; return; fi
    if [ "$lines" -ne 1 ]; then fail "$name" "$lines lines on stderr, want 1: $(one_line "$TMP/err")"; return; fi
    for p in "${phrases[@]}"; do
        if ! grep -qF -- "$p" "$TMP/err"; then fail "$name" "stderr lacks \"$p\": $(one_line "$TMP/err")"; return; fi
    done
    pass "$name"
}

cli_errors() {
    section "command-line errors (exit 2, one line on stderr)"
    local fwd=(--arch sm_90 --kernel attn_fwd)
    usage_error "cli unknown flag" "unknown" "--bogus" -- --bogus
    usage_error "cli unknown arch" "unknown arch" "sm_99" -- --arch sm_99 --kernel attn_fwd
    usage_error "cli unknown kernel" "unknown kernel" "nosuch" -- --arch sm_90 --kernel nosuch
    usage_error "cli mla_bwd bm=32 on 99 KB parts" "mla_bwd main" "101376 B" -- --arch sm_86 --kernel mla_bwd --tile bm=32
    usage_error "cli mla_bwd bn" "bn" "32" -- --arch sm_90 --kernel mla_bwd --tile bn=64
    usage_error "cli attn_bwd hdim 256" "head dim 256" "attn_bwd" -- --arch sm_90 --kernel attn_bwd --hdim 256
    usage_error "cli attn_bwd dQ split" "dQ tile" -- --arch sm_90 --kernel attn_bwd --hdim 64 --tile deterministic=0,bm=64,bn=128,warps=8
    usage_error "cli attn_bwd key rows per warp" "key rows per warp" -- --arch sm_90 --kernel attn_bwd --tile bn=64,warps=8
    usage_error "cli bad dtype" "dtype" "fp8" -- "${fwd[@]}" --dtype fp8
    usage_error "cli bad hdim 96" "head dim 96" -- "${fwd[@]}" --hdim 96
    usage_error "cli bad hdim 100" "head dim 100" -- "${fwd[@]}" --hdim 100
    usage_error "cli unknown tile key" "unknown tile key" "bx" "bm, bn, warps" -- "${fwd[@]}" --tile bx=64
    usage_error "cli bad tile value" "48" "64|128" -- "${fwd[@]}" --tile bm=48
    usage_error "cli malformed tile" "'bm'" "key=value" -- "${fwd[@]}" --tile bm
    usage_error "cli missing --arch" "--arch" "required" -- --kernel attn_fwd
    usage_error "cli missing --kernel" "--kernel" "required" -- --arch sm_90
    usage_error "cli --hdim abc" "--hdim" "abc" -- "${fwd[@]}" --hdim abc
    usage_error "cli --arch missing its value" "--arch" "needs a value" -- --kernel attn_fwd --arch
    usage_error "cli --hdim missing its value" "--hdim" "needs a value" -- "${fwd[@]}" --hdim
    usage_error "check h_q not a multiple of h_kv" "multiple" -- check --kernel attn_fwd --hq 8 --hkv 3
    usage_error "check --sq 0" "--sq" -- check --kernel attn_fwd --sq 0
    mla_cli_errors
    ref_tests
    family_tests
}

# --mma: families the arch lacks or the kernel has no generator for are
# refused; auto picks among the kernel's families and says when it fell back.
family_tests() {
    section "--mma (instruction families)"
    local name
    usage_error "--mma tcgen05 on sm_120" "sm_120 has mma.sync only; tcgen05 needs sm_100a or sm_103a" -- \
        --arch sm_120 --kernel attn_fwd --mma tcgen05
    usage_error "--mma tcgen05 on sm_100 (no 'a')" "sm_100 has mma.sync only; tcgen05 needs sm_100a or sm_103a" -- \
        --arch sm_100 --kernel attn_fwd --mma tcgen05
    usage_error "--mma wgmma on sm_90" "sm_90 has mma.sync only; wgmma needs sm_90a" -- --arch sm_90 --kernel attn_fwd --mma wgmma
    usage_error "--mma tcgen05 on sm_90a" "sm_90a has mma.sync and wgmma; tcgen05 needs sm_100a or sm_103a" -- \
        --arch sm_90a --kernel mla_fwd --mma tcgen05 --plan
    usage_error "--mma wgmma on sm_100a" "sm_100a has mma.sync and tcgen05; wgmma needs sm_90a" -- \
        --arch sm_100a --kernel mla_fwd --mma wgmma
    usage_error "--mma bogus" "unknown MMA family 'bogus'" "auto, sync, wgmma or tcgen05" -- "${fwd[@]}" --mma bogus
    usage_error "--mma missing its value" "--mma" "needs a value" -- "${fwd[@]}" --mma

    local kern
    for kern in attn_fwd attn_bwd mla_fwd mla_bwd; do   # every kernel has tcgen05 now: auto takes it, no note
        name="--mma auto on sm_100a takes the tcgen05 $kern, with no note"
        run_cli --arch sm_100a --kernel $kern --plan
        expect_rc "$name" 0 && expect_output "$name" '^family: +tcgen05 \(--mma auto: sm_100a.s newest\)$' &&
            if [ -s "$TMP/err" ]; then fail "$name" "stderr: $(one_line "$TMP/err")"; else pass "$name"; fi
    done
    name="--mma auto on sm_100a picks the tcgen05 attn_fwd: the TMEM map, roles and shared memory in the plan"
    run_cli --arch sm_100a --kernel attn_fwd --plan
    expect_rc "$name" 0 && expect_output "$name" '^family: +tcgen05 \(--mma auto: sm_100a.s newest\)$' \
        '^  S\.0 +0 +128 +128 +fp32' '^  S\.1 +128 +256 ' '^  P\.0 +256 +320 +64 +bf16' '^  P\.1 +320 +384 +64 +bf16' \
        '^  O +384 +512 +128 +fp32' '^  softmax +4 +240 ' '^  correction +4 +104 ' '^  mma, producer +4 +56 ' '^  KV\.1 ' \
        '^verdict: +fits' && pass "$name"
    name="--plan of a decode shape on sm_100a: the packed tile, its TMEM map and, beside it, what mma.sync would need"
    run_cli --arch sm_100a --kernel attn_fwd --hq 64 --hkv 8 --sq 8 --plan
    expect_rc "$name" 0 && expect_output "$name" '^attn_fwd bf16 d=128 on sm_100a, tcgen05, tile .*pack=8,poly=0,qtiles=1,ctas=1$' \
        '^tile: +pack=8 for the decode shape \(s_q 8, 8 query heads per kv head\): 1 CTA per kv head' \
        'pack=8 \(8 heads x 16 tokens a CTA\)' '^  O +384 +512 +128 +fp32' \
        '^beside it: +mma\.sync for this decode shape \(s_q 8 x 8 query heads per kv head = 64 rows\)' \
        '4 B x 4 m16 tiles x 256 threads x 64 = 262144 B of shared memory, over the 232448 B' && pass "$name"
    name="emit of a decode shape names the packing on stderr (a shape class, never a silent choice)"
    run_cli --arch sm_103a --kernel attn_fwd --hq 12 --hkv 1 --sq 3
    expect_rc "$name" 0 && expect_output "$name" '^\.visible \.entry attn_fwd_tc_bf16_d128_bm128_bn128_st2_pack16\(' \
        '^ptxgen: tile: pack=16 for the decode shape \(s_q 3, 12 query heads per kv head\): 1 CTA per kv head, each reading K and V once for 12 heads$' \
        && pass "$name"
    usage_error "emit with a shape flag it cannot use" "emit and --plan take only --sq, --sk, --hq and --hkv" -- \
        --arch sm_100a --kernel attn_fwd --b 4
    usage_error "emit with h_q not a multiple of h_kv" "h_q (6) must be a multiple of h_kv (4)" -- \
        --arch sm_100a --kernel attn_fwd --hq 6 --hkv 4
    usage_error "tcgen05 attn_fwd d=192 with 128-key steps: refused, naming the budget" "needs 246888 B" \
        "shared memory" -- --arch sm_100a --kernel attn_fwd --hdim 192 --tile bn=128 --plan
    name="tcgen05 attn_fwd d 192, d_v 128: the plan sizes V and O by d_v, the entry names it"
    run_cli --arch sm_100a --kernel attn_fwd --hdim 192 --hdim-v 128 --tile bn=128 --plan
    expect_rc "$name" 0 && expect_output "$name" '^attn_fwd bf16 d=192 d_v=128 on sm_100a, tcgen05' \
        '^  KV.0 .* 81920 ' '^  O +384 +512 +128 +fp32 +\[128, 128\]' && pass "$name"
    usage_error "d_v != d on the wgmma attn_fwd: refused, naming the kind that takes it" \
        "d_v 64 != d 128 is not supported by the wgmma attn_fwd, which takes d_v = d; the tcgen05 attn_fwd" -- \
        --arch sm_90a --kernel attn_fwd --hdim 128 --hdim-v 64
    usage_error "d_v the tcgen05 attn_fwd has no tile for: refused, naming the ones it has" \
        "d_v 96 is not supported by the tcgen05 attn_fwd: d_v takes the head dims d does (64, 128, 192, 256)" -- \
        --arch sm_100a --kernel attn_fwd --hdim 128 --hdim-v 96
    usage_error "d_v 256 with d 64 at 128-key steps: refused, naming the TMEM budget" "needs 640 TMEM columns" -- \
        --arch sm_100a --kernel attn_fwd --hdim 64 --hdim-v 256 --tile bn=128 --plan
    local dd dvv bad=""   # the default tile of every (d, d_v) the tcgen05 attn_fwd takes fits its budgets
    for dd in 64 128 192 256; do for dvv in 64 128 192 256; do
        ./ptxgen --arch sm_100a --kernel attn_fwd --hdim $dd --hdim-v $dvv --plan >/dev/null 2>&1 || bad="$bad $dd/$dvv"
    done; done
    if [ -z "$bad" ]; then pass "tcgen05 attn_fwd: the default tile of each of the 16 (d, d_v) fits"
    else fail "tcgen05 attn_fwd: the default tile of each of the 16 (d, d_v) fits" "refused:$bad"; fi
    usage_error "d_v on mla_fwd other than its 512: refused" "d_v 128 is not supported by mla_fwd: its d_v is 512" -- \
        --arch sm_100a --kernel mla_fwd --hdim-v 128
    name="tcgen05 attn_fwd qtiles=2: two softmax warpgroups, S and O per Q tile in TMEM, the 64 K register pool"
    run_cli --arch sm_100a --kernel attn_fwd --tile qtiles=2 --plan
    expect_rc "$name" 0 && expect_output "$name" '^  S\.1 +128 +256 +128 +fp32' '^  O\.1 +384 +512 +128 +fp32' \
        '^  softmax +8 +192 +49152$' '^  correction +4 +80 +10240$' '^threads per CTA: +512$' && pass "$name"
    name="tcgen05 attn_fwd ctas=2: a cluster of 2, half of each K and V tile a CTA, the pair's grid in the manifest"
    ./ptxgen --arch sm_100a --kernel attn_fwd --tile ctas=2 --manifest "$TMP/pair.json" >/dev/null 2>&1
    run_cli --arch sm_100a --kernel attn_fwd --tile ctas=2 --plan
    expect_rc "$name" 0 && expect_output "$name" 'ctas=2 \(a cluster of 2, M = 256\)' '^  KV\.0 .* 32768 .*this CTA.s half of K_n' &&
        grep -q '"cluster": \["2", "1", "1"\]' "$TMP/pair.json" && grep -q '"2 \* cdiv(s_q, 256)"' "$TMP/pair.json" && pass "$name" ||
        { [ "$rc" = 0 ] && fail "$name" "the manifest lacks the pair's cluster or grid"; }
    usage_error "tcgen05 attn_fwd ctas=2 with d_v 64: refused, naming the slab" "d_v a multiple of 128" -- \
        --arch sm_100a --kernel attn_fwd --hdim 64 --tile ctas=2
    usage_error "tcgen05 attn_fwd d=256 with two Q tiles: refused, naming the budget" "needs 264304 B" "shared memory" -- \
        --arch sm_100a --kernel attn_fwd --hdim 256 --tile qtiles=2 --plan
    usage_error "d=192 on the wgmma attn_fwd: refused, naming the head dims it takes" \
        "head dim 192 is not supported by the wgmma attn_fwd" -- --arch sm_90a --kernel attn_fwd --hdim 192
    usage_error "d=96 on the tcgen05 attn_fwd: refused naming the head dims it takes" \
        "head dim 96 is not supported by the tcgen05 attn_fwd (64, 128, 192 or 256" -- --arch sm_100a --kernel attn_fwd --hdim 96
    usage_error "d=96 on the tcgen05 attn_bwd: refused naming the head dims it takes" \
        "head dim 96 is not supported by the tcgen05 attn_bwd (64, 128, 192 or 256" -- --arch sm_100a --kernel attn_bwd --hdim 96
    usage_error "tcgen05 attn_bwd d=256 in 3 parts: refused, the parts are not whole slabs" "tile dsplit=3 cuts d=256" \
        "use dsplit=1, 2, 4" -- --arch sm_100a --kernel attn_bwd --hdim 256 --tile dsplit=3
    usage_error "wgmma attn_bwd d=256 in one part: refused naming the registers" "tile dsplit=1 leaves each CTA 256 columns" \
        "256 fp32 registers a consumer thread, past the 240 setmaxnreg gives (use dsplit=2)" -- --arch sm_90a --kernel attn_bwd \
        --hdim 256 --tile dsplit=1
    usage_error "wgmma attn_bwd d=64 in two parts: refused, the parts are not whole slabs" "tile dsplit=2 cuts d=64" \
        "use dsplit=1" -- --arch sm_90a --kernel attn_bwd --hdim 64 --tile dsplit=2
    usage_error "wgmma attn_bwd d=256 with 80-query steps: refused, naming the budget" "needs 378920 B" "shared memory" -- \
        --arch sm_90a --kernel attn_bwd --hdim 256 --tile bm=80 --plan
    usage_error "wgmma attn_bwd d=256 with two dQ staging buffers: refused, naming its own 32-query step's budget" \
        "bm=32 bn=128 stages=2 dsplit=2" "needs 247848 B" -- --arch sm_90a --kernel attn_bwd --hdim 256 --tile dqbufs=2
    usage_error "d=192 on the wgmma attn_bwd: refused naming the head dims it takes" \
        "head dim 192 is not supported by the wgmma attn_bwd (64, 128 or 256" -- --arch sm_90a --kernel attn_bwd --hdim 192
    usage_error "tcgen05 attn_bwd d=256 in one part: refused naming the TMEM region past the 512 columns" \
        "region dK at columns 384-639 ends past the 512 columns" -- --arch sm_100a --kernel attn_bwd --hdim 256 --tile dsplit=1
    usage_error "tcgen05 attn_fwd d=256 with 128-key steps: refused, naming the budget" "needs 328808 B" \
        "shared memory" -- --arch sm_100a --kernel attn_fwd --hdim 256 --tile bn=128 --plan
    name="--mma auto on sm_103a: the tcgen05 mla_fwd's plan, its TMEM map (S^T, O^T) beside the shared memory"
    run_cli --arch sm_103a --kernel mla_fwd --plan
    expect_rc "$name" 0 && expect_output "$name" '^mla_fwd bf16 .*on sm_103a, tcgen05, tile bm=32,bn=128$' \
        '^  S\^T +0 +32 +32 +fp32' '^  O\^T +32 +160 +128 +fp32 +4 x \[128, 32\]' '^  O +0 .*\[union over KV\]' \
        '^verdict: +fits' && pass "$name"
    name="--mma auto on sm_90a picks the wgmma mla_bwd: roles within the launch's registers, Q and dO resident"
    run_cli --arch sm_90a --kernel mla_bwd --plan
    expect_rc "$name" 0 && expect_output "$name" '^family: +wgmma \(--mma auto: sm_90a.s newest\)$' \
        '^kernel mla_bwd main \(wgmma\)' '^  producer +4 +40 ' '^  consumer +8 +232 ' '^  dO ' \
        '^  total +64512 +of the 64512 the CTA holds' && pass "$name"
    name="--mma auto on sm_90a picks the wgmma mla_fwd: warp roles, registers and the ring in the plan"
    run_cli --arch sm_90a --kernel mla_fwd --plan
    expect_rc "$name" 0 && expect_output "$name" '^family: +wgmma \(--mma auto: sm_90a.s newest\)$' \
        '^  producer +4 +56 ' '^  consumer +8 +224 ' '^  KV\.1 ' '^verdict: +fits' && pass "$name"
    name="--mma auto on sm_90 (its newest family): no note"
    run_cli --arch sm_90 --kernel mla_fwd --plan
    expect_rc "$name" 0 && expect_output "$name" '^family: +mma\.sync \(--mma auto: sm_90.s newest\)$' &&
        if [ -s "$TMP/err" ]; then fail "$name" "stderr: $(one_line "$TMP/err")"; else pass "$name"; fi
    name="--mma sync on sm_103a: no note, the plan says it was asked for"
    run_cli --arch sm_103a --kernel mla_bwd --mma sync --plan
    expect_rc "$name" 0 && expect_output "$name" '^family: +mma\.sync \(--mma sync\)$' &&
        if [ -s "$TMP/err" ]; then fail "$name" "stderr: $(one_line "$TMP/err")"; else pass "$name"; fi
    name="sm_100 and sm_103 (no 'a') take mma.sync kernels at their lowest PTX ISA"
    run_cli --arch sm_103 --kernel attn_fwd
    expect_rc "$name" 0 && expect_output "$name" '^\.version 8\.8$' '^\.target sm_103$' && pass "$name"
}

# check --ref (which reference judges) and selfcheck (of the GPU references):
# refusals before any device is opened, and the reference line on the sim.
ref_tests() {
    section "check --ref and selfcheck"
    local sim=(check --kernel attn_fwd --device sim --hdim 64 --sq 77 --sk 130) name
    usage_error "--ref gpu refuses the sim" "--ref gpu" "CUDA device" -- "${sim[@]}" --ref gpu
    usage_error "--ref bogus" "--ref" "cpu, gpu or auto" "'bogus'" -- check --kernel attn_fwd --ref bogus
    usage_error "--ref missing its value" "--ref" "needs a value" -- check --kernel attn_fwd --ref
    usage_error "bench refuses --ref" "bench takes no --ref" -- bench --kernel attn_fwd --ref cpu
    usage_error "selfcheck refuses the sim" "selfcheck" "CUDA device" -- selfcheck --device sim
    usage_error "selfcheck takes only --device" "selfcheck takes only --device" "'--kernel'" -- selfcheck --kernel attn_fwd
    name="--ref auto (the default) on the sim: the CPU reference"
    run_cli "${sim[@]}"
    expect_rc "$name" 0 && expect_output "$name" '^reference: cpu float64 \(auto: the sim device' '^check: PASS' && pass "$name"
    name="--ref cpu on the sim"
    run_cli "${sim[@]}" --ref cpu
    expect_rc "$name" 0 && expect_output "$name" '^reference: cpu float64 \(--ref cpu\)' '^check: PASS' && pass "$name"
}

# The runner's sparse MLA shape flags (mla_fwd and mla_bwd): refused before any device is opened.
mla_cli_errors() {
    section "command-line errors of check/bench/xcheck --kernel mla_fwd|mla_bwd"
    local mla=(check --kernel mla_fwd) f k
    for k in mla_fwd mla_bwd; do
        for f in "--hkv 2" "--b 2" "--sk 100" --causal; do
            # shellcheck disable=SC2086
            usage_error "$k refuses ${f%% *}" "$k takes no ${f%% *}" "--skv" "--topk" -- check --kernel $k $f
        done
        usage_error "xcheck $k refuses --hkv" "$k takes no --hkv" -- xcheck --kernel $k --hkv 1
        usage_error "bench $k refuses --sk" "$k takes no --sk" -- bench --kernel $k --sk 64
        usage_error "$k --topk 0" "--topk" "got '0'" -- check --kernel $k --topk 0
        usage_error "$k bench refuses the sim" "bench needs a GPU" -- bench --kernel $k --device sim
    done
    for f in "--topk 64" "--skv 100" --topk-length; do
        # shellcheck disable=SC2086
        usage_error "attn_fwd refuses ${f%% *}" "attn_fwd takes no ${f%% *}" "--hkv" -- check --kernel attn_fwd $f
    done
    usage_error "attn_bwd refuses --topk" "attn_bwd takes no --topk" -- bench --kernel attn_bwd --topk 64
    usage_error "mla_fwd --skv 0" "--skv" "got '0'" -- "${mla[@]}" --skv 0
    usage_error "mla_fwd --hq 0" "--hq" "got '0'" -- "${mla[@]}" --hq 0
    usage_error "mla_fwd --sq -3" "--sq" "got '-3'" -- "${mla[@]}" --sq -3
    usage_error "mla_fwd --skv beyond int32" "--skv" "2147483647" -- "${mla[@]}" --skv 2147483648
    usage_error "mla_fwd --topk beyond u32" "--topk" "4294967296" -- "${mla[@]}" --topk 4294967296
    usage_error "mla_fwd --hq beyond the grid" "--hq" "65535" -- "${mla[@]}" --hq 70000
    usage_error "mla_fwd --topk abc" "--topk" "abc" -- "${mla[@]}" --topk abc
    usage_error "mla_fwd --topk missing its value" "--topk" "needs a value" -- "${mla[@]}" --topk
    usage_error "mla_fwd --pad 4" "--pad" "multiple of 8" -- "${mla[@]}" --pad 4
    usage_error "mla_fwd --scale 0" "--scale" -- "${mla[@]}" --scale 0
    local sc
    for sc in -1 nan inf 1e-39 1e-45 3.5e38; do
        usage_error "--scale $sc refused (not a positive normal fp32)" "--scale needs a positive normal fp32 number" "'$sc'" -- \
            "${mla[@]}" --scale "$sc"
    done
    usage_error "a repeated flag is refused, not a silent override" "--arch is given twice" -- \
        --arch sm_90 --kernel attn_fwd --arch sm_80
    usage_error "a repeated switch is refused too" "--causal is given twice" -- check --kernel attn_fwd --causal --causal
    usage_error "a repeated check flag is refused" "--sq is given twice" -- "${mla[@]}" --sq 4 --sq 5

    name="a PTX that fails to load is dumped to a fresh private file in \$TMPDIR, never a fixed path"
    printf '.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus.op; ret; }\n' >"$TMP/bad.ptx"
    TMPDIR=$TMP run_cli check --device sim --kernel attn_fwd --sq 16 --sk 16 --ptx "$TMP/bad.ptx"
    local dumped
    dumped=$(grep -o "PTX dumped to [^ ;]*" "$TMP/err" | sed 's/PTX dumped to //')
    if [ "$rc" = 1 ] && [[ "$dumped" == "$TMP"/ptxgen-attn_fwd_*-??????.ptx ]] && [ -f "$dumped" ] &&
        [ "$(stat -c %a "$dumped")" = 600 ] && cmp -s "$dumped" "$TMP/bad.ptx"; then pass "$name"
    else fail "$name" "rc $rc, dumped '$dumped': $(one_line "$TMP/err")"; fi
    usage_error "check of a kind the runner lacks" "run attn_fwd, attn_bwd, mla_fwd, mla_bwd;" "'nosuch'" -- check --kernel nosuch
}

# expect_output NAME PATTERN...: every extended regex PATTERN matches a line of stdout+stderr
expect_output() {
    local name=$1 p
    shift
    for p in "$@"; do
        if ! cat "$TMP/out" "$TMP/err" | grep -qE -- "$p"; then
            fail "$name" "output lacks /$p/: $(one_line "$TMP/err")"
            return 1
        fi
    done
}

# expect_rc NAME WANT: the last run_cli exited WANT (and did not crash)
expect_rc() {
    crashed "$1" && return 1
    if [ "$rc" -ne "$2" ]; then fail "$1" "exit $rc, want $2: $(one_line "$TMP/err")"; return 1; fi
}

# The upper-bound timing tools on the wgmma mla_bwd main kernel. scripts/ptx_off.py switches its 72 dkv reductions
# off by a run-time-false guard; scripts/mla_bwd_reduce_bounds.py (which stops where the generator's shape has
# changed) writes E0, the very same edit, and E, S, B and W. All assemble whole (no spill, no serialised wgmma); on
# the sim E0 leaves dkv unwritten and E adds a 1 per row and line visit, both with dq right, so the guarded
# instructions did nothing and the rest still ran (S, B and W race with the products by design: GPU only).
reduce_bounds_test() {
    local name="ptx_off and mla_bwd_reduce_bounds: mla_bwd's reductions switched off or moved, the rest kept" v why
    run_cli --arch sm_90a --kernel mla_bwd -o "$TMP/rb_in.ptx"
    expect_rc "$name" 0 || return
    if ! python3 scripts/ptx_off.py "$TMP/rb_in.ptx" "$TMP/rb_off.ptx" 'red\.global\.add\.v4\.f32' --entry main \
        >"$TMP/rb.log" 2>&1 || ! grep -q ': 72 instructions switched off' "$TMP/rb.log"; then
        fail "$name" "ptx_off: $(one_line "$TMP/rb.log")"; return
    fi
    python3 scripts/mla_bwd_reduce_bounds.py "$TMP/rb_in.ptx" "$TMP/rb" >"$TMP/rb.log" 2>&1 || { fail "$name" "$(one_line "$TMP/rb.log")"; return; }
    cmp -s "$TMP/rb_off.ptx" "$TMP/rb/E0.ptx" || { fail "$name" "E0 is not ptx_off's edit"; return; }
    for v in E0 E S B W L K; do
        ptxas -arch=sm_90a -v "$TMP/rb/$v.ptx" -o "$TMP/rb/$v.cubin" >"$TMP/rb.log" 2>&1 || { fail "$name" "$v: $(one_line "$TMP/rb.log")"; return; }
        why=$(ptxas_bad "$TMP/rb.log" 0)
        [ -z "$why" ] || { fail "$name" "$v: ptxas: $why"; return; }
    done
    run_cli check --ptx "$TMP/rb/E0.ptx" --kernel mla_bwd --arch sm_90a --device sim --sq 2 --skv 300 --hq 64 --topk 128
    crashed "$name" && return
    expect_output "$name" '^  dq: rel_l2=.* ok$' '^  dkv: rel_l2=1\.000e\+00 .*FAIL' || return
    run_cli check --ptx "$TMP/rb/E.ptx" --kernel mla_bwd --arch sm_90a --device sim --sq 2 --skv 300 --hq 64 --topk 128
    crashed "$name" && return
    expect_output "$name" '^  dq: rel_l2=.* ok$' '^  dkv: .*FAIL.* out [1-9][0-9]* ' && pass "$name"
    # L frees the slot after the step's dkv reductions, not after dq's products: slower, and still right
    name="mla_bwd_reduce_bounds L: the slot freed at each step's end, both consumer copies, the set still right"
    [ "$(diff "$TMP/rb_in.ptx" "$TMP/rb/L.ptx" | grep -c '^[<>].*mbarrier\.arrive\.shared::cta\.b64')" = 4 ] ||
        { fail "$name" "not two arrivals moved"; return; }
    run_cli check --ptx "$TMP/rb/L.ptx" --kernel mla_bwd --arch sm_90a --device sim --sq 3 --skv 300 --hq 64 \
        --topk 130 --topk-length
    crashed "$name" && return
    expect_rc "$name" 0 && expect_output "$name" '^check: PASS' && pass "$name"
    # --half keeps the reductions in CTAs of odd %ctaid.x (two of four tokens; one token of the set has no valid
    # slot, so two would not do) and each one's own guard (an invalid slot's row is never reduced: the sim would
    # refuse the address): dkv partly written, dq right
    name="ptx_off --half: mla_bwd's reductions kept in half the CTAs, under their own guards"
    python3 scripts/ptx_off.py "$TMP/rb_in.ptx" "$TMP/rb_half.ptx" 'red\.global\.add\.v4\.f32' --entry main --half \
        >"$TMP/rb.log" 2>&1 || { fail "$name" "$(one_line "$TMP/rb.log")"; return; }
    [ "$(grep -c 'and\.pred %p_and, %p[0-9]*, %p_off; @%p_and red\.global' "$TMP/rb_half.ptx")" = 72 ] ||
        { fail "$name" "not every reduction keeps its guard"; return; }
    run_cli check --ptx "$TMP/rb_half.ptx" --kernel mla_bwd --arch sm_90a --device sim --sq 4 --skv 300 --hq 64 --topk 128
    crashed "$name" && return
    expect_output "$name" '^  dq: rel_l2=.* ok$' '^  dkv: rel_l2=[1-9]\.[0-9]*e-0[1-9] .*FAIL' && pass "$name"
}

plan_tests() {
    section "plans"
    local name="plan d=256 bm=128 warps=8 refused on sm_86 (shared memory)"
    run_cli --arch sm_86 --kernel attn_fwd --hdim 256 --tile bm=128,bn=64,warps=8 --plan
    expect_rc "$name" 2 && expect_output "$name" 101376 131072 "shared memory" && pass "$name"

    name="emit of the same config refused (exit 2, one line)"
    usage_error "$name" 101376 131072 -- --arch sm_86 --kernel attn_fwd --hdim 256 --tile bm=128,bn=64,warps=8

    name="plan d=256 bm=128 warps=4 refused on sm_90 (registers)"
    run_cli --arch sm_90 --kernel attn_fwd --hdim 256 --tile bm=128,bn=64,warps=4 --plan
    expect_rc "$name" 2 && expect_output "$name" "registers" && pass "$name"

    name="plan of a fitting config: table of Q, K, V, O and verdict"
    run_cli --arch sm_90 --kernel attn_fwd --plan
    expect_rc "$name" 0 && expect_output "$name" '^ +Q +[0-9]+ +[0-9]+' '^ +K +[0-9]+ +[0-9]+' '^ +V +[0-9]+ +[0-9]+' \
        '^ +O +[0-9]+ +[0-9]+' '^verdict: +fits' && pass "$name"

    name="attn_bwd plan covers its three kernels"
    run_cli --arch sm_90 --kernel attn_bwd --plan
    expect_rc "$name" 0 && expect_output "$name" '^kernel attn_bwd pre' '^kernel attn_bwd main' '^kernel attn_bwd dq' \
        '^ +dO +[0-9]+ +[0-9]+' '^ +dO.1 +[0-9]+ +[0-9]+' '^ +stats.1 +[0-9]+ +[0-9]+' '^ +K.1 +[0-9]+ +[0-9]+' \
        && [ "$(grep -c '^verdict: *fits' "$TMP/out")" = 3 ] && pass "$name"

    name="mla_bwd tcgen05 plan: TMEM column map (512 of 512), shared-memory union, MMAs per step"
    run_cli --arch sm_100a --kernel mla_bwd --tile bm=32 --plan
    expect_rc "$name" 0 && expect_output "$name" '^family: +tcgen05' '^kernel mla_bwd main \(tcgen05\).*118 MMAs \(K=16\) per step' \
        '^ +dKV +0 +256 +256 +fp32' '^ +dQ\^T +256 +416 +160 +fp32' '^ +dS\^T +496 +512 +16 +bf16' \
        '512 +100\.0% of the 512 columns' '^ +dQ +0 +36864 .*union over KV' '^ +total +226360' '^ +compute +4 ' '^ +mma +1 ' '^ +producer +1 ' \
        && pass "$name"

    name="a tile tune saved is used for its shape class (and said), a stale one is not, another class gets the default"
    printf 'arch=sm_90 kernel=attn_fwd family=mma.sync dtype=bf16 d=64 causal=0 class=s<=1k tile=bm=64,bn=64,warps=4 tflops=1 shape=x\n' \
        >"$TMP/tuned.txt"
    local a=(check --device sim --arch sm_90 --kernel attn_fwd --hdim 64 --hq 2 --hkv 1 --sk 130)
    PTXGEN_TUNED=$TMP/tuned.txt run_cli "${a[@]}" --sq 77
    if [ "$rc" = 0 ] && grep -q "^tile: tile bm=64,bn=64,warps=4 from $TMP/tuned.txt" "$TMP/out" &&
        grep -q '^kernel: attn_fwd_bf16_d64_bm64_bn64_w4' "$TMP/out"; then
        sed -i 's/warps=4 tflops/warps=8 tflops/' "$TMP/tuned.txt"
        PTXGEN_TUNED=$TMP/tuned.txt run_cli "${a[@]}" --sq 77
        if [ "$rc" = 0 ] && grep -q 'is not used: tile bm=64 with warps=8' "$TMP/out" &&
            grep -q '^kernel: attn_fwd_bf16_d64_bm128_bn64_w4' "$TMP/out"; then
            PTXGEN_TUNED=$TMP/tuned.txt run_cli "${a[@]}" --sq 2000
            if [ "$rc" = 0 ] && ! grep -q '^tile:' "$TMP/out"; then pass "$name"
            else fail "$name" "another class: $(one_line "$TMP/out")"; fi
        else fail "$name" "stale entry: $(one_line "$TMP/out")"; fi
    else fail "$name" "$(one_line "$TMP/out") $(one_line "$TMP/err")"; fi
    usage_error "tune --save needs a GPU" "needs a GPU" -- tune --device sim --arch sm_90 --kernel attn_fwd --save

    name="compare on the sim: two variants of mla_bwd side by side, and an SVG"
    run_cli compare --device sim --arch sm_100a --kernel mla_bwd --sq 2 --skv 300 --hq 64 --topk 130 --variant "" \
        --variant "tile=bm=32" --svg "$TMP/cmp.svg"
    expect_rc "$name" 0 && expect_output "$name" '^compare: mla_bwd on sim' '^check \(1 pass\) +\| PASS +\| PASS' \
        '^k1 registers +\| [0-9]+ +\| [0-9]+' '^k1 smem bytes +\| 225320 +\| 226360' '^tensor \(MMA\) per CTA +\| [0-9.]+ +\| [0-9.]+' \
        '^global sectors +\| [0-9]+' && python3 -c 'import sys, xml.etree.ElementTree as E
r = E.parse(sys.argv[1]).getroot(); assert r.tag.endswith("svg") and sum(e.tag.endswith("rect") for e in r.iter()) > 8' \
        "$TMP/cmp.svg" && pass "$name" || fail "$name" "svg: $(head -c 200 "$TMP/cmp.svg" 2>&1)"
    name="tune on the sim: every attn_fwd tile, the refused ones with their reason, CSV, JSON and SVG"
    run_cli tune --device sim --arch sm_90 --kernel attn_fwd --hdim 64 --sq 77 --sk 130 --hq 2 --hkv 1 --csv "$TMP/t.csv" \
        --json "$TMP/t.json" --svg "$TMP/t.svg"
    # 4 bm x 3 bn x 4 warps x 2 packs (h_q / h_kv = 2: a larger pack would only idle rows); 16 or 32 rows a warp
    expect_rc "$name" 0 && expect_output "$name" '^tune: attn_fwd on sm_90 \(sim\), 96 tiles' \
        '^  bm=64,bn=32,warps=8,pack=1 +refused +tile bm=64 with warps=8' '^  bm=128,bn=64,warps=4,pack=2 +ok +[0-9]+ \| [0-9.]+' \
        '^tune: 42 passed, 54 refused by the plan, 0 failed their check; the sim does not time' &&
        python3 -c 'import csv, json, sys, xml.etree.ElementTree as E
rows = list(csv.DictReader(open(sys.argv[1]))); j = json.load(open(sys.argv[2])); E.parse(sys.argv[3])
assert len(rows) == 96 and len(j["points"]) == 96 and j["best"] is None, (len(rows), j["best"])
assert not any("pack=4" in r["tile"] for r in rows)
assert sum(r["result"] == "refused" and "rows per warp" in r["reason"] for r in rows) == 54' "$TMP/t.csv" "$TMP/t.json" "$TMP/t.svg" \
        >"$TMP/tune.txt" 2>&1 && pass "$name" || fail "$name" "$(one_line "$TMP/tune.txt")"
    usage_error "tune sweeps the tiles itself" "leave out --tile" -- tune --device sim --arch sm_90 --kernel attn_fwd \
        --tile bm=64
    usage_error "tune with an output it cannot write: refused before the sweep" "--json $TMP/none/t.json: cannot write" -- \
        tune --device sim --arch sm_90 --kernel attn_fwd --json "$TMP/none/t.json"
    usage_error "compare needs two variants" "2 to 8 --variant" -- compare --device sim --kernel attn_fwd --variant ""
    usage_error "compare: an unknown variant key" "unknown key 'tiles'" -- compare --device sim --kernel attn_fwd \
        --variant "" --variant "tiles=bm=64"
    usage_error "--variant outside compare" "belongs to compare" -- check --device sim --kernel attn_fwd --variant ""

    name="mla_bwd pair plan (the default on sm_100a): dq kernel's TMEM map and smem, dkv kernel's"
    run_cli --arch sm_100a --kernel mla_bwd --plan
    expect_rc "$name" 0 && expect_output "$name" '^kernel mla_bwd dq \(tcgen05 CTA pair, cluster 2x1x1\)' \
        '^ +dQ +0 +256 +256 +fp32' '^ +dQ_rope +256 +320 +64 +fp32' '^ +S +320 +352 +32 ' '^ +dP +352 +384 +32 ' \
        '^ +total +225320 ' '^ +Y +[0-9]+ +[0-9]+ +40960 ' '^kernel mla_bwd dkv \(tcgen05, KV-stationary\)' \
        '^ +dKV.1 +128 +256 +128 +fp32' '^ +total +196632 ' && [ "$(grep -c '^verdict: *fits' "$TMP/out")" = 4 ] && pass "$name"

    name="mla_bwd pair manifest: dq kernel in a 2x1x1 cluster (.reqnctapercluster), the ps workspace between the two"
    run_cli --arch sm_100a --kernel mla_bwd --manifest "$TMP/pair.json" -o "$TMP/pair.ptx"
    expect_rc "$name" 0 && grep -q '^\.reqnctapercluster 2, 1, 1$' "$TMP/pair.ptx" &&
        python3 - "$TMP/pair.json" >"$TMP/pairman.txt" 2>&1 <<'PY' && pass "$name" || fail "$name" "$(one_line "$TMP/pairman.txt")"
import json, sys
m = json.load(open(sys.argv[1]))
ks = [k["entry"] for k in m["kernels"]]
assert [e.split("_")[2] for e in ks] == ["pre", "dq", "dkv", "convert"], ks
dq, dkv = m["kernels"][1], m["kernels"][2]
assert dq["cluster"] == ["2", "1", "1"] and dq["grid"] == ["2 * s_q", "cdiv(h_q, 128)", "1"], (dq["cluster"], dq["grid"])
assert dkv["cluster"] == ["1", "1", "1"], dkv["cluster"]
ws = {w["name"]: w for w in m["workspaces"]}
assert "ps" in ws and "cdiv(topk, 128)" in ws["ps"]["bytes"], ws
names = lambda k: {p["name"] for p in k["params"]}
assert "ps" in names(dq) and "ps" in names(dkv) and "kv_map" in names(dq) and "dkv_accum" in names(dkv), ks
assert "dkv_accum" not in names(dq) and "kv" not in names(dkv), ks
PY

    name="attn_bwd main kernel asks for the plan's CTAs per SM"
    run_cli --arch sm_90 --kernel attn_bwd --hdim 64
    expect_rc "$name" 0 && expect_output "$name" '^\.minnctapersm 3$' && pass "$name"

    name="attn_bwd plan bm=128 d=128 refused (registers)"
    run_cli --arch sm_90 --kernel attn_bwd --tile bm=128,bn=128,warps=8 --plan
    expect_rc "$name" 2 && expect_output "$name" "REFUSED" "registers" && pass "$name"

    name="attn_bwd manifest: three kernels in launch order, two workspaces"
    run_cli --arch sm_90 --kernel attn_bwd --tile deterministic=0 --manifest "$TMP/bwd.json" -o "$TMP/bwd.ptx"
    expect_rc "$name" 0 && python3 - "$TMP/bwd.json" >"$TMP/bwdman.txt" 2>&1 <<'PY' && pass "$name" || fail "$name" "$(one_line "$TMP/bwdman.txt")"
import json, sys
m = json.load(open(sys.argv[1]))
names = [k["entry"].split("_")[2] for k in m["kernels"]]
assert names == ["pre", "main", "dq"], names
ws = {w["name"]: w for w in m["workspaces"]}
assert set(ws) == {"delta", "dq_accum"} and ws["dq_accum"]["bytes"] == "b * h_q * s_q * 512", ws
assert sorted(m["problem_sizes"]) == ["b", "h_kv", "h_q", "s_k", "s_q"], m["problem_sizes"]
PY

    name="mla_fwd manifest: parameters in order, grid s_q x cdiv(h_q, bm), head dims 576/512"
    run_cli --arch sm_90 --kernel mla_fwd --manifest "$TMP/mla.json" -o "$TMP/mla.ptx"
    expect_rc "$name" 0 && python3 - "$TMP/mla.json" >"$TMP/mlaman.txt" 2>&1 <<'PY' && pass "$name" || fail "$name" "$(one_line "$TMP/mlaman.txt")"
import json, sys
m = json.load(open(sys.argv[1]))
(k,) = m["kernels"]
names = [p["name"] for p in k["params"]]
assert names == ["q", "q_stride_s", "q_stride_h", "kv", "kv_stride_s", "indices", "indices_stride_s", "topk_length",
                 "o", "o_stride_s", "o_stride_h", "lse", "s_q", "s_kv", "h_q", "topk", "softmax_scale"], names
assert k["grid"] == ["s_q", "cdiv(h_q, 64)", "1"] and k["block"] == [256, 1, 1], (k["grid"], k["block"])
assert m["constants"]["d"] == 576 and m["constants"]["dv"] == 512 and not m.get("workspaces"), m["constants"]
assert m["problem_sizes"] == ["s_q", "s_kv", "h_q", "topk"] and m["family"] == "mma.sync", m["problem_sizes"]
assert k["cluster"] == ["1", "1", "1"] and k["tensor_maps"] == [], (k["cluster"], k["tensor_maps"])
PY
}

list_test() {
    local name="--list names the kernels by family, the archs and the tile keys"
    run_cli --list
    expect_rc "$name" 0 && expect_output "$name" '^  attn_fwd +mma\.sync ' '^  attn_bwd +mma\.sync ' '^  mla_fwd +mma\.sync ' \
        '^  mla_bwd +mma\.sync ' '^  sm_100a .*mma\.sync and tcgen05' '^  sm_90a .*mma\.sync and wgmma' '^  sm_100 .*PTX 8\.6' \
        '^ +bm ' '^ +bn ' '^ +warps ' '^ +deterministic ' '^tile keys for mla_fwd' '^tile keys for mla_bwd' && pass "$name"
    name="--list: every (kernel, family, arch) that builds, refused default plans starred"
    expect_output "$name" \
        '^  attn_fwd +mma\.sync *: sm_80 sm_86 sm_89 sm_90 sm_90a sm_100 sm_100a sm_103 sm_103a sm_120 sm_120a$' \
        '^  mla_bwd +mma\.sync *: sm_80 sm_86 sm_89 sm_90 sm_90a sm_100 sm_100a sm_103 sm_103a sm_120 sm_120a$' \
        '^  mla_bwd +tcgen05 *: sm_100a sm_103a$' '^  attn_fwd +tcgen05 *: sm_100a sm_103a$' '^  attn_bwd +tcgen05 *: sm_100a sm_103a$' \
        '^  mla_fwd +tcgen05 *: sm_100a sm_103a$' \
        '^tile keys for mla_bwd, tcgen05' '^tile keys for attn_fwd, tcgen05' &&
        if grep -q "not implemented" "$TMP/out"; then fail "$name" "still says 'not implemented'"; else pass "$name"; fi
}

manifest_tests() {
    local name="--manifest writes valid JSON" m=$TMP/manifest.json
    run_cli --arch sm_90 --kernel attn_fwd --hdim 128 --manifest "$m"
    expect_rc "$name" 0 || return
    if ! python3 -m json.tool "$m" >"$TMP/json.log" 2>&1; then fail "$name" "$(one_line "$TMP/json.log")"; return; fi
    pass "$name"
    name="manifest params and grid (d=128 default tile)"
    if python3 - "$m" >"$TMP/json.log" 2>&1 <<'EOF'; then pass "$name"; else fail "$name" "$(one_line "$TMP/json.log")"; fi
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
names = {p["name"] for p in k["params"]}
missing = [n for n in "q k v o lse s_q s_k h_q h_kv softmax_scale q_stride_s".split() if n not in names]
if missing:
    sys.exit("params lack " + ", ".join(missing))
if k["grid"] != ["cdiv(s_q, 128)", "h_q", "b"]:
    sys.exit("grid is %s" % k["grid"])
EOF
}

stdout_vs_file_test() {
    local name="PTX on stdout and with -o is identical"
    run_cli --arch sm_90 --kernel attn_fwd --causal -o "$TMP/file.ptx"
    expect_rc "$name" 0 || return
    run_cli --arch sm_90 --kernel attn_fwd --causal
    expect_rc "$name" 0 || return
    if ! grep -q '\.entry' "$TMP/out"; then fail "$name" "no .entry in the PTX"; return; fi
    if cmp -s "$TMP/out" "$TMP/file.ptx"; then pass "$name"; else fail "$name" "the texts differ"; fi
}

# Sets have_driver=1 where check ran on a device.
have_driver=0
no_driver_tests() {
    section "check without a CUDA driver"
    local name="check without a driver says 'no CUDA driver'"
    run_cli check --kernel attn_fwd
    crashed "$name" && return
    if [ "$rc" -ne 0 ] && grep -q "no CUDA driver" "$TMP/err"; then
        pass "$name"
    elif [ "$rc" -eq 0 ] && grep -q "check: PASS" "$TMP/out"; then
        have_driver=1
        pass "check on this machine's device (a driver is present)"
    else
        fail "$name" "exit $rc: $(one_line "$TMP/err")"
    fi

    name="selfcheck without a driver says 'no CUDA driver'"
    run_cli selfcheck
    if crashed "$name"; then :
    elif [ "$have_driver" = 1 ]; then skip "$name" "a driver is present: run make gpu-test"
    elif [ "$rc" -eq 1 ] && grep -q "no CUDA driver" "$TMP/err"; then pass "$name"
    else fail "$name" "exit $rc: $(one_line "$TMP/err")"; fi

    name="gpu_matrix.sh skips without a driver"
    if [ "$have_driver" = 1 ]; then skip "$name" "a driver is present: run make gpu-test"; return; fi
    timeout 120 bash tests/gpu_matrix.sh >"$TMP/out" 2>"$TMP/err"
    rc=$?
    crashed "$name" && return
    if [ "$rc" -eq 0 ] && grep -q "^gpu-test: skipped" "$TMP/out"; then pass "$name"
    else fail "$name" "exit $rc: $(one_line "$TMP/out") $(one_line "$TMP/err")"; fi
}

# The library as a host application gets it: the public header only, the exported names, make install and
# pkg-config, the example built against the installed tree (static and shared) running on the sim.
library_tests() {
    section "the library: public API, exports, install"
    local name="libptxgen.so exports the ptxgen_ API only" bad
    bad=$(nm -D --defined-only build/libptxgen.so | awk '{ print $3 }' | grep -v '^ptxgen_' | head -3 | tr '\n' ' ')
    if [ -z "$bad" ] && [ "$(nm -D --defined-only build/libptxgen.so | grep -c ' ptxgen_')" -ge 30 ]; then pass "$name"
    else fail "$name" "also exports: $bad"; fi
    name="the example host app includes only ptxgen.h"
    if [ "$(grep -c '#include "' examples/host_app.c)" = 1 ] && grep -q '#include "ptxgen.h"' examples/host_app.c; then
        pass "$name"
    else fail "$name" "$(grep '#include "' examples/host_app.c | tr '\n' ' ')"; fi
    name="the example host app runs on the sim (build/example_host sim)"
    if timeout 120 ./build/example_host sim >"$TMP/out" 2>"$TMP/err" && grep -q ': ok$' "$TMP/out"; then pass "$name"
    else fail "$name" "$(one_line "$TMP/out") $(one_line "$TMP/err")"; fi
    name="make install PREFIX=...: header, libraries, CLI, pkg-config; the example links against it (static, shared)"
    local inst=$TMP/inst
    if ! command -v pkg-config >/dev/null; then skip "$name" "no pkg-config on this machine"; return; fi
    if make -s install PREFIX="$inst" >"$TMP/out" 2>&1 &&
        PKG_CONFIG_PATH=$inst/lib/pkgconfig cc -std=c11 -o "$TMP/ex_static" examples/host_app.c -Wl,-Bstatic \
            $(PKG_CONFIG_PATH=$inst/lib/pkgconfig pkg-config --cflags --libs-only-L ptxgen) -lptxgen -Wl,-Bdynamic \
            -ldl -lm -lpthread >>"$TMP/out" 2>&1 &&
        cc -std=c11 -o "$TMP/ex_shared" examples/host_app.c $(PKG_CONFIG_PATH=$inst/lib/pkgconfig pkg-config --cflags \
            --libs ptxgen) -Wl,-rpath,"$inst/lib" -lm >>"$TMP/out" 2>&1 &&
        "$TMP/ex_static" sim >>"$TMP/out" 2>&1 && "$TMP/ex_shared" sim >>"$TMP/out" 2>&1 &&
        [ "$(grep -c ': ok$' "$TMP/out")" = 2 ] && [ -x "$inst/bin/ptxgen" ] && [ -f "$inst/include/ptxgen.h" ]; then
        pass "$name"
    else fail "$name" "$(one_line "$TMP/out")"; fi

    section "the Python binding (its GPU checks say SKIP without a GPU)"
    counted_test python_binding python3 python/tests/test_ptxgen.py
    name="pip install ./python: a self-contained package (libptxgen.so inside) that emits"
    rm -rf "$TMP/pyinst"
    if pip install -q --no-deps --target "$TMP/pyinst" ./python >"$TMP/out" 2>&1; then
        if (cd "$TMP" && PYTHONPATH=$TMP/pyinst python3 -c 'import ptxgen, sys; p = ptxgen.library_path()
assert p.startswith(sys.argv[1]), p; print(ptxgen.emit("mla_fwd", "sm_90")[1]["kernels"][0]["entry"])' "$TMP/pyinst" \
            >"$TMP/out" 2>&1); then pass "$name"
        else fail "$name" "$(one_line "$TMP/out")"; fi
    elif grep -qiE "connection|network|resolve|proxy|Could not find a version" "$TMP/out"; then
        skip "$name" "pip could not fetch its build tools (setuptools, wheel): $(one_line "$TMP/out" | cut -c1-150)"
    else fail "$name" "$(one_line "$TMP/out")"; fi
}

main() {
    export PTXGEN_TUNED=0   # a user's tuned tiles must not change what the tests build; one test sets its own
    if [ ! -x ./ptxgen ]; then
        fail "ptxgen built" "./ptxgen is missing (run make)"
        echo "$n_pass passed, $n_fail failed"
        exit 1
    fi
    # two lanes side by side (the sim is one thread; CI has 2 cores): lane 1 prints as it goes, lane 2 into a file
    # printed after it; each has its own TMP and counts
    lane 2 sim_tests_bwd oracle_tests cli_errors plan_tests output_tests >"$TMP/lane2.log" 2>&1 &
    local lane2=$!
    lane 1 c_tests ptxas_matrix sim_tests
    wait "$lane2"
    echo "== lane 2"
    cat "$TMP/lane2.log"
    local l p f
    for l in 1 2; do
        if read -r p f <"$TMP/lane$l.counts"; then n_pass=$((n_pass + p)) n_fail=$((n_fail + f))
        else fail "lane $l" "it ended without its counts (see its lines above)"; fi
    done
    echo "-- suite time: ${SECONDS} s"
    echo "$n_pass passed, $n_fail failed"
    [ "$n_fail" -eq 0 ]
}

# lane N FUNC...: the functions in order in a subshell with a TMP of its own; its PASS/FAIL lines go to stdout, its
# counts ("passed failed") to $TMP/laneN.counts
lane() {
    local l=$1
    shift
    (
        local counts=$TMP/lane$l.counts fn
        TMP=$TMP/lane$l
        mkdir -p "$TMP" && export TMP
        n_pass=0 n_fail=0
        for fn in "$@"; do "$fn"; done
        echo "$n_pass $n_fail" >"$counts"
    )
}

output_tests() {
    section "outputs"
    list_test
    manifest_tests
    stdout_vs_file_test
    no_driver_tests
    library_tests
}

main
