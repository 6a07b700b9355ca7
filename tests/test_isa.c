/* The instruction decoder (emit/isa.c): every op the emitter can write
 * decodes, foreign mnemonics from NVIDIA's compiler decode to the fields the
 * sim executes, unknown instructions and modifiers are refused by name, and
 * the target needs follow the PTX ISA's requirement tables. */
#include <string.h>
#include "check.h"
#include "emit.h"
#include "isa.h"

static int dec(const char *mn, IsaInsn *d, char *err, size_t n) { return isa_decode(mn, d, err, n); }

static void every_emitter_op_decodes(void)
{
    char err[256];
    int bad = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        IsaInsn d;
        if (dec(op_text((Op)op), &d, err, sizeof err)) {
            if (!bad) check(0, "isa: emitter op decodes", "%s: %s", op_text((Op)op), err);
            bad = 1;
        }
    }
    if (!bad) check(1, "isa: every ops.def op decodes", "%d ops", OP_COUNT);
}

static void foreign_forms(void)
{
    char err[256];
    IsaInsn d;
    int rc = dec("cp.async.bulk.tensor.2d.cta_group::2.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint",
                 &d, err, sizeof err);
    check(!rc && d.op == I_BULK_TENSOR && d.unit == U_TMA && d.dim == 2 && d.cta_group == 2 && d.nspace == 2 &&
              d.space[0] == SP_SHARED_CLUSTER && d.space[1] == SP_GLOBAL && (d.flags & F_COMPLETE_TX) &&
              (d.flags & F_MULTICAST) && (d.flags & F_CACHE_HINT),
          "isa: 2-SM multicast TMA load", "rc %d %s op %d dim %d group %d", rc, err, d.op, d.dim, d.cta_group);
    rc = dec("tcgen05.ld.sync.aligned.16x256b.x1.b32", &d, err, sizeof err);
    check(!rc && d.op == I_TC_LD && d.unit == U_TMEM && d.tmshape == TS_16X256B && d.num == 1 && d.type[0] == T_B32,
          "isa: tcgen05.ld shape and count", "rc %d %s", rc, err);
    rc = dec("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64", &d, err, sizeof err);
    check(!rc && d.op == I_TC_COMMIT && d.cta_group == 1 && (d.flags & F_ARRIVE_ONE) && (d.flags & F_MULTICAST),
          "isa: tcgen05.commit multicast", "rc %d %s", rc, err);
    rc = dec("wgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16", &d, err, sizeof err);
    check(!rc && d.op == I_WGMMA_MMA && d.m == 64 && d.n == 64 && d.k == 16 && d.ntype == 3, "isa: wgmma shape and types",
          "rc %d %s", rc, err);
    rc = dec("mul.wide.u32", &d, err, sizeof err);
    check(!rc && d.op == I_MUL && (d.flags & F_WIDE) && d.type[0] == T_U32 && d.cls == CL_INT, "isa: mul.wide.u32", "%s", err);
    rc = dec("mul.hi.s32", &d, err, sizeof err);
    check(!rc && (d.flags & F_HI) && d.cmp == CMP_NONE, "isa: .hi of mul is a half, not a comparison", "%s", err);
    rc = dec("setp.hi.u32", &d, err, sizeof err);
    check(!rc && d.cmp == CMP_HI && !(d.flags & F_HI), "isa: .hi of setp is a comparison", "%s", err);
    rc = dec("ld.shared.v4.f32", &d, err, sizeof err);
    check(!rc && d.vec == 4 && d.space[0] == SP_SHARED && d.cls == CL_SHARED, "isa: ld.shared.v4.f32 class", "%s", err);
    rc = dec("add.f32", &d, err, sizeof err);
    check(!rc && d.cls == CL_FP32, "isa: add.f32 counts as fp32", "%s", err);
    rc = dec("min.NaN.f32", &d, err, sizeof err);
    check(!rc && (d.flags & F_NAN) && d.cmp == CMP_NONE, "isa: .NaN of min is a flag, not the comparison .nan", "%s", err);
    rc = dec("cvt.rn.satfinite.relu.e4m3x2.f32", &d, err, sizeof err);
    check(!rc && (d.flags & F_RELU) && (d.flags & F_SATFINITE) && d.type[0] == T_E4M3X2, "isa: cvt .relu", "%s", err);
}

static void refusals(void)
{
    char err[256];
    IsaInsn d;
    check(dec("vabsdiff4.u32", &d, err, sizeof err) && strstr(err, "instruction vabsdiff4.u32 is not supported"), "isa: unknown instruction named",
          "%s", err);
    check(dec("add.s32.bogus", &d, err, sizeof err) && strstr(err, "modifier .bogus of add.s32.bogus"),
          "isa: unknown modifier named", "%s", err);
    check(dec("add..s32", &d, err, sizeof err) != 0, "isa: empty modifier refused", "%s", err);
}

/* The modifiers an instruction takes, as ptxas 13.0 takes them (isa.def's need and allow columns): one it does not
 * take, one it needs and lacks, and two of a kind are refused by name; the forms beside them decode. */
static void modifier_rules(void)
{
    static const struct { const char *mn, *want; } k[] = {
        {"ld.global.rn.u32", "ld.global.rn.u32: ld takes no .rn"},
        {"ld.global.u32.wait", "ld takes no .wait"},
        {"shfl.sync.b32", "shfl.sync.b32: shfl needs one of .bfly, .idx, .up or .down"},
        {"shfl.sync.bfly.up.b32", ".up cannot be combined with .bfly"},
        {"shfl.sync.bfly.f32", "shfl takes no .f32"},
        {"setmaxnreg.inc.aligned.u32", "setmaxnreg needs .sync"},
        {"tcgen05.alloc.sync.aligned.shared::cta.b32", "tcgen05.alloc needs a .cta_group"},
        {"tcgen05.alloc.cta_group::1.sync.aligned.shared::cluster.b32", "tcgen05.alloc takes no .shared::cluster"},
        {"mbarrier.expect_tx.release.cta.shared::cta.b64", "mbarrier.expect_tx takes no .release"},
        {"prefetch.global", "prefetch needs a cache level"},
        {"fence.mbarrier_init.release", "fence.mbarrier_init needs .cluster"},
        {"ld.global.shared.u32", "ld takes one state space"},
        {"ld.global.nc.L1::no_allocate.v4.u32", NULL},
        {"createpolicy.fractional.L2::evict_last.L2::evict_unchanged.b64", NULL},   /* primary, secondary priority */
        {"prefetch.global.L2::evict_last", NULL},
        {"mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64", NULL},
        {"setp.lt.and.f32", NULL},
        /* st.async as ptxas 13.0 takes it: the completion named, 32- and 64-bit types, vectors of 128 bits at most */
        {"st.async.shared::cluster.b32", "st.async needs .mbarrier::complete_tx::bytes"},
        {"st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b64", "st.async takes .v2, or .v4 of 32-bit types"},
        {"st.async.shared::cluster.mbarrier::complete_tx::bytes.b16", "st.async takes no .b16"},
        {"st.async.mbarrier::complete_tx::bytes.b32", "st.async needs a state space"},
        {"st.async.shared::cluster.mbarrier::complete_tx::bytes.bulk_group.b32", "st.async takes no .bulk_group"},
        {"st.async.weak.shared::cluster.mbarrier::complete_tx::bytes.v2.f64", NULL},
        {"st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32", NULL},
        {"st.async.shared::cluster.mbarrier::complete_tx::bytes.s64", NULL}};
    char err[256], what[160];
    IsaInsn d;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        err[0] = 0;
        int rc = dec(k[i].mn, &d, err, sizeof err);
        snprintf(what, sizeof what, "isa: %s %s", k[i].mn, k[i].want ? "refused" : "decodes");
        check(k[i].want ? rc && strstr(err, k[i].want) : !rc, what, "%s", rc ? err : "decoded");
    }
}

static void needs(void)
{
    char err[256];
    IsaInsn d;
    int sm, a, ptx;
    dec("red.global.add.v2.f32", &d, err, sizeof err);
    isa_needs(&d, &sm, &a, &ptx);
    check(sm == 90 && !a && ptx == 81, "isa: vector red needs sm_90 and PTX 8.1", "sm %d a %d ptx %d", sm, a, ptx);
    dec("red.global.add.f32", &d, err, sizeof err);
    isa_needs(&d, &sm, &a, &ptx);
    check(sm < 90, "isa: scalar red runs everywhere", "sm %d", sm);
    dec("tcgen05.mma.cta_group::1.kind::f16", &d, err, sizeof err);
    isa_needs(&d, &sm, &a, &ptx);
    check(sm == 100 && a && ptx == 86, "isa: tcgen05 needs sm_100a and PTX 8.6", "sm %d a %d ptx %d", sm, a, ptx);
    dec("wgmma.fence.sync.aligned", &d, err, sizeof err);
    isa_needs(&d, &sm, &a, &ptx);
    check(sm == 90 && a && ptx == 80, "isa: wgmma needs sm_90a", "sm %d a %d ptx %d", sm, a, ptx);
    dec("cvt.rn.satfinite.e4m3x2.f32", &d, err, sizeof err);
    isa_needs(&d, &sm, &a, &ptx);
    check(sm == 89 && !a && ptx == 78, "isa: an fp8 cvt needs sm_89 and PTX 7.8", "sm %d a %d ptx %d", sm, a, ptx);
    dec("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32", &d, err, sizeof err);
    isa_needs(&d, &sm, &a, &ptx);
    check(sm == 90 && !a && ptx == 81, "isa: st.async needs sm_90 and PTX 8.1", "sm %d a %d ptx %d", sm, a, ptx);
    dec("cvt.rn.f32.f16", &d, err, sizeof err);
    isa_needs(&d, &sm, &a, &ptx);
    check(sm < 89, "isa: other cvts run everywhere", "sm %d", sm);
}

int main(void)
{
    every_emitter_op_decodes();
    foreign_forms();
    refusals();
    modifier_rules();
    needs();
    return check_summary();
}
