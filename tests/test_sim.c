/* The sim device against small PTX files (tests/sim/ (*.ptx)) that assemble with
 * ptxas but carry one planted bug each: the sim must refuse every one with
 * the message its header names, and run the correct one to the right bytes.
 * Header lines: "// expect: ok" or "// expect: <text in the error>",
 * "// block: N", "// smem: BYTES", "// grid: N" (CTAs in x), "// cluster: N"
 * (CTAs per cluster in x), "// strict" (notes are errors), and for correct
 * kernels "// check: atomics" (see atomics_ok), "// check: fixed" (fixed_ok) or by default the rotation
 * out[t] = in[(t + 32) % 64] in 16-byte units. Every file has the entry
 * k(.param .u64 in, .param .u64 out) over 1024-byte buffers; a file with
 * "// tmap_in: DTYPE DIM0 DIM1 BOX0 BOX1 SWIZZLE" (and/or tmap_out) takes
 * after them 128-byte tensor maps (.param .align 64 .b8 m[128]) of a 2-D
 * view of in (then out), encoded by the device (cuTensorMapEncodeTiled
 * numbering: dtype 6 f16, 7 f32, 9 bf16; swizzle 0-3; an optional OOBFILL
 * 1 for NaN). "// check: oob_fill" compares out with oob_fill_ok's boxes.
 * "// note: TEXT" (with expect: ok) also wants a sim note containing TEXT.
 * "// ctas_per_sm: N" runs N CTAs together on one SM (they share its TMEM).
 * "// pdl" launches the kernel as a programmatic dependent (DevLaunchHow.pdl) of the grid before it;
 * "// before: p q" launches entries p, then q (a dependent of p under "// pdl"), with k's parameters, before k.
 * usage: test_sim [--device cuda] [FILE.ptx ...]: every file in tests/sim by
 * default; --device cuda runs the correct ones on a GPU instead. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "device.h"
#include "sim.h"
#include "sim_files.h"

/* atomics.ptx: u32 counter 64, f32 counter 64.0, the 64 atom results a
 * permutation of 0..63, and in[0..256) copied twice (scalar and v4 loads). */
static int atomics_ok(const uint8_t *in, const uint8_t *out, char *why, size_t cap)
{
    uint32_t u[256];
    float f;
    int seen[64] = {0};
    memcpy(u, out, sizeof u);
    memcpy(&f, out + 4, 4);
    if (u[0] != 64 || f != 64.0f) return snprintf(why, cap, "counters %u and %g, want 64", u[0], (double)f), 0;
    for (int i = 0; i < 64; i++)
        if (u[8 + i] >= 64 || seen[u[8 + i]]++) return snprintf(why, cap, "atom results are not a permutation"), 0;
    if (memcmp(out + 320, in, 256) || memcmp(out + 576, in, 256)) return snprintf(why, cap, "loaded values differ"), 0;
    return 1;
}

/* fixed_point.ptx: the sum of the 64 threads' nearest-even integers of x 2^10 (x = +-[1, 2) from their words), the
 * largest word, the three conversions to f32 past 2^53 and the three to s64 (NaN 2^63 as on an H200, +-1e30
 * saturated). */
static int fixed_ok(const uint8_t *in, const uint8_t *out, char *why, size_t cap)
{
    int64_t sum = 0, got;
    uint32_t mx = 0, w, m, f[3];
    static const uint32_t want_f[3] = {0x5D800001u, 0xDD800001u, 0x5D800000u};
    static const uint64_t want_i[3] = {0x8000000000000000ull, 0x7FFFFFFFFFFFFFFFull, 0x8000000000000000ull};
    for (int t = 0; t < 64; t++) {
        float x;
        memcpy(&w, in + 4 * t, 4);
        m = (w >> 9 | 0x3F800000u) | (w & 1u) << 31;
        memcpy(&x, &m, 4);
        sum += (int64_t)nearbyint((double)x * 1024.0);   /* the default rounding: to nearest, ties to even */
        if (w > mx) mx = w;
    }
    memcpy(&got, out, 8);
    memcpy(&w, out + 8, 4);
    memcpy(f, out + 16, 12);
    if (got != sum) return snprintf(why, cap, "sum %lld, want %lld", (long long)got, (long long)sum), 0;
    if (w != mx) return snprintf(why, cap, "maximum 0x%08x, want 0x%08x", w, mx), 0;
    for (int i = 0; i < 3; i++)
        if (f[i] != want_f[i]) return snprintf(why, cap, "s64 -> f32 %d is 0x%08x, want 0x%08x", i, f[i], want_f[i]), 0;
    for (int i = 0; i < 3; i++) {
        uint64_t v;
        memcpy(&v, out + 32 + 8 * i, 8);
        if (v != want_i[i]) return snprintf(why, cap, "f32 -> s64 %d is 0x%016llx, want 0x%016llx", i,
                                            (unsigned long long)v, (unsigned long long)want_i[i]), 0;
    }
    /* the edges measured on an H200: u32 of -5.0, u32 of an f64 NaN, f64.rz of INT64_MAX, .sat f32 of 12345,
     * u16 of an f64 NaN */
    uint32_t u[2], sat;
    uint64_t rz;
    uint16_t h;
    memcpy(u, out + 56, 8);
    memcpy(&rz, out + 64, 8);
    memcpy(&sat, out + 72, 4);
    memcpy(&h, out + 76, 2);
    if (u[0] != 0 || u[1] != 0x80000000u || rz != 0x43DFFFFFFFFFFFFFull || sat != 0x3F800000u || h != 0x8000)
        return snprintf(why, cap, "edges: u32(-5) 0x%x, u32(NaN f64) 0x%x, f64.rz(INT64_MAX) 0x%llx, sat 0x%x, u16(NaN f64) "
                        "0x%x", u[0], u[1], (unsigned long long)rz, sat, h), 0;
    return 1;
}

/* tma_oob_*.ptx: in as a 16 x 16 f32 tensor; out holds the box of 16 x 8
 * from (-4, 12) and then the one from (4, -4), elements off the tensor
 * filled with 0 or (oobfill 1) NaN, which an H200 writes as 0x7FF77FF7. */
static int oob_fill_ok(const uint8_t *in, const uint8_t *out, int nan, char *why, size_t cap)
{
    static const int start[2][2] = {{-4, 12}, {4, -4}};
    for (int b = 0; b < 2; b++)
        for (int y = 0; y < 8; y++)
            for (int x = 0; x < 16; x++) {
                int col = start[b][0] + x, row = start[b][1] + y, at = 4 * (b * 128 + y * 16 + x);
                uint32_t want = nan ? 0x7FF77FF7u : 0, got;
                if (col >= 0 && col < 16 && row >= 0 && row < 16) memcpy(&want, in + 4 * (row * 16 + col), 4);
                memcpy(&got, out + at, 4);
                if (got != want)
                    return snprintf(why, cap, "box %d element (%d, %d) is 0x%08x, wanted 0x%08x", b, x, y, got, want), 0;
            }
    return 1;
}

/* Runs the file's kernel; 0 with *err empty on success, else the error text. */
/* Whether a GPU of compute capability cc (major*10+minor) runs the file's
 * .target: sm_NNa / sm_NNf only on NN itself (arch-specific), sm_NN on NN or later. */
static int gpu_runs_target(const char *ptx, int cc)
{
    const char *t = strstr(ptx, ".target sm_");
    if (!t) return 1;
    char *end;
    long nn = strtol(t + 11, &end, 10);
    return (*end == 'a' || *end == 'f') ? nn == cc : nn <= cc;
}

static void one(Device *dev, const char *path, int gpu)
{
    char name[256], err[2048] = "";
    const char *base = strrchr(path, '/');
    snprintf(name, sizeof name, "sim %s", base ? base + 1 : path);
    char *ptx = slurp(path);
    Header h;
    if (!ptx) { check(0, name, "cannot read %s", path); return; }
    header(ptx, &h);
    int want_ok = !strcmp(h.expect, "ok");
    if (gpu && !want_ok) { free(ptx); return; }   /* a GPU does not catch these: that is the point */
    DevInfo info;
    if (gpu && !dev_info(dev, &info, err, sizeof err) && !gpu_runs_target(ptx, info.cc_major * 10 + info.cc_minor)) {
        printf("SKIP %s: its .target is not this GPU's (sm_%d%d)\n", name, info.cc_major, info.cc_minor);
        free(ptx);
        return;
    }
    uint8_t in[BYTES], out[BYTES];
    for (int i = 0; i < BYTES; i++) in[i] = (uint8_t)(rand() & 0xFF);
    Device *use = dev;
    if ((h.strict || h.note[0] || h.ctas_per_sm) && !gpu) {   /* a device of its own: strict, this file's notes, co-resident CTAs */
        char k[16];
        snprintf(k, sizeof k, "%u", h.ctas_per_sm);
        if (h.strict) setenv("PTXGEN_SIM_STRICT", "1", 1);
        if (h.ctas_per_sm) setenv("PTXGEN_SIM_CTAS_PER_SM", k, 1);
        int bad = dev_open(&use, "sim", 0, err, sizeof err);
        unsetenv("PTXGEN_SIM_STRICT");
        unsetenv("PTXGEN_SIM_CTAS_PER_SM");
        if (bad) { check(0, name, "%s", err); free(ptx); return; }
    }
    int rc = run(use, ptx, &h, in, out, err, sizeof err);
    if (!rc && h.note[0] && !gpu) {   /* "// note: TEXT": the run succeeds and the sim notes TEXT */
        char notes[2048] = "";
        FILE *f = tmpfile();
        if (f) {
            dev_print_notes(use, f);
            rewind(f);
            notes[fread(notes, 1, sizeof notes - 1, f)] = 0;
            fclose(f);
        }
        check(strstr(notes, h.note) != NULL, name, "wanted a note containing \"%s\", got: %s", h.note, notes[0] ? notes : "none");
        if (notes[0]) printf("  %s", notes);
    }
    if (use != dev) dev_close(use);
    if (!want_ok) {
        check(rc && strstr(err, h.expect) != NULL, name, "wanted an error containing \"%s\", got %s: %s", h.expect,
              rc ? "error" : "success", err);
        if (rc) printf("  %s\n", err);
    } else if (rc) {
        check(0, name, "%s", err);
    } else if (h.atomics) {
        char why[128] = "";
        check(atomics_ok(in, out, why, sizeof why), name, "%s", why);
    } else if (h.fixed) {
        char why[128] = "";
        check(fixed_ok(in, out, why, sizeof why), name, "%s", why);
    } else if (h.oob) {
        char why[128] = "";
        check(oob_fill_ok(in, out, h.tmap[0].oobfill, why, sizeof why), name, "%s", why);
    } else {
        int bad = -1;
        for (int i = 0; i < BYTES && bad < 0; i++)
            if (out[i] != in[(i + 512) % BYTES]) bad = i;
        check(bad < 0, name, "byte %d is 0x%02x, wanted 0x%02x", bad, bad < 0 ? 0 : out[bad], bad < 0 ? 0 : in[(bad + 512) % BYTES]);
    }
    free(ptx);
}

/* The counters' arithmetic on access patterns with known answers. */
static void counter_units(void)
{
    uint32_t a[32];
    uint64_t g[32];
    int ph, wf;
    for (int l = 0; l < 32; l++) a[l] = 4u * (uint32_t)l;
    wf = sim_smem_wavefronts(a, 0xFFFFFFFFu, 4, 32, &ph);
    check(wf == 1 && ph == 1, "smem: 32 consecutive words take 1 wavefront", "%d wavefronts, %d phases", wf, ph);
    for (int l = 0; l < 32; l++) a[l] = 128u * (uint32_t)l;
    wf = sim_smem_wavefronts(a, 0xFFFFFFFFu, 4, 32, &ph);
    check(wf == 32, "smem: a 128-byte stride is a 32-way bank conflict", "%d wavefronts", wf);
    for (int l = 0; l < 32; l++) a[l] = 64;
    wf = sim_smem_wavefronts(a, 0xFFFFFFFFu, 4, 32, &ph);
    check(wf == 1, "smem: one word read by every lane is a broadcast", "%d wavefronts", wf);
    for (int l = 0; l < 32; l++) a[l] = 16u * (uint32_t)l;
    wf = sim_smem_wavefronts(a, 0xFFFFFFFFu, 16, 8, &ph);
    check(wf == 4 && ph == 4, "smem: 16-byte lanes take 4 conflict-free phases", "%d wavefronts, %d phases", wf, ph);
    for (int l = 0; l < 32; l++) a[l] = 256u * (uint32_t)(l & 7) + 16u * (uint32_t)(l >> 3);
    wf = sim_smem_wavefronts(a, 0xFFFFFFFFu, 16, 8, &ph);
    check(wf == 32, "smem: 8 rows of 256 B, unswizzled, conflict 8 ways per phase", "%d wavefronts", wf);
    for (int l = 0; l < 32; l++) g[l] = 0x1000 + 4u * (uint64_t)l;
    check(sim_gmem_sectors(g, 0xFFFFFFFFu, 4) == 4, "gmem: 128 contiguous bytes are 4 sectors", "%d",
          sim_gmem_sectors(g, 0xFFFFFFFFu, 4));
    for (int l = 0; l < 32; l++) g[l] = 0x1000 + 64u * (uint64_t)l;
    check(sim_gmem_sectors(g, 0x0000FFFFu, 4) == 16, "gmem: 16 lanes 64 B apart touch 16 sectors", "%d",
          sim_gmem_sectors(g, 0x0000FFFFu, 4));
}

/* The reductions red/atom and the TMA unit's bulk reductions share. */
static void reduce_units(void)
{
    static const struct { int type, redop; uint64_t old, v, want; const char *what; } k[] = {
        {T_F16, RO_ADD, 0x3C00, 0x4000, 0x4200, "f16 1 + 2 = 3"},
        {T_F16, RO_ADD, 0x6800, 0x3C00, 0x6800, "f16 2048 + 1 rounds to even 2048"},
        {T_F16, RO_ADD, 0x6800, 0x4200, 0x6802, "f16 2048 + 3 rounds to even 2052"},
        {T_BF16, RO_ADD, 0x3F80, 0x3F80, 0x4000, "bf16 1 + 1 = 2"},
        {T_F16, RO_MIN, 0xBC00, 0x4000, 0xBC00, "f16 min(-1, 2) = -1"},
        {T_BF16, RO_MAX, 0xBF80, 0x4000, 0x4000, "bf16 max(-1, 2) = 2"},
        {T_F32, RO_ADD, 0x3F800000, 0x40000000, 0x40400000, "f32 1 + 2 = 3"},
        {T_U32, RO_ADD, 0xFFFFFFFF, 2, 1, "u32 add wraps"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        int width = isa_type_bits(k[i].type) / 8;
        uint64_t got = sim_red_apply(k[i].type, k[i].redop, k[i].old, k[i].v, 0, width);
        check(got == k[i].want, k[i].what, "got 0x%llx, wanted 0x%llx", (unsigned long long)got, (unsigned long long)k[i].want);
    }
}

/* Runs body (the code of an entry k() with no parameters, on target) after decls (module scope, e.g. a .global
 * array) in one CTA of threads threads and 4096 bytes of dynamic shared memory under a limit of max_steps; returns
 * its error (empty: none; a refusal when the module is parsed is one) and the warp instructions run. */
static uint64_t run_module(const char *target, const char *decls, const char *body, unsigned threads,
                           uint64_t max_steps, char *err, size_t errlen)
{
    char ptx[4096];
    snprintf(ptx, sizeof ptx, ".version 8.6\n.target %s\n.address_size 64\n.extern .shared .align 1024 .b8 smem[];\n"
             "%s.visible .entry k()\n{\n%s}\n", target, decls, body);
    SimModule *m;
    err[0] = 0;
    if (sim_parse(ptx, &m, err, errlen)) return 0;
    Sim sim;
    sim_init(&sim);
    sim.err = err, sim.errlen = errlen, sim.max_steps = max_steps;
    const unsigned grid[3] = {1, 1, 1}, block[3] = {threads, 1, 1};
    if (!sim_launch_raw(&sim, m, sim_find(m, "k"), grid, block, NULL, 4096, NULL, 0)) err[0] = 0;
    uint64_t n = 0;
    for (int c = 0; c < CL_COUNT; c++) n += sim.stats.warp_insns[c];
    sim_fini(&sim);
    sim_module_free(m);
    return n;
}

static uint64_t run_limited(const char *body, unsigned threads, uint64_t max_steps, char *err, size_t errlen)
{
    return run_module("sm_90a", "", body, threads, max_steps, err, errlen);
}

/* An instruction (or a few lines) ptxas refuses or takes, and the text of the sim's refusal (NULL: it runs). */
typedef struct { const char *insn, *want; } Form;

/* Each form's insn after prologue in entry k() of a module on target with decls, in one CTA of threads threads:
 * refused naming what is wrong, or run without an error. */
static void form_cases(const char *target, const char *decls, const char *prologue, unsigned threads, const Form *k,
                       size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char body[2048], err[1024], what[200];
        snprintf(body, sizeof body, "%s  %s\n  ret;\n", prologue, k[i].insn);
        run_module(target, decls, body, threads, 1 << 16, err, sizeof err);
        snprintf(what, sizeof what, "sim: %.90s %s", k[i].insn, k[i].want ? "is refused" : "runs");
        check(k[i].want ? strstr(err, k[i].want) != NULL : !err[0], what, "got: %s", err[0] ? err : "no error");
    }
}

/* Each case of the form tests below checks the sim against ptxas 13.0: what ptxas refuses (a missing or extra
 * operand, one of the wrong kind, a modifier the instruction does not take or lacks) is refused when the module is
 * parsed, naming the instruction and what is wrong, where the units once read a missing operand as register 0 or
 * ignored the modifier; the forms beside them, which ptxas takes, run. */

/* Memory, mbarrier, cluster, fence and copy forms, in one thread, over g (7s) and shared memory: a .b128 once ran
 * into 8 bytes of stack, red/atom and cp.async read past their operands; cp.async.wait_all commits before it waits
 * (PTX ISA), an ignore-src predicate that holds zero-fills (it was read as a 1-byte src-size) and a vector atom
 * returns each element's old value (it was refused): the kernel divides by zero where a value is wrong. */
static void mem_forms(void)
{
    static const Form k[] = {
        {"cp.async.wait_group;", "cp.async.wait_group takes 1 operand (N), found 0"},
        {"cp.async.commit_group 1;", "cp.async.commit_group takes no operand, found 1"},
        {"ld.shared.b128 %rd1, [smem];", "ld operand 1 is register %rd1 (.b64); ld takes a .b128 (or wider) value there"},
        {"red.shared.add.u32 [smem], %r1, %r1;", "red takes 2 operands ([a], b), found 3"},
        {"red.shared.add.u32 %rd1, %r1;", "red operand 1 must be an address [...], not a register"},
        {"red.shared.add.v4.f32 [smem], {%f0, %f0};", "red operand 2 must be a vector of 4"},
        {"red.global.cas.b32 [g], %r1, %r1;", "red takes no .exch or .cas (atom does)"},
        {"atom.global.add.u32 [g], %r1;", "atom takes 3 operands (d, [a], b), found 2"},
        {"ld.global.rn.u32 %r2, [g];", "ld.global.rn.u32: ld takes no .rn"},
        {"ld.global.v2.u32 %r2, [g];", "ld operand 1 must be a vector of 2"},
        {"ld.global.L2::cache_hint.u32 %r2, [g];", "ld takes 3 operands (d, [a], cache-policy), found 2"},
        {"st.global.v2.u32 [g], {%r1, _};", "st operand 2 must be a vector of 2 {...} of registers (no _"},
        {"prefetch.global [g];", "prefetch needs a cache level"},
        {"cp.async.cg.shared.global [smem], [g], 8;", "cp.async cp-size 8: 4, 8 or 16 bytes (.cg: 16)"},
        {"cp.async.ca.shared.global [smem], [g], %r1;", "cp.async operand 3 must be a constant, not a register"},
        {"cp.async.ca.global.shared [smem], [g], 4;", "cp.async copies .shared{::cta} <- .global"},
        {"mbarrier.init.shared::cta.b32 [smem], 1;", "mbarrier.init takes no .b32"},
        {"mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [smem];", "mbarrier.expect_tx takes 2 operands ([mbar], txCount), found 1"},
        {"mbarrier.arrive.expect_tx.shared::cta.b64 _, [smem];", "mbarrier.arrive.expect_tx takes 3 operands"},
        {"mbarrier.arrive.shared::cta.b64 [smem];", "mbarrier.arrive takes 2 to 3 operands (state, [mbar]{, count}), found 1"},
        {"mbarrier.arrive.shared::cluster.b64 %rd1, [smem];", "mbarrier.arrive operand 1 must be _, not a register"},
        {"mbarrier.try_wait.parity.shared::cta.b64 %r2, [smem], 0;", "mbarrier.try_wait operand 1 must be a predicate register"},
        {"mapa.shared::cluster.u32 %r2, %r0;", "mapa takes 3 operands (d, a, rank), found 2"},
        {"mapa.shared::cluster.u32 %r2, [%r0], 0;", "mapa operand 2 must be a register or a constant, not an address"},
        {"mapa.sync.shared::cluster.u32 %r2, %r0, 0;", "mapa takes no .sync"},
        {"setmaxnreg.inc.sync.aligned.u32;", "setmaxnreg takes 1 operand (imm-reg-count), found 0"},
        {"setmaxnreg.inc.sync.aligned.u32 %r1;", "setmaxnreg operand 1 must be a constant, not a register"},
        {"setmaxnreg.sync.aligned.u32 64;", "setmaxnreg needs .inc or .dec"},
        {"setmaxnreg.inc.aligned.u32 64;", "setmaxnreg needs .sync"},
        {"setmaxnreg.dec.sync.aligned.u32 20;", "setmaxnreg takes 24 to 256 registers in steps of 8, not 20"},
        {"st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [smem], %r1;",
         "st.async takes 3 operands ([addr], b, [remote_bar]), found 2"},
        {"st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [smem], %r1, [smem];",
         "st.async operand 2 must be a vector of 2"},
        {"st.async.shared::cta.mbarrier::complete_tx::bytes.b32 [smem], %r1, [smem];",   /* ptxas takes it: refused by name */
         "st.async into .shared::cta is not modelled by the sim"},
        {"griddepcontrol;", "griddepcontrol needs .launch_dependents or .wait"},
        {"griddepcontrol.wait %r1;", "griddepcontrol takes no operand, found 1"},
        {"fence.sc;", "fence needs one of .cta, .cluster, .gpu or .sys"},
        {"membar;", "membar needs one of .cta, .gpu or .sys"},
        {"fence.proxy.async.shared::cta.global;", "fence.proxy.async takes one state space"},
        {"barrier.cluster.arrive.acquire;", "barrier.cluster.arrive takes no .acquire"},
        {"bar.sync;", "bar.sync takes 1 to 2 operands (a{, b}), found 0"},
        {"bra;", "bra takes 1 operand (target), found 0"},
        {"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [smem], [%rd0, {%r1}], [smem];",
         "cp.async.bulk.tensor operand 2 must be a tensor address [map, {coordinates}] with 2 coordinates"},
        {"cp.async.bulk.tensor.2d.global.shared::cta.mbarrier::complete_tx::bytes [%rd0, {%r1, %r1}], [smem];",
         "a copy into global memory completes through .bulk_group"},
        {"cp.async.bulk.shared::cluster.global [smem], [g], 16, [smem];", "cp.async.bulk needs one of"},
        {"cp.async.bulk.wait_group %r1;", "cp.async.bulk.wait_group operand 1 must be a constant"},
        {"wgmma.fence.sync.aligned %r1;", "wgmma.fence takes no operand, found 1"},
        {"wgmma.commit_group.aligned;", "wgmma.commit_group needs .sync"},
        {"wgmma.wait_group.sync.aligned;", "wgmma.wait_group takes 1 operand (N), found 0"},
        {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 %f0, %r1, %r1, %f0;", "mma operand 1 must be a vector of 4"},
        {"ld.global.u32 {%r2}, [g];", NULL},   /* a vector of one without .v */
        {"prefetch.global.L2::evict_last [g];\n  griddepcontrol.wait;\n  fence.acq_rel.gpu;\n  membar.gl;\n  bar.sync 0, 32;", NULL},
        {"mapa.shared::cluster.u32 %r2, %r0, 0;\n  setmaxnreg.dec.sync.aligned.u32 64;", NULL},
        {"mbarrier.init.shared::cta.b64 [smem], 1;\n  mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [smem], 16;\n"
         "  mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [smem], 16;\n  mbarrier.arrive.shared::cta.b64 %rd1, [smem];\n"
         "  mbarrier.try_wait.parity.shared::cta.b64 %p1, [smem], 0;\n  selp.u32 %r3, 1, 0, %p1;\n  div.u32 %r3, 1, %r3;", NULL},
        {"cp.async.ca.shared.global [smem], [g], 4;\n  cp.async.wait_all;\n  ld.shared.u32 %r2, [smem];\n"
         "  setp.ne.u32 %p1, %r2, 7;\n  selp.u32 %r3, 0, 1, %p1;\n  div.u32 %r3, 1, %r3;", NULL},
        {"cp.async.ca.shared.global [smem], [g], 4, %p0;\n  cp.async.wait_all;\n  ld.shared.u32 %r2, [smem];\n"
         "  setp.ne.u32 %p1, %r2, 0;\n  selp.u32 %r3, 0, 1, %p1;\n  div.u32 %r3, 1, %r3;", NULL},
        {"atom.global.v2.f32.add {%f1, %f2}, [g], {%f0, %f0};\n  mov.b32 %r2, %f2;\n  setp.ne.u32 %p1, %r2, 7;\n"
         "  selp.u32 %r3, 0, 1, %p1;\n  div.u32 %r3, 1, %r3;", NULL},
        /* ldu: ld.global's value, its address global (tests/sim_cuda/header_forms.cu, on an H200 too) */
        {"ldu.global.u32 %r2, [g];\n  ldu.u32 %r3, [%rd0];\n  add.u32 %r2, %r2, %r3;\n  setp.ne.u32 %p1, %r2, 14;\n"
         "  selp.u32 %r3, 0, 1, %p1;\n  div.u32 %r3, 1, %r3;", NULL},
        {"ldu.shared.u32 %r1, [%r0];", "ldu takes no .shared"},
        {"cvt.u64.u32 %rd1, %r0;\n  cvta.shared.u64 %rd1, %rd1;\n  ldu.u32 %r1, [%rd1];",
         "ldu of an address outside global memory"}};
    form_cases("sm_90a", ".global .align 16 .b32 g[4] = {7, 7, 7, 7};\n",
               "  .reg .b32 %r<4>;\n  .reg .b64 %rd<2>;\n  .reg .f32 %f<3>;\n  .reg .pred %p<2>;\n  mov.u32 %r0, smem;\n"
               "  mov.u32 %r1, 1;\n  mov.u64 %rd0, g;\n  mov.f32 %f0, 0f3F800000;\n  setp.ne.u32 %p0, %r1, 0;\n",
               1, k, sizeof k / sizeof k[0]);
}

/* Warp collectives in a full warp: shfl without its mode (it ran as .idx), vote's and match's modes, elect's d|p,
 * ldmatrix's vector; and their valid forms. */
static void warp_forms(void)
{
    static const Form k[] = {
        {"shfl.sync.b32 %r2, %r1, 1, 0x1f, 0xffffffff;", "shfl needs one of .bfly, .idx, .up or .down"},
        {"shfl.sync.bfly.up.b32 %r2, %r1, 1, 0x1f, 0xffffffff;", ".up cannot be combined with .bfly"},
        {"shfl.sync.bfly.b32 %r2, %r1, 1, 0x1f;", "shfl takes 5 operands (d{|p}, a, b, c, membermask), found 4"},
        {"shfl.sync.bfly.f32 %f1, %f0, 1, 0x1f, 0xffffffff;", "shfl takes no .f32"},
        {"vote.sync.b32 %r2, %p0, 0xffffffff;", "vote needs one of"},
        {"vote.sync.all.b32 %p1, %p0, 0xffffffff;", "vote takes .b32 with .ballot and .pred with .all, .any, .uni"},
        {"vote.sync.ballot.b32 %r2, %r1, 0xffffffff;", "vote operand 2 must be a predicate or a constant, not a register"},
        {"elect.sync %r2, 0xffffffff;", "elect operand 1 must be a register or _ with a predicate (d|p)"},
        {"match.any.sync.b32 %r2|%p1, %r1, 0xffffffff;", "match operand 1 must be a register, not a register with |p"},
        {"redux.sync.u32 %r2, %r1, 0xffffffff;", "redux needs an operation"},
        {"activemask %r2;", "activemask needs a type"},
        {"ldmatrix.sync.aligned.m8n8.x1.shared.b16 %r2, [smem];", "ldmatrix operand 1 must be a vector of 1"},
        /* member masks of groups smaller than the warp (values: tests/sim_cuda/warp_groups.cu, on an H200 too) */
        {"mov.u32 %r3, %laneid;\n  and.b32 %r3, %r3, 16;\n  mov.u32 %r2, 0xffff;\n  shl.b32 %r3, %r2, %r3;\n"
         "  shfl.sync.bfly.b32 %r2, %r1, 1, 0x1f, %r3;\n  vote.sync.ballot.b32 %r2, %p0, %r3;\n"
         "  redux.sync.add.u32 %r2, %r1, %r3;", NULL},
        {"shfl.sync.bfly.b32 %r2, %r1, 1, 0x1f, 0xffff;", "member mask 0x0000ffff does not name the lane itself"},
        {"mov.u32 %r3, %laneid;\n  setp.lt.u32 %p1, %r3, 16;\n  selp.b32 %r3, 0xffff, 0xffffffff, %p1;\n"
         "  vote.sync.ballot.b32 %r2, %p0, %r3;", "member mask 0xffffffff differs from the mask of a lane it names"},
        {"mov.u32 %r3, %laneid;\n  setp.lt.u32 %p1, %r3, 16;\n  @%p1 shfl.sync.bfly.b32 %r2, %r1, 1, 0x1f, 0xffffffff;",
         "member mask 0xffffffff names lanes that do not execute it"},
        {"mov.u32 %r3, %laneid;\n  and.b32 %r3, %r3, 16;\n  mov.u32 %r2, 0xffff;\n  shl.b32 %r3, %r2, %r3;\n"
         "  shfl.sync.bfly.b32 %r2, %r1, 16, 0x1f, %r3;", "which is not in the lane's member mask"},
        {"shfl.sync.bfly.b32 %r2, %r1, 1, 0x1f, 0xffffffff;\n  shfl.sync.idx.b32 %r2|%p1, %r1, 0, 0x1f, 0xffffffff;", NULL},
        {"vote.sync.ballot.b32 %r2, %p0, 0xffffffff;\n  vote.sync.all.pred %p1, %p0, 0xffffffff;\n"
         "  elect.sync _|%p1, 0xffffffff;\n  match.all.sync.b32 %r2|%p1, %r1, 0xffffffff;\n  activemask.b32 %r2;", NULL},
        /* the sink _ in a destination vector (ptxas takes it): its value dropped; it was written to slot -1 */
        {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1, _, %f1, _}, {%r1, %r1, %r1, %r1}, {%r1, %r1}, "
         "{%f0, %f0, %f0, %f0};", NULL},
        {"st.shared.v4.b32 [smem], {%r1, %r1, %r1, %r1};\n  bar.sync 0;\n"
         "  ldmatrix.sync.aligned.m8n8.x2.shared.b16 {_, %r2}, [smem];", NULL}};
    form_cases("sm_90a", "", "  .reg .b32 %r<4>;\n  .reg .f32 %f<2>;\n  .reg .pred %p<2>;\n  mov.u32 %r1, 1;\n"
               "  mov.f32 %f0, 0f3F800000;\n  setp.ne.u32 %p0, %r1, 0;\n", 32, k, sizeof k / sizeof k[0]);
}

/* tcgen05 forms in a full warp on sm_100a: alloc without its column count (read as register 0), its .cta_group,
 * the registers a shape takes, an MMA's predicate; .pack::16b, which takes as many registers as unpacked (ptxas)
 * but whose column pairs the sim does not know, is refused when it runs; alloc, dealloc and relinquish run. */
static void tc_forms(void)
{
    static const Form k[] = {
        {"tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [smem];", "tcgen05.alloc takes 2 operands ([dst], nCols), found 1"},
        {"tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 %r0, 32;", "tcgen05.alloc operand 1 must be an address"},
        {"tcgen05.alloc.sync.aligned.shared::cta.b32 [smem], 32;", "tcgen05.alloc needs a .cta_group"},
        {"tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2;", "tcgen05.dealloc takes 2 operands"},
        {"tcgen05.ld.sync.aligned.32x32b.x2.b32 {%r2}, [%r0];", "tcgen05.ld operand 1 must be a vector of 2"},
        {"tcgen05.ld.sync.aligned.32x32b.x2.pack::16b.b32 {%r2, %r3}, [%r0];", "tcgen05.ld .pack::16b is not modelled"},
        {"tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [smem];",
         "tcgen05.commit takes 2 operands ([mbar], ctaMask), found 1"},
        {"tcgen05.mma.cta_group::1.kind::f16 [%r0], %rd1, %rd1, %r1;", "tcgen05.mma takes 5 to 7 operands"},
        {"tcgen05.mma.cta_group::1.kind::f16 [%r0], %rd1, %rd1, %r1, %r1;", "tcgen05.mma operand 5 must be a predicate"},
        {"tcgen05.mma.ws.cta_group::2.kind::f16 [%r0], %rd1, %rd1, %r1, %p0;", ".ws takes .cta_group::1"},
        {"tcgen05.shift.cta_group::1 [%r0];", "tcgen05.shift needs .down"},
        {"tcgen05.wait::ld.sync.aligned %r1;", "tcgen05.wait::ld takes no operand, found 1"},
        {"tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [smem], 32;\n  ld.shared.u32 %r2, [smem];\n"
         "  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 32;\n  tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;",
         NULL}};
    form_cases("sm_100a", "", "  .reg .b32 %r<4>;\n  .reg .b64 %rd<2>;\n  .reg .pred %p<2>;\n  mov.u32 %r0, smem;\n"
               "  mov.u32 %r1, 1;\n  mov.u64 %rd1, 0;\n  setp.ne.u32 %p0, %r1, 0;\n", 32, k, sizeof k / sizeof k[0]);
}

/* f16 and bf16 fma rounded once from the exact value: each triple's a b + c rounds (nearest even) to want, and
 * rounded first to f32 or f64 it would land on a tie or past one and round the other way (found by a search in
 * exact rational arithmetic). The kernel divides by zero when the result differs, which the sim names. */
static void half_rounding_units(void)
{
    /* the last three: (1 - 2^-11) 2^-14 rounds up to the smallest normal, which .ftz flushes all the same (its
     * exact value is subnormal: the H200 in tests/fuzz_alu.golden); 2^-14 itself stays */
    static const struct { const char *type; unsigned a, b, c, want; } k[] = {
        {"rn.f16", 0x3829, 0x33E7, 0x3E74, 0x3EF7}, {"rn.f16", 0x4052, 0x4238, 0x03FC, 0x46B7},
        {"rn.bf16", 0x3F2C, 0x3F30, 0x31A1, 0x3EED}, {"rn.bf16", 0x3F8C, 0x3F10, 0x8800, 0x3F1D},
        {"rn.bf16", 0x3F50, 0x3F0C, 0x9E91, 0x3EE3}, {"rn.f16", 0x3BFF, 0x0400, 0x0000, 0x0400},
        {"rn.ftz.f16", 0x3BFF, 0x0400, 0x0000, 0x0000}, {"rn.ftz.f16", 0x3C00, 0x0400, 0x0000, 0x0400}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        char body[1024], err[1024], what[128];
        snprintf(body, sizeof body,
                 "  .reg .b16 %%h<4>;\n  .reg .pred %%p<2>;\n  .reg .b32 %%r<4>;\n  mov.b16 %%h1, 0x%04X;\n"
                 "  mov.b16 %%h2, 0x%04X;\n  mov.b16 %%h3, 0x%04X;\n  fma.%s %%h0, %%h1, %%h2, %%h3;\n"
                 "  setp.ne.b16 %%p1, %%h0, 0x%04X;\n  selp.u32 %%r1, 0, 1, %%p1;\n  div.u32 %%r2, 1, %%r1;\n  ret;\n",
                 k[i].a, k[i].b, k[i].c, k[i].type, k[i].want);
        run_limited(body, 32, 1 << 16, err, sizeof err);
        snprintf(what, sizeof what, "sim: fma.%s 0x%04X 0x%04X 0x%04X rounds once to 0x%04X", k[i].type, k[i].a, k[i].b, k[i].c,
                 k[i].want);
        check(!err[0], what, "%s", err);
    }
}

/* ex2.approx and tanh.approx on halves in forms PTX does not have (ptxas refuses them): refused by the sim too,
 * not computed as the nearest valid form */
static void half_approx_forms(void)
{
    static const char *const bad[] = {"ex2.approx.bf16 %h1, %h0;", "ex2.approx.ftz.f16 %h1, %h0;",
                                      "tanh.approx.ftz.f16 %h1, %h0;", "ex2.approx.ftz.f16x2 %r1, %r0;"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char body[512], err[1024], what[128];
        snprintf(body, sizeof body, "  .reg .b16 %%h<2>;\n  .reg .b32 %%r<2>;\n  mov.b16 %%h0, 0x3C00;\n"
                 "  mov.b32 %%r0, 0x3C003C00;\n  %s\n  ret;\n", bad[i]);
        run_limited(body, 32, 1 << 16, err, sizeof err);
        snprintf(what, sizeof what, "sim: %s (no PTX form) is refused", bad[i]);
        /* refused as it is parsed (the instruction's types, sim_types.c) or as it runs (the ALU's half forms) */
        check(strstr(err, "half-precision") || strstr(err, " takes no ."), what, "got: %s", err[0] ? err : "no error");
    }
}

/* An ALU instruction with an operand missing or one too many, or a modifier no arithmetic has: refused by name (the
 * lanes once read a missing source as 0 and ignored an extra one or the modifier), and the valid three-operand,
 * packing and cvta forms still run */
/* Negated predicate sources (!p), which ptxas takes wherever an operand is read as a predicate (selp's, setp's and
 * vote's, the sources of and/or/xor/not/mov .pred) and nowhere else: each valid form runs to the value it must give
 * (p0 true, p1 false; a wrong value divides by zero), the others are refused. */
static void negated_predicates(void)
{
    static const Form k[] = {
        {"and.pred %p2, %p0, !%p1;\n  selp.u32 %r3, 1, 0, %p2;\n  div.u32 %r3, 1, %r3;", NULL},
        {"or.pred %p2, !%p0, %p1;\n  selp.u32 %r3, 0, 1, %p2;\n  div.u32 %r3, 1, %r3;", NULL},
        {"xor.pred %p2, %p0, !%p1;\n  selp.u32 %r3, 0, 1, %p2;\n  div.u32 %r3, 1, %r3;", NULL},
        {"not.pred %p2, !%p1;\n  selp.u32 %r3, 0, 1, %p2;\n  div.u32 %r3, 1, %r3;", NULL},
        {"mov.pred %p2, !%p1;\n  selp.u32 %r3, 1, 0, %p2;\n  div.u32 %r3, 1, %r3;", NULL},
        {"selp.u32 %r3, 1, 0, !%p1;\n  div.u32 %r3, 1, %r3;", NULL},
        {"setp.eq.and.u32 %p2, %r0, 0, !%p1;\n  selp.u32 %r3, 1, 0, %p2;\n  div.u32 %r3, 1, %r3;", NULL},
        {"vote.sync.any.pred %p2, !%p0, -1;\n  selp.u32 %r3, 0, 1, %p2;\n  div.u32 %r3, 1, %r3;", NULL},
        {"vote.sync.ballot.b32 %r3, !%p1, -1;\n  div.u32 %r3, 1, %r3;", NULL},
        {"add.u32 %r3, %r0, !%p1;", "add operand 3 must be a register or a constant, not a negated predicate (!p)"},
        {"mov.pred !%p2, %p1;", "mov operand 1 must be a register or a vector {...}, not a negated predicate (!p)"},
        {"selp.u32 %r3, 1, 0, !%r0;", "only a predicate register may be negated ('!')"}};
    form_cases("sm_90a", "", "  .reg .b32 %r<4>;\n  .reg .pred %p<3>;\n  mov.b32 %r0, 0;\n"
               "  setp.eq.u32 %p0, %r0, 0;\n  setp.ne.u32 %p1, %r0, 0;\n", 32, k, sizeof k / sizeof k[0]);
}

static void alu_forms(void)
{
    static const Form k[] = {
        {"mul.f32 %f1, %f0;", "mul takes 3 operands (d, a, b), found 2"},
        {"mul.f32 %f1, %f0, %f0, %f0;", "mul takes 3 operands (d, a, b), found 4"},
        {"fma.rn.f32 %f1, %f0, %f0;", "fma takes 4 operands"},
        {"selp.f32 %f1, %f0, %f0;", "selp takes 4 operands"},
        {"setp.lt.and.f32 %p1, %f0, %f0;", "setp takes 4 operands"},
        {"cvt.rn.f32.f16 %f1, %h0, %h0, %h0;", "cvt takes 2 to 3 operands"},
        {"mul.f32.global %f1, %f0, %f0;", "mul takes no .global"},
        {"add.sync.aligned.f32 %f1, %f0, %f0;", "add takes no .sync"},
        {"rcp.rn.f32.acquire.gpu %f1, %f0;", "rcp takes no .acquire"},
        {"add.rn.rz.f32 %f1, %f0, %f0;", ".rz cannot be combined with .rn"},
        {"mov.b64 {%r1, %r0}, {%r0, %r1};", "mov takes a vector on one side only"},
        {"cvta.to.global.u32 %r1, %r0;", NULL},
        {"ex2.ftz.f32 %f1, %f0;", "ex2 needs .approx"},
        {"rcp.f32 %f1, %f0;", "rcp needs a rounding modifier or .approx"},
        {"div.f32 %f1, %f0, %f0;", "div needs a rounding modifier, .approx or .full"},
        {"div.full.f32 %f1, %f0, %f0;", NULL},
        {"div.u32 %r1, %r0, 3;", NULL},
        {"max.f32 %f1, %f0, %f0, %f0;", NULL},
        {"cvt.rn.bf16x2.f32 %r1, %f0, %f0;", NULL},
        {"setp.lt.and.f32 %p1, %f0, %f0, %p0;", NULL},
        /* the 24-bit products and bit masks (values: tests/sim_cuda/mask_forms.cu, checked on an H200 too) */
        {"mul24.lo.u32 %r1, %r0, %r0;", NULL},
        {"mad24.hi.sat.s32 %r1, %r0, %r0, %r0;", NULL},
        {"mul24.u32 %r1, %r0, %r0;", "mul24 needs one of .lo or .hi"},
        {"mad24.hi.sat.u32 %r1, %r0, %r0, %r0;", "mad24 takes no .u32 here (with these modifiers it takes .s32)"},
        {"mad24.lo.sat.s32 %r1, %r0, %r0, %r0;", ".sat other than on mad24.hi.s32"},
        {"mul24.lo.u16 %r1, %r0, %r0;", "mul24 takes no .u16"},
        {"bmsk.wrap.b32 %r1, %r0, 3;", NULL},
        {"szext.clamp.s32 %r1, %r0, 40;", NULL},
        {"bmsk.b32 %r1, %r0, %r0;", "bmsk needs one of .clamp or .wrap"},
        {"bmsk.clamp.u32 %r1, %r0, %r0;", "bmsk takes no .u32"},
        {"szext.wrap.b32 %r1, %r0, %r0;", "szext takes no .b32"},
        {"szext.clamp.wrap.u32 %r1, %r0, %r0;", ".wrap cannot be combined with .clamp"},
        /* the carry arithmetic (values: tests/sim_cuda/int128_math.cu, on an H200 too) */
        {"add.cc.u32 %r1, %r0, %r0;", NULL},
        {"mad.lo.cc.u32 %r1, %r0, %r0, %r0;\n  madc.hi.cc.u32 %r1, %r0, %r0, %r0;", NULL},
        {"sub.cc.s64 %rd1, %rd0, %rd0;\n  subc.cc.s64 %rd1, %rd0, %rd0;", NULL},
        {"addc.u32 %r1, %r0, %r0;", "reads the carry flag CC.CF before any .cc instruction set it"},
        {"add.cc.sat.s32 %r1, %r0, %r0;", "add takes no .sat with .cc"},
        {"add.cc.u16 %h1, %h0, %h0;", "add takes .cc with .u32, .s32, .u64 or .s64 only"},
        {"add.cc.f32 %f1, %f0, %f0;", "add takes .cc with .u32, .s32, .u64 or .s64 only"},
        {"mad.cc.u32 %r1, %r0, %r0, %r0;", "mad takes .cc with .lo or .hi only"},
        {"mad.wide.cc.u32 %rd1, %r0, %r0, %rd0;", "mad takes .cc with .lo or .hi only"},
        {"madc.u32 %r1, %r0, %r0, %r0;", "madc needs one of .lo or .hi"},
        {"madc.wide.u32 %rd1, %r0, %r0, %rd0;", "madc takes no .wide"},
        {"addc.sat.s32 %r1, %r0, %r0;", "addc takes no .sat"},
        {"subc.u16 %h1, %h0, %h0;", "subc takes no .u16"},
        {"addc.b32 %r1, %r0, %r0;", "addc takes no .b32"},
        {"addc.cc.cc.u32 %r1, %r0, %r0;", ".cc cannot be combined with .cc"},
        /* which window a generic address is in (values: tests/sim_cuda/space_forms.cu, on an H200 too) */
        {"isspacep.global %p1, %r0;", NULL},
        {"isspacep.shared::cluster %p1, %r0;", NULL},
        {"isspacep %p1, %r0;", "isspacep without a state space"},
        {"isspacep.const %p1, %r0;", "isspacep.const (constant memory lives in global memory here"},
        {"isspacep.global %p1, %f0;", "isspacep takes a .u32 (or wider) value there"},
        {"isspacep.global.u32 %p1, %r0;", "isspacep takes no .u32"},
        {"isspacep.global.shared %p1, %r0;", "isspacep takes one state space"},
        /* an 8x8 transpose across the warp (values: tests/sim_cuda/movmatrix.cu, on an H200 too) */
        {"movmatrix.sync.aligned.m8n8.trans.b16 %r1, %r0;", NULL},
        {"movmatrix.sync.aligned.m8n8.trans.b16 %f1, %f0;", NULL},   /* ptxas takes any 32-bit register */
        {"movmatrix.sync.aligned.m8n8.b16 %r1, %r0;", "movmatrix needs .trans"},
        {"movmatrix.sync.m8n8.trans.b16 %r1, %r0;", "movmatrix needs .aligned"},
        {"movmatrix.sync.aligned.m8n8.trans.b32 %r1, %r0;", "movmatrix takes no .b32"},
        {"movmatrix.sync.aligned.m8n8.trans.b16 %h1, %h0;", "movmatrix takes a .b32 value there"},
        {"movmatrix.sync.aligned.m8n8.trans.b16 %r1, 5;", "movmatrix operand 2 must be a register, not a constant"},
        {"movmatrix.sync.aligned.m16n8.trans.b16 %r1, %r0;", "this form of movmatrix is not modelled"}};
    /* the most negative integer constant (negated in signed arithmetic it overflowed: UBSan found it in
     * CUTLASS's PTX), to its value (another divides by zero) */
    static const Form big[] = {{"mov.b64 %rd1, -9223372036854775808;\n  setp.eq.u64 %p0, %rd1, 0x8000000000000000;\n"
                                "  selp.u32 %r1, 1, 0, %p0;\n  div.u32 %r1, 1, %r1;", NULL}};
    form_cases("sm_90a", "", "  .reg .b32 %r<2>;\n  .reg .b64 %rd<2>;\n  .reg .pred %p<1>;\n", 32, big, 1);
    form_cases("sm_90a", "", "  .reg .b16 %h<2>;\n  .reg .b32 %r<2>;\n  .reg .b64 %rd<2>;\n  .reg .f32 %f<2>;\n"
               "  .reg .pred %p<2>;\n  mov.b16 %h0, 0x3C00;\n  mov.f32 %f0, 0f3F800000;\n  mov.b32 %r0, 0;\n  mov.b64 %rd0, 0;\n"
               "  setp.ne.f32 %p0, %f0, 0f00000000;\n",
               32, k, sizeof k / sizeof k[0]);
}

/* An endless loop is reported within the step limit counted over the CTA's warps, not per warp: 32 spinning
 * warps took 32 times the limit (minutes at the default), and a loop of MMAs, each as slow as hundreds of plain
 * instructions, hours; an MMA counts its multiply-adds / SIM_MACS_PER_STEP. */
static void endless_loops(void)
{
    char err[1024], body[2048];
    enum { LIMIT = 1 << 16 };
    uint64_t n = run_limited("LOOP:\n  bra.uni LOOP;\n", 1024, LIMIT, err, sizeof err);
    check(strstr(err, "endless loop") && n <= LIMIT + 32, "sim: 32 spinning warps are stopped within the limit",
          "%llu warp instructions for a limit of %d: %s", (unsigned long long)n, LIMIT, err);
    /* one warpgroup issuing m64n64k16 wgmma (65536 multiply-adds) forever, over A and B in shared memory */
    int at = snprintf(body, sizeof body,
        "  .reg .b32 %%r<8>;\n  .reg .b64 %%rd<4>;\n  .reg .f32 %%f<32>;\n"
        "  mov.u32 %%r0, %%tid.x;\n  mov.u32 %%r1, smem;\n  shl.b32 %%r2, %%r0, 5;\n  add.u32 %%r3, %%r1, %%r2;\n"
        "  mov.b32 %%r5, 0x3C003C00;\n  st.shared.v4.b32 [%%r3], {%%r5, %%r5, %%r5, %%r5};\n"
        "  st.shared.v4.b32 [%%r3+16], {%%r5, %%r5, %%r5, %%r5};\n  fence.proxy.async.shared::cta;\n  bar.sync 0;\n"
        "  shr.u32 %%r6, %%r1, 4;\n  and.b32 %%r6, %%r6, 16383;\n  cvt.u64.u32 %%rd1, %%r6;\n"
        "  or.b64 %%rd1, %%rd1, 0x0000001000080000;\n  add.u32 %%r7, %%r1, 2048;\n  shr.u32 %%r7, %%r7, 4;\n"
        "  and.b32 %%r7, %%r7, 16383;\n  cvt.u64.u32 %%rd2, %%r7;\n  or.b64 %%rd2, %%rd2, 0x0000001000080000;\n"
        "LOOP:\n  wgmma.fence.sync.aligned;\n  wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {");
    for (int i = 0; i < 32; i++) at += snprintf(body + at, sizeof body - (size_t)at, "%s%%f%d", i ? ", " : "", i);
    snprintf(body + at, sizeof body - (size_t)at, "}, %%rd1, %%rd2, 0, 1, 1, 0, 0;\n  wgmma.commit_group.sync.aligned;\n"
             "  wgmma.wait_group.sync.aligned 0;\n  bra.uni LOOP;\n");
    n = run_limited(body, 128, LIMIT, err, sizeof err);
    check(strstr(err, "endless loop") && n < LIMIT / 8, "sim: a loop of wgmma is stopped after limit / its work",
          "%llu warp instructions for a limit of %d: %s", (unsigned long long)n, LIMIT, err);
}

int main(int argc, char **argv)
{
    int first = 1, gpu = argc > 2 && !strcmp(argv[1], "--device") && !strcmp(argv[2], "cuda");
    if (gpu) first = 3;
    char err[512];
    Device *dev;
    if (dev_open(&dev, gpu ? "cuda" : "sim", 0, err, sizeof err)) { printf("FAIL open device: %s\n", err); return 1; }
    srand(12345);
    if (!gpu) counter_units(), reduce_units(), endless_loops(), half_rounding_units(), half_approx_forms(),
                alu_forms(), negated_predicates(), mem_forms(), warp_forms(), tc_forms();
    if (first < argc) {
        for (int i = first; i < argc; i++) one(dev, argv[i], gpu);
    } else {
        /* the directory, so that a file added there is tested without an edit here */
        DIR *d = opendir("tests/sim");
        struct dirent *e;
        int n = 0;
        char path[512];
        while (d && (e = readdir(d)))
            if (strstr(e->d_name, ".ptx")) {
                snprintf(path, sizeof path, "tests/sim/%s", e->d_name);
                one(dev, path, gpu), n++;
            }
        if (d) closedir(d);
        check(n >= 10, "sim planted-bug files found", "only %d files in tests/sim", n);
    }
    dev_close(dev);
    return check_summary();
}
