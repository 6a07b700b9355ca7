#!/usr/bin/env bash
# make test-oracle (and a section of make test): NVIDIA's oracle kernels run on
# the sim from their launch records (ptxgen sim FILE.ptx --launch RECORD.json),
# each judged against the float64 GEMM reference on fresh inputs (the seed is
# in its line), plus corrupted copies of a record that must be refused.
# The oracle is read from $PTXGEN_ORACLE_DIR or ../shared/oracle, never copied
# into the repository; without it every line is a SKIP.
# Prints PASS / FAIL / SKIP lines, then "N passed, N failed, N skipped"; exits
# non-zero if anything failed.
set -u
cd "$(dirname "$0")/.." || exit 1

ORACLE=${PTXGEN_ORACLE_DIR:-../shared/oracle}
LIMIT_S=30   # per kernel, on a 2-core machine
# Every NAME.launch.json with a NAME.ptx beside it, in any subdirectory (sm100a/, sm90a/ today, more
# arch folders as they appear): a pair the suite has never seen runs too. These must be among them,
# so a lost file is a failure, not a smaller suite (for the default directory; a PTXGEN_ORACLE_DIR of
# one's own records holds whatever it holds).
KNOWN="sm100a/t01_mma sm100a/t02_mma_tma sm100a/t03_multicast_c2x2 sm100a/t04_2sm_c2x1 sm100a/t05_2sm_tma_epi_c2x1
sm90a/h01_wgmma_tn sm90a/h02_wgmma_tma_tn"

n_pass=0 n_fail=0 n_skip=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ptxgen_oracle.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass() { echo "PASS $1"; n_pass=$((n_pass + 1)); }
fail() { echo "FAIL $1: $2"; n_fail=$((n_fail + 1)); }
skip() { echo "SKIP $1: $2"; n_skip=$((n_skip + 1)); }
one_line() { tr '\n' ' ' <"$1" | cut -c1-${2:-400}; }

# sim_run ARGS...: ./ptxgen sim ARGS; stdout in $TMP/out, stderr in $TMP/err, $rc, $secs
sim_run() {
    local t0=$EPOCHREALTIME
    timeout $((2 * LIMIT_S)) ./ptxgen sim "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
}

# The message of a failed run: the sim's error, else the result line.
why() {
    if [ "$rc" -eq 124 ]; then echo "hung: killed after $((2 * LIMIT_S)) s"; return; fi
    if [ "$rc" -ge 128 ]; then echo "crashed: exit $rc: $(one_line "$TMP/err")"; return; fi
    if [ -s "$TMP/err" ]; then one_line "$TMP/err" 600; else grep -m 1 '^result:' "$TMP/out" | cut -c1-400; fi
}

kernel() {
    local k=$1 name="oracle $1" ptx=$ORACLE/$1.ptx rec=$ORACLE/$1.launch.json
    if [ ! -r "$ptx" ] || [ ! -r "$rec" ]; then skip "$name" "$ptx or $rec not found (set PTXGEN_ORACLE_DIR)"; return; fi
    sim_run "$ptx" --launch "$rec"
    local seed notes
    seed=$(grep -m 1 -o 'seed [0-9]*' "$TMP/out" | head -n 1)
    notes=$(grep -m 1 -o '^sim notes: [0-9]*' "$TMP/out" | grep -o '[0-9]*$')
    if [ "$rc" -ne 0 ] || ! grep -q '^sim: PASS' "$TMP/out"; then fail "$name" "exit $rc, ${secs} s, $seed: $(why)"; return; fi
    if awk -v s="$secs" -v l="$LIMIT_S" 'BEGIN { exit !(s > l) }'; then fail "$name" "passed but took ${secs} s (limit ${LIMIT_S} s)"; return; fi
    pass "$name (${secs} s, $seed, $(grep -m 1 -o '(exact[^)]*)\|(tolerance[^)]*)' "$TMP/out"), ${notes:-0} sim notes)"
}

# Notes are not failures, but --strict makes them errors: h01 feeds wgmma from
# cp.async writes without fence.proxy.async.
strict_test() {
    local name="oracle --strict: sm90a/h01_wgmma_tn's missing fence.proxy.async becomes an error"
    local ptx=$ORACLE/sm90a/h01_wgmma_tn.ptx rec=$ORACLE/sm90a/h01_wgmma_tn.launch.json
    if [ ! -r "$ptx" ] || [ ! -r "$rec" ]; then skip "$name" "oracle not found"; return; fi
    sim_run "$ptx" --launch "$rec" --strict
    if [ "$rc" -eq 1 ] && grep -q 'sim error: .*fence.proxy.async.*an error under --strict' "$TMP/err"; then pass "$name"
    else fail "$name" "exit $rc: $(why)"; fi
}

# edited RC NAME PYTHON WANT: a copy of h02_wgmma_tma_tn's record edited by
# the python statement (on the parsed dict d, L its last launch) must exit RC
# (2: refused) with WANT in its output.
edited() {
    local want_rc=$1 name=$2 edit=$3 want=$4
    local ptx=$ORACLE/sm90a/h02_wgmma_tma_tn.ptx rec=$ORACLE/sm90a/h02_wgmma_tma_tn.launch.json
    if [ ! -r "$ptx" ] || [ ! -r "$rec" ]; then skip "$name" "oracle not found"; return; fi
    if ! python3 -c "import json, sys
d = json.load(open(sys.argv[1]))
L = d['launches'][-1]
$edit
json.dump(d, open(sys.argv[2], 'w'), indent=1)" "$rec" "$TMP/bad.json" 2>"$TMP/err"; then
        fail "$name" "the edit failed: $(one_line "$TMP/err")"
        return
    fi
    sim_run "$ptx" --launch "$TMP/bad.json"
    if [ "$rc" -eq "$want_rc" ] && cat "$TMP/out" "$TMP/err" | grep -qF -- "$want"; then pass "$name"
    else fail "$name" "exit $rc, want $want_rc and '$want': $(one_line "$TMP/err") $(one_line "$TMP/out" 200)"; fi
}
corrupt() { edited 2 "oracle refuses a corrupted record: $1" "$2" "$3"; }

# usage NAME WANT ARGS...: ptxgen sim ARGS must exit 2 naming WANT (no oracle needed)
usage() {
    local name="ptxgen sim usage: $1" want=$2
    shift 2
    sim_run "$@"
    if [ "$rc" -eq 2 ] && grep -qF -- "$want" "$TMP/err"; then pass "$name"
    else fail "$name" "exit $rc, want 2 and '$want': $(one_line "$TMP/err")"; fi
}

usage_tests() {
    printf '.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n' >"$TMP/k.ptx"
    usage "no PTX file" "no PTX file given"
    usage "no --launch" "--launch RECORD.json is required" "$TMP/k.ptx"
    usage "--launch without a value" "--launch needs a value" "$TMP/k.ptx" --launch
    usage "unknown flag" "unknown argument '--bogus'" "$TMP/k.ptx" --bogus
    usage "bad --seed" "--seed needs a non-negative integer, got '-3'" "$TMP/k.ptx" --launch x --seed -3
    usage "two PTX files" "one PTX file only" "$TMP/k.ptx" "$TMP/k.ptx" --launch x
    usage "missing PTX" "cannot read $TMP/nosuch.ptx" "$TMP/nosuch.ptx" --launch x
    usage "missing record" "cannot read $TMP/nosuch.json" "$TMP/k.ptx" --launch "$TMP/nosuch.json"
    usage "a directory for the PTX" "cannot read $TMP: Is a directory" "$TMP" --launch x
    printf '.version 8.0\n.target sm_90\nbogus;\n' >"$TMP/bad.ptx"
    usage "unparsable PTX" "$TMP/bad.ptx: " "$TMP/bad.ptx" --launch x
}

main() {
    local k
    usage_tests
    echo "oracle: $ORACLE"
    if [ ! -d "$ORACLE" ]; then
        skip "oracle kernels" "no oracle directory at $ORACLE (set PTXGEN_ORACLE_DIR)"
    else
        local found rec
        found=$(cd "$ORACLE" && find . -name '*.launch.json' | sed 's|^\./||; s|\.launch\.json$||' | LC_ALL=C sort)
        [ -n "${PTXGEN_ORACLE_DIR:-}" ] || for k in $KNOWN; do
            printf '%s\n' "$found" | grep -qx "$k" || fail "oracle $k" "$ORACLE/$k.launch.json is missing"
        done
        for k in $found; do
            if [ -r "$ORACLE/$k.ptx" ]; then kernel "$k"
            else fail "oracle $k" "$ORACLE/$k.launch.json has no $k.ptx beside it"; fi
        done
    fi
    strict_test
    corrupt "bad hex length" "L['params'][2]['hex'] = L['params'][2]['hex'][:-2]" \
        "launches[0].params[2] (line"
    corrupt "TMAP tag naming a missing encode" "d['tensormap_encodes'][1]['id'] = 5" \
        "a TMAP tag names tensor-map encode id 1, which tensormap_encodes lacks"
    corrupt "param offset past the end" "L['params'][-1]['offset_in_param_space'] = 4096" \
        "offset 4096 + size 2 runs past the end of the entry's 792-byte parameter space"
    corrupt "not JSON" "d = None; open(sys.argv[2], 'w').write('{\"launches\": [1,]}'); sys.exit(0)" \
        "not valid JSON: line 1:17: trailing ','"
    # the check can fail: the kernel reads alpha from its params (f16 1.0 -> 2.0), the reference from the problem
    edited 1 "oracle: h02 with alpha 2 in its params but 1 in its problem fails" "L['params'][9]['hex'] = '0040'" "sim: FAIL"
    echo "$n_pass passed, $n_fail failed, $n_skip skipped"
    [ "$n_fail" -eq 0 ]
}

main
