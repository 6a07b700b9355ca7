/* Unit tests of the pieces under the generators, with the expected text written
 * out here: the PTX emitter (emit/), launch expressions (core/expr.h), tile
 * strings (core/tilecfg.h) and the resource plan (core/plan.h), plus the public
 * API's launch dimensions. One line per check, then "N passed, N failed". */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "emit.h"
#include "expr.h"
#include "tilecfg.h"
#include "plan.h"
#include "arch.h"
#include "ptxgen.h"
#include "target.h"


/* s with tabs and newlines made visible, for failure messages */
static const char *show(const char *s)
{
    static char out[4][512];
    static int slot;
    char *o = out[slot++ % 4];
    size_t n = 0;
    if (!s) return "(null)";
    for (; *s && n + 3 < sizeof out[0]; s++) {
        if (*s == '\t') o[n++] = '\\', o[n++] = 't';
        else if (*s == '\n') o[n++] = '\\', o[n++] = 'n';
        else o[n++] = *s;
    }
    o[n] = 0;
    return o;
}

static void check_str(const char *name, const char *got, const char *want)
{
    check(got && !strcmp(got, want), name, "got \"%s\", want \"%s\"", show(got), show(want));
}

static void check_int(const char *name, long long got, long long want)
{
    check(got == want, name, "got %lld, want %lld", got, want);
}

static void check_has(const char *name, const char *text, const char *needle)
{
    check(text && strstr(text, needle), name, "\"%s\" does not contain \"%s\"", show(text), needle);
}

/* ---- emit/ ---- */

/* Compares everything emitted since the last call with want, then clears the
 * body (register and label counters carry on). */
static void body_is(Emit *e, const char *name, const char *want)
{
    check_str(name, e->body.s ? e->body.s : "", want);
    buf_free(&e->body);
}

static void test_registers(void)
{
    Emit e = {0};
    Reg r0 = e_reg(&e, RC_B32), r1 = e_reg(&e, RC_B32), r2 = e_reg(&e, RC_B32);
    Reg f0 = e_reg(&e, RC_F32), p0 = e_reg(&e, RC_PRED);
    check(r0.cls == RC_B32 && r0.id == 0 && r1.id == 1 && r2.id == 2, "e_reg numbers each class from 0",
          "got ids %u %u %u", r0.id, r1.id, r2.id);
    check(f0.id == 0 && f0.cls == RC_F32 && p0.id == 0 && p0.cls == RC_PRED, "e_reg classes count separately",
          "f32 id %u, pred id %u", f0.id, p0.id);

    Buf d = {0};
    Emit only_b32 = {0};
    for (int i = 0; i < 3; i++) e_reg(&only_b32, RC_B32);
    e_decls(&only_b32, &d);
    check_str("e_decls three b32", d.s, "\t.reg .b32 %r<3>;\n");
    buf_free(&d);

    for (int i = 0; i < 3; i++) e_reg(&e, RC_F32);
    e_reg(&e, RC_B64);
    e_decls(&e, &d);
    check_str("e_decls every class in order", d.s,
              "\t.reg .pred %p<1>;\n\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<1>;\n\t.reg .f32 %f<4>;\n");
    buf_free(&d);

    Emit none = {0};
    e_decls(&none, &d);
    check(d.len == 0, "e_decls with no registers is empty", "got \"%s\"", show(d.s));
    buf_free(&d);
    e_free(&e);
}

static void test_instructions(void)
{
    Emit e = {0};
    Reg r0 = e_reg(&e, RC_B32), r1 = e_reg(&e, RC_B32), r2 = e_reg(&e, RC_B32);
    Reg rd0 = e_reg(&e, RC_B64);
    Reg f[4];
    for (int i = 0; i < 4; i++) f[i] = e_reg(&e, RC_F32);

    INS(&e, ADD_U32, R(r0), R(r1), I(4));
    body_is(&e, "add.u32 reg, reg, imm", "\tadd.u32 %r0, %r1, 4;\n");
    INS(&e, SUB_S32, R(r2), I(-7), R(r0));
    body_is(&e, "negative immediate", "\tsub.s32 %r2, -7, %r0;\n");
    INS(&e, AND_B32, R(r0), R(r1), IX(0xff));
    body_is(&e, "hex immediate", "\tand.b32 %r0, %r1, 0xff;\n");
    INS(&e, MOV_B32, R(r0), SR("%tid.x"));
    body_is(&e, "special register", "\tmov.b32 %r0, %tid.x;\n");
    INS(&e, MOV_U32_SYM, R(r0), SYM("ptxgen_smem"));
    body_is(&e, "symbol operand", "\tmov.u32 %r0, ptxgen_smem;\n");
    INS(&e, MUL_WIDE_U32, R(rd0), R(r1), I(2));
    body_is(&e, "b64 destination", "\tmul.wide.u32 %rd0, %r1, 2;\n");

    INS(&e, MOV_F32, R(f[0]), FI(1.0f));
    body_is(&e, "float 1.0 as exact hex", "\tmov.f32 %f0, 0f3F800000;\n");
    INS(&e, MOV_F32, R(f[0]), FI(-INFINITY));
    body_is(&e, "float -inf as exact hex", "\tmov.f32 %f0, 0fFF800000;\n");
    INS(&e, MOV_F32, R(f[0]), FI(INFINITY));
    body_is(&e, "float +inf as exact hex", "\tmov.f32 %f0, 0f7F800000;\n");
    INS(&e, MOV_F32, R(f[0]), FI(0.1f));
    body_is(&e, "float 0.1 keeps every bit", "\tmov.f32 %f0, 0f3DCCCCCD;\n");
    INS(&e, MOV_F32, R(f[0]), FI(-0.0f));
    body_is(&e, "float -0.0 keeps its sign", "\tmov.f32 %f0, 0f80000000;\n");
    INS(&e, FMA_F32, R(f[1]), R(f[2]), FI(1.4426950408889634f), R(f[3]));
    body_is(&e, "float log2(e) in fma", "\tfma.rn.f32 %f1, %f2, 0f3FB8AA3B, %f3;\n");

    INS(&e, ST_SHARED_B32, A(r2, 16), R(r0));
    body_is(&e, "address [reg+16]", "\tst.shared.b32 [%r2+16], %r0;\n");
    INS(&e, ST_SHARED_B32, A(r2, -8), R(r0));
    body_is(&e, "address [reg-8]", "\tst.shared.b32 [%r2-8], %r0;\n");
    INS(&e, ST_SHARED_B32, A(r2, 0), I(0));
    body_is(&e, "address [reg] without offset", "\tst.shared.b32 [%r2], 0;\n");
    INS(&e, LD_PARAM_U64, R(rd0), AS("q"));
    body_is(&e, "address [sym]", "\tld.param.u64 %rd0, [q];\n");

    INS(&e, LD_SHARED_V4_B32, V4(f[0], f[1], f[2], f[3]), A(r2, 32));
    body_is(&e, "vector of four", "\tld.shared.v4.b32 {%f0, %f1, %f2, %f3}, [%r2+32];\n");
    INS(&e, LDSM_X2_T, V2(r0, r1), A(r2, 0));
    body_is(&e, "vector of two", "\tldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r0, %r1}, [%r2];\n");

    INS0(&e, RET);
    body_is(&e, "no operands", "\tret;\n");
    INS(&e, CP_ASYNC_WAIT, I(1));
    body_is(&e, "immediate-only operand", "\tcp.async.wait_group 1;\n");
    check_int("ninstr counts instructions", e.ninstr, 20);
    check_str("op_text", op_text(OP_ADD_U32), "add.u32");
    e_free(&e);
}

static void test_labels_and_guards(void)
{
    Emit e = {0};
    Reg r0 = e_reg(&e, RC_B32), p0 = e_reg(&e, RC_PRED);
    int l0 = e_label(&e), l1 = e_label(&e);
    check(l0 == 0 && l1 == 1, "labels are numbered from 0", "got %d, %d", l0, l1);
    INSP(&e, p0, 0, BRA_UNI, L(l0));
    body_is(&e, "guarded branch", "\t@%p0 bra.uni $L0;\n");
    INSP(&e, p0, 1, MOV_B32, R(r0), I(0));
    body_is(&e, "negated guard", "\t@!%p0 mov.b32 %r0, 0;\n");
    INSP(&e, p0, 1, BRA, L(l1));
    body_is(&e, "negated guarded branch", "\t@!%p0 bra $L1;\n");
    e_place(&e, l0);
    body_is(&e, "label placement", "$L0:\n");
    e_comment(&e, "tile %d of %s", 3, "K");
    body_is(&e, "comment", "\t// tile 3 of K\n");
    e_free(&e);
}

/* Runs f in a child; true if the child died of SIGABRT (a generator bug caught). */
static int aborts(void (*f)(void))
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stderr)) _exit(3);
        f();
        _exit(0);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) return 0;
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
}

static void wrong_class(void)
{
    Emit e = {0};
    Reg f0 = e_reg(&e, RC_F32), r0 = e_reg(&e, RC_B32);
    INS(&e, ADD_U32, R(f0), R(r0), I(1));   /* f32 destination for add.u32 */
}

static void wrong_count(void)
{
    Emit e = {0};
    Reg r0 = e_reg(&e, RC_B32);
    INS(&e, ADD_U32, R(r0), R(r0));
}

static void float_for_int(void)
{
    Emit e = {0};
    Reg r0 = e_reg(&e, RC_B32);
    INS(&e, ADD_U32, R(r0), R(r0), FI(1.0f));
}

static void test_signature_checks(void)
{
    check(aborts(wrong_class), "operand of the wrong class aborts", "the emitter accepted it");
    check(aborts(wrong_count), "wrong operand count aborts", "the emitter accepted it");
    check(aborts(float_for_int), "float immediate for an integer operand aborts", "the emitter accepted it");
}

/* ---- core/expr.h ---- */

static const ExprVar vars[] = {{"s_q", 1000}, {"s_k", 77}, {"h_q", 8}, {"b", 2}};
#define NVARS (int)(sizeof vars / sizeof vars[0])

static void expr_is(const char *text, long long want)
{
    char name[128], err[256] = "";
    long long v = -1;
    snprintf(name, sizeof name, "expr %s = %lld", text, want);
    int rc = expr_eval(text, vars, NVARS, &v, err, sizeof err);
    check(rc == 0 && v == want, name, "rc %d, value %lld, err '%s'", rc, v, err);
}

/* The text must be refused with an error containing every given phrase. */
static void expr_fails(const char *text, const char *phrase1, const char *phrase2)
{
    char name[128], err[256] = "";
    long long v;
    snprintf(name, sizeof name, "expr '%s' is an error mentioning '%s'", text, phrase2 ? phrase2 : phrase1);
    int rc = expr_eval(text, vars, NVARS, &v, err, sizeof err);
    int ok = rc != 0 && strstr(err, phrase1) && (!phrase2 || strstr(err, phrase2));
    check(ok, name, "rc %d, err '%s'", rc, err);
}

static void test_expr(void)
{
    expr_is("cdiv(1000,128)", 8);
    expr_is("cdiv(1024, 128)", 8);
    expr_is("cdiv(1, 128)", 1);
    expr_is("cdiv(s_q, 128)", 8);
    expr_is("min(3, 5)", 3);
    expr_is("max(3, 5)", 5);
    expr_is("min(s_k, 64) + max(h_q, b)", 64 + 8);
    expr_is("2+3*4", 14);
    expr_is("(2+3)*4", 20);
    expr_is("10 - 2 - 3", 5);
    expr_is("7 / 2", 3);
    expr_is("h_q * b", 16);
    expr_is("  s_q  ", 1000);
    expr_fails("foo + 1", "unknown", "foo");
    expr_fails("cdiv(s_q, bogus_size)", "unknown", "bogus_size");
    expr_fails("1/0", "division by zero", NULL);
    expr_fails("cdiv(5, 0)", "division by zero", NULL);
    expr_fails("s_q / (b - b)", "division by zero", NULL);
    expr_fails("2 +", "expected", NULL);
    expr_fails("(2", "expected ')'", NULL);
    expr_fails("2 3", "unexpected", NULL);
    expr_fails("", "expected", NULL);
}

/* ---- core/tilecfg.h ---- */

typedef struct { int bm, bn, warps; } Tile;
static const TileKey keys[] = {
    {"bm", offsetof(Tile, bm), {64, 128}, 2, "rows"},
    {"bn", offsetof(Tile, bn), {32, 64, 128}, 3, "cols"},
    {"warps", offsetof(Tile, warps), {4, 8}, 2, "warps"},
};
#define NKEYS 3

static int tile_try(const char *spec, Tile *t, char *err, size_t errlen)
{
    *t = (Tile){128, 64, 4};
    err[0] = 0;
    return tile_parse(keys, NKEYS, spec, t, err, errlen);
}

static void tile_fails(const char *name, const char *spec, const char *phrase1, const char *phrase2)
{
    Tile t;
    char err[256];
    int rc = tile_try(spec, &t, err, sizeof err);
    check(rc != 0 && strstr(err, phrase1) && (!phrase2 || strstr(err, phrase2)), name, "rc %d, err '%s'", rc, err);
}

static void test_tilecfg(void)
{
    Tile t;
    char err[256];
    int rc = tile_try("bm=64,bn=32", &t, err, sizeof err);
    check(rc == 0 && t.bm == 64 && t.bn == 32 && t.warps == 4, "tile bm=64,bn=32 parses, warps kept",
          "rc %d err '%s' -> bm=%d bn=%d warps=%d", rc, err, t.bm, t.bn, t.warps);
    rc = tile_try("warps=8", &t, err, sizeof err);
    check(rc == 0 && t.warps == 8 && t.bm == 128, "tile single key", "rc %d err '%s'", rc, err);
    rc = tile_try(NULL, &t, err, sizeof err);
    check(rc == 0 && t.bm == 128 && t.bn == 64, "tile NULL keeps defaults", "rc %d err '%s'", rc, err);
    rc = tile_try("", &t, err, sizeof err);
    check(rc == 0 && t.bm == 128, "tile empty keeps defaults", "rc %d err '%s'", rc, err);

    tile_fails("tile unknown key names it and lists the keys", "bx=64", "'bx'", "bm, bn, warps");
    tile_fails("tile bad value lists the allowed values", "bm=48", "48", "64|128");
    tile_fails("tile non-integer value lists the allowed values", "bn=abc", "abc", "32|64|128");
    tile_fails("tile trailing junk in value", "bn=64x", "64x", NULL);
    tile_fails("tile 'bm' without '=' is an error", "bm", "key=value", NULL);
    tile_fails("tile '=64' is an error", "=64", "key=value", NULL);
    tile_fails("tile 'bm=' is an error", "bm=", "key=value", NULL);
    tile_fails("tile key given twice is an error, not the last value", "bm=128,bn=32,bm=64", "'bm' is given twice", NULL);
    tile_fails("tile with an empty setting (',,') is an error", "bm=64,,bn=32", "empty setting", NULL);
    tile_fails("tile with a trailing ',' is an error", "bm=64,", "empty setting", NULL);
    char longspec[700];
    memset(longspec, 'a', sizeof longspec - 1);
    longspec[sizeof longspec - 1] = 0;
    tile_fails("tile overlong string", longspec, "too long", NULL);

    Buf b = {0};
    t = (Tile){64, 32, 4};
    tile_describe(keys, NKEYS, &t, &b);
    check_str("tile_describe", b.s, "bm=64,bn=32,warps=4");
    buf_free(&b);
    tile_list(keys, NKEYS, &b);
    check_has("tile_list shows allowed values", b.s, "32|64|128");
    buf_free(&b);
}

/* ---- core/plan.h ---- */

static void test_plan_regions(void)
{
    Plan p = {0};
    int a = plan_add_region(&p, "A", 100, 128, "first");
    int b = plan_add_region(&p, "B", 64, 128, NULL);
    int c = plan_add_region(&p, "C", 10, 256, NULL);
    check(a == 0 && b == 128 && c == 256, "plan_add_region aligns offsets", "offsets %d %d %d, want 0 128 256", a, b, c);
    check_int("plan_add_region total", p.smem_bytes, 266);
    check(p.nregions == 3 && !strcmp(p.region[1].name, "B") && p.region[1].offset == 128 && p.region[1].bytes == 64,
          "plan_add_region records the region", "nregions %d, region[1] %s@%d+%d", p.nregions, p.region[1].name,
          p.region[1].offset, p.region[1].bytes);
    int d = plan_add_region(&p, "D", 4, 4, NULL);
    check_int("plan_add_region already aligned", d, 268);

    plan_union_region(&p, "U", 0, 50, "reuses A");
    check(p.nregions == 5 && p.region[4].offset == 0 && p.region[4].bytes == 50 && p.smem_bytes == 272,
          "plan_union_region inside the total", "region %d@%d+%d, total %d", p.nregions, p.region[4].offset,
          p.region[4].bytes, p.smem_bytes);
    plan_union_region(&p, "W", 1, 500, NULL);
    check(p.region[5].offset == 128 && p.smem_bytes == 628, "plan_union_region grows the total",
          "offset %d, total %d, want 128 and 628", p.region[5].offset, p.smem_bytes);
}

static Plan plan_of(int smem, int regs, int threads)
{
    Plan p = {.threads = threads, .regs_est = regs};
    plan_add_region(&p, "X", smem, 128, NULL);
    return p;
}

static void test_plan_finish(void)
{
    const ArchInfo *sm86 = arch_find("sm_86"), *sm90 = arch_find("sm_90");
    if (!sm86 || !sm90) { check(0, "arch_find sm_86 and sm_90", "not in the arch table"); return; }
    check_int("sm_86 smem opt-in", sm86->smem_block_optin, 101376);

    Plan p = plan_of(101377, 100, 128);
    plan_finish(&p, sm86, "test kernel");
    check(!p.ok && strstr(p.verdict, "101377") && strstr(p.verdict, "101376"),
          "plan refuses smem over opt-in, naming both numbers", "ok %d, verdict '%s'", p.ok, p.verdict);
    check_has("smem verdict names the arch", p.verdict, "sm_86");
    p = plan_of(101376, 100, 128);
    plan_finish(&p, sm86, "test kernel");
    check(p.ok, "plan accepts smem exactly at opt-in", "verdict '%s'", p.verdict);

    p = plan_of(1024, 256, 128);
    plan_finish(&p, sm90, "test kernel");
    check(!p.ok && strstr(p.verdict, "256") && strstr(p.verdict, "255") && strstr(p.verdict, "register"),
          "plan refuses regs_est > 255", "ok %d, verdict '%s'", p.ok, p.verdict);
    p = plan_of(1024, 255, 128);
    plan_finish(&p, sm90, "test kernel");
    check(p.ok, "plan accepts regs_est = 255", "verdict '%s'", p.verdict);

    /* 208 regs x 128 threads: 26624 registers per CTA, 2 fit in 65536 */
    p = plan_of(49152, 208, 128);
    plan_finish(&p, sm90, "test kernel");
    check(p.ok && p.ctas_per_sm == 2 && !strcmp(p.occ_limiter, "registers"), "occupancy limited by registers",
          "ok %d, %d CTAs, limiter %s", p.ok, p.ctas_per_sm, p.occ_limiter);
    check(!strncmp(p.verdict, "fits", 4), "fitting verdict starts with fits", "verdict '%s'", p.verdict);
    p = plan_of(100000, 32, 128);
    plan_finish(&p, sm90, "test kernel");
    check(p.ok && p.ctas_per_sm == 2 && !strcmp(p.occ_limiter, "shared memory"), "occupancy limited by shared memory",
          "ok %d, %d CTAs, limiter %s", p.ok, p.ctas_per_sm, p.occ_limiter);

    Buf b = {0};
    p = plan_of(101377, 100, 128);
    plan_finish(&p, sm86, "test kernel");
    plan_print(&p, sm86, &b);
    check(b.s && strstr(b.s, "verdict:") && strstr(b.s, "REFUSED") && strstr(b.s, "101377"),
          "plan_print shows the refusal", "got \"%s\"", show(b.s));
    buf_free(&b);
}

/* ---- the public API: plans of the real kernel and launch dimensions ---- */

static void test_api(void)
{
    char err[512] = "";
    int fits = 1;
    ptxgen_request rq = {.arch = "sm_86", .kernel = "attn_fwd", .hdim = 256, .tile = "bm=128,bn=64,warps=8"};
    char *text = ptxgen_plan_request(&rq, &fits, err, sizeof err);
    check(text && !fits && strstr(err, "131072") && strstr(err, "101376"), "api plan d=256 on sm_86 refused",
          "fits %d, err '%s'", fits, err);
    free(text);

    ptxgen_set *s = NULL;
    rq = (ptxgen_request){.arch = "sm_90", .kernel = "attn_fwd"};
    int rc = ptxgen_build(&rq, &s, err, sizeof err);
    check(rc == 0 && s, "api build sm_90 default", "rc %d, err '%s'", rc, err);
    if (!s) return;
    check_has("api module targets sm_90", ptxgen_ptx(s), ".target sm_90");
    check_has("api module defines the entry", ptxgen_ptx(s), ptxgen_entry(s, 0));
    ptxgen_size sizes[] = {{"b", 2}, {"s_q", 1000}, {"s_k", 1000}, {"h_q", 8}, {"h_kv", 2}};
    unsigned grid[3] = {0}, block[3] = {0}, smem = 0;
    rc = ptxgen_launch_dims(s, 0, sizes, 5, grid, block, &smem, err, sizeof err);
    check(rc == 0 && grid[0] == 8 && grid[1] == 8 && grid[2] == 2 && block[0] == 128 && block[1] == 1 && smem > 0,
          "api launch dims s_q=1000 h_q=8 b=2", "rc %d grid %u,%u,%u block %u smem %u err '%s'", rc, grid[0], grid[1],
          grid[2], block[0], smem, err);
    rc = ptxgen_launch_dims(s, 0, sizes, 2, grid, block, &smem, err, sizeof err);
    check(rc != 0 && strstr(err, "h_q"), "api launch dims with a size missing names it", "rc %d err '%s'", rc, err);
    ptxgen_free(s);

    /* a grid of 2^32 CTAs or more is refused (the kernels' linear CTA index is 32-bit); one less is not */
    rq = (ptxgen_request){.arch = "sm_90a", .kernel = "attn_bwd", .family = "wgmma"};
    s = NULL;
    rc = ptxgen_build(&rq, &s, err, sizeof err);
    check(rc == 0 && s, "api build sm_90a attn_bwd wgmma", "rc %d, err '%s'", rc, err);
    if (!s) return;
    int main_k = 1;   /* pre, main, ...: the main kernel's grid is (key blocks, h_kv, b) */
    ptxgen_size big[] = {{"b", 65535}, {"s_q", 128}, {"s_k", 128LL * 4097}, {"h_q", 16}, {"h_kv", 16}};
    rc = ptxgen_launch_dims(s, main_k, big, 5, grid, block, &smem, err, sizeof err);
    check(rc != 0 && strstr(err, "32 bits") && strstr(err, "4295950320"), "api launch dims refuses 2^32 CTAs",
          "rc %d grid %u,%u,%u err '%s'", rc, grid[0], grid[1], grid[2], err);
    big[2].value = 128LL * 4096;
    rc = ptxgen_launch_dims(s, main_k, big, 5, grid, block, &smem, err, sizeof err);
    check(rc == 0 && grid[0] == 4096 && grid[1] == 16 && grid[2] == 65535, "api launch dims takes 2^32 - 1 CTAs or fewer",
          "rc %d grid %u,%u,%u err '%s'", rc, grid[0], grid[1], grid[2], err);
    ptxgen_free(s);
}

/* The target check: each op against each arch, and the derived .version. */
static void test_target(void)
{
    static const struct { const char *arch, *body, *version, *err; } cases[] = {
        {"sm_80", "\tadd.u32 %r1, %r2, 1;\n$L1:\n\t@%p1 bra $L1;\n// mma.sync\n", "7.0", NULL},
        {"sm_90", "\tred.global.add.v2.f32 [%rd1], {%f1, %f2};\n", "8.1", NULL},
        {"sm_80", "\tred.global.add.v2.f32 [%rd1], {%f1, %f2};\n", NULL, "needs sm_90"},
        {"sm_90a", "\twgmma.fence.sync.aligned;\n", "8.0", NULL},
        {"sm_90", "\twgmma.fence.sync.aligned;\n", NULL, "arch-specific"},
        {"sm_100a", "\twgmma.fence.sync.aligned;\n", NULL, "same arch generation"},
        {"sm_103a", "\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;\n", "8.8", NULL},
        {"sm_100a", "\t@!%p2 tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r1];\n", "8.6", NULL},
        {"sm_90a", "\ttcgen05.fence::after_thread_sync;\n", NULL, "needs sm_100a"},
        {"sm_90a", "\tcp.async.bulk.tensor.2d.cta_group::2.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];\n", NULL, "needs sm_100a"},
        {"sm_90a", "\tfrobnicate.b32 %r1;\n", NULL, "does not know"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char v[16] = "", err[256] = "";
        int rc = emit_target_check(cases[i].body, arch_find(cases[i].arch), v, err, sizeof err);
        if (cases[i].version)
            check(rc == 0 && !strcmp(v, cases[i].version), "target: version derived", "%s: rc %d, version %s, want %s (%s)",
                  cases[i].arch, rc, v, cases[i].version, err);
        else
            check(rc != 0 && strstr(err, cases[i].err), "target: refused", "%s on %s: rc %d, err '%s', want '%s'",
                  cases[i].body, cases[i].arch, rc, err, cases[i].err);
    }
}

int main(void)
{
    test_target();
    test_registers();
    test_instructions();
    test_labels_and_guards();
    test_signature_checks();
    test_expr();
    test_tilecfg();
    test_plan_regions();
    test_plan_finish();
    test_api();
    return check_summary();
}
