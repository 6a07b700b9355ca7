/* tcgen05 / TMEM on the sim (runner/sim/sim_tmem.c, sim_tcgen05.c,
 * sim_umma_math.c) against hand-written expectations and a float64
 * reference. Probe kernels are PTX text written here per case:
 * - shapes: each warp fills its lane quarter with markers (32x32b st), stores
 *   a register pattern with the shape under test, then reads the quarter
 *   back with 32x32b and with the shape itself; every value must sit in the
 *   cell sim_tmem_shape_map names, and sim_tmem_shape_map is pinned to cells
 *   read off the ISA's fragment figures for a few (thread, register) pairs.
 * - mma: 128 threads copy A and B tiles (laid out on the host in the
 *   canonical layout under test, from the ISA's canonical-layout table) into
 *   shared memory, fill D from dinit with tcgen05.st, thread 0 issues two
 *   chained k-steps of tcgen05.mma and a commit, every thread waits on the
 *   mbarrier and reads D back with tcgen05.ld. The host places rows in TMEM
 *   lanes after the ISA's data-path layouts (M=128: lane = row; M=64: lanes
 *   0-15 of each quarter).
 * Then planted bugs, each refused with the message that names it.
 * usage: test_sim_tcgen05 [--seed N] [--ptx] [--dump DIR]
 *   --dump DIR writes every probe (shapes, mma configurations, planted bugs)
 *   as DIR/tNNN.ptx; run_all.sh assembles them with ptxas -arch=sm_100a. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "buf.h"
#include "check.h"
#include "device.h"
#include "dtype.h"
#include "hostdata.h"
#include "probe.h"
#include "sim_desc.h"

enum { THREADS = 128, STEPS = 2, SLOT = 32768, IMG = 2 * STEPS * SLOT };   /* SLOT: shared bytes per operand tile (A, B per step) */
enum { LY_INTER, LY_SW32, LY_SW64, LY_SW128 };
enum { AT_F16, AT_BF16, AT_TF32 };
static const char *ly_name[] = {"none", "SW32", "SW64", "SW128"}, *at_name[] = {"f16", "bf16", "tf32"};

typedef enum {
    BUG_NONE, BUG_LD_EARLY, BUG_SMEM_OVERWRITE, BUG_QUARTER, BUG_UNWRITTEN, BUG_NO_DEALLOC, BUG_REALLOC, BUG_OVERALLOC,
    BUG_ACC_POISON, BUG_COLL_NOFILL, BUG_TMEM_RACE
} Bug;

typedef struct {
    int at, m, n, akm, bkm, aly, bly, acc, d16;
    int ws, coll;   /* tcgen05.mma.ws; coll: step 0 fills collector b1, step 1 uses it (lastuse) instead of its own B */
    uint32_t disable[4];
    Bug bug;
} Cfg;

typedef struct { int mma, alloc, bug; } Lines;

static const char *dump_dir;   /* --dump: where every probe is written */

static int line_no(const Buf *b)
{
    int n = 1;
    for (size_t i = 0; i < b->len; i++) n += b->s[i] == '\n';
    return n;
}

static int eb(const Cfg *c) { return c->at == AT_TF32 ? 4 : 2; }
static int kstep(const Cfg *c) { return 32 / eb(c); }
static int ncols(const Cfg *c) { return c->n <= 32 ? 32 : c->n <= 64 ? 64 : c->n <= 128 ? 128 : 256; }
static int atom(int ly) { return ly == LY_INTER ? 16 : 16 << ly; }

/* ---- canonical layouts, from the ISA's table (byte offset of element (mn, k) in a tile) ---- */
static void lbo_sbo(int ly, int kmajor, int rows, int ebytes, uint32_t *lbo, uint32_t *sbo)
{
    int w = atom(ly);
    if (kmajor) *lbo = ly == LY_INTER ? 128 : 16, *sbo = ly == LY_INTER ? 256 : 8 * (uint32_t)w;
    else if (ly == LY_INTER) *sbo = 128, *lbo = (uint32_t)(rows * ebytes / 16) * 128;
    else *sbo = 8 * (uint32_t)w, *lbo = 16 * (uint32_t)w;
}

static uint32_t elem_off(int ly, int kmajor, int rows, int ebytes, int mn, int k)
{
    uint32_t lbo, sbo, w = (uint32_t)atom(ly), kb = (uint32_t)(k * ebytes), mb = (uint32_t)(mn * ebytes), off;
    lbo_sbo(ly, kmajor, rows, ebytes, &lbo, &sbo);
    if (kmajor && ly == LY_INTER) off = (uint32_t)(mn / 8) * sbo + (uint32_t)(mn % 8) * 16 + kb / 16 * lbo + kb % 16;
    else if (kmajor) off = (uint32_t)(mn / 8) * sbo + (uint32_t)(mn % 8) * w + kb;
    else if (ly == LY_INTER) off = mb / 16 * sbo + mb % 16 + (uint32_t)(k % 8) * 16 + (uint32_t)(k / 8) * lbo;
    else off = mb / w * lbo + mb % w + (uint32_t)(k % 8) * w + (uint32_t)(k / 8) * sbo;
    /* the swizzle XORs address bits 4.. with bits 7..; tiles start on 1024 bytes */
    uint32_t mask = ly == LY_SW128 ? 7 : ly == LY_SW64 ? 3 : ly == LY_SW32 ? 1 : 0;
    return off ^ ((off >> 7 & mask) << 4);
}

/* The descriptor's bits above the start address: LBO, SBO, version 1, layout type. */
static uint64_t desc_hi(int ly, int kmajor, int rows, int ebytes)
{
    static const uint64_t type[] = {0, 6, 4, 2};
    uint32_t lbo, sbo;
    lbo_sbo(ly, kmajor, rows, ebytes, &lbo, &sbo);
    return (uint64_t)(lbo >> 4) << 16 | (uint64_t)(sbo >> 4) << 32 | 1ull << 46 | type[ly] << 61;
}

static uint32_t idesc(const Cfg *c)
{
    uint32_t fmt = c->at == AT_TF32 ? 2 : c->at == AT_BF16 ? 1 : 0;
    return (uint32_t)!c->d16 << 4 | fmt << 7 | fmt << 10 | (uint32_t)!c->akm << 15 | (uint32_t)!c->bkm << 16 |
           (uint32_t)(c->n >> 3) << 17 | (uint32_t)(c->m >> 4) << 24;
}

/* ---- the mma probe ---- */
static void reglist(Buf *b, const char *op, int n, int from)
{
    buf_puts(b, "{");
    for (int j = 0; j < n; j++) buf_printf(b, "%s%%v%d", j ? ", " : "", from + j);
    buf_printf(b, "}%s", op);
}

/* D rows of this thread (lane of its warp's quarter) to/from global memory, CH columns at a time */
static void d_io(Buf *b, const Cfg *c, int store, const char *ptr)
{
    for (int c0 = 0, ch = 32; c0 < c->n; c0 += ch) {
        while (ch > c->n - c0) ch /= 2;   /* .num is a power of two */
        if (store) {
            buf_printf(b, "\ttcgen05.ld.sync.aligned.32x32b.x%d.b32 ", ch);
            reglist(b, ", ", ch, 0);
            buf_printf(b, "[%%r4+%d];\n\ttcgen05.wait::ld.sync.aligned;\n", c0);
        }
        for (int j = 0; j < ch; j++)
            if (store) buf_printf(b, "\tst.global.b32 [%s+%d], %%v%d;\n", ptr, 4 * (c0 + j), j);
            else buf_printf(b, "\tld.global.b32 %%v%d, [%s+%d];\n", j, ptr, 4 * (c0 + j));
        if (!store) {
            buf_printf(b, "\ttcgen05.st.sync.aligned.32x32b.x%d.b32 [%%r4+%d], ", ch, c0);
            reglist(b, ";\n", ch, 0);
        }
    }
}

static char *mma_probe(const Cfg *c, Lines *ln)
{
    Buf b = {0};
    int nc = c->bug == BUG_OVERALLOC ? 512 : ncols(c);
    *ln = (Lines){0};
    buf_printf(&b, "// tcgen05 probe: %s M%d N%d\n.version 8.6\n.target sm_100a\n.address_size 64\n\n", at_name[c->at], c->m, c->n);
    buf_puts(&b, ".shared .align 4 .b32 tslot;\n.shared .align 8 .b64 mbar;\n.extern .shared .align 1024 .b8 smem[];\n\n"
                 ".visible .entry k(.param .u64 img, .param .u64 dinit, .param .u64 out)\n.maxntid 128, 1, 1\n{\n"
                 "\t.reg .pred %p<8>;\n\t.reg .b32 %r<24>;\n\t.reg .b64 %rd<12>;\n\t.reg .b32 %v<32>;\n\n");
    /* the image, 16 bytes a thread at a time */
    buf_printf(&b, "\tmov.u32 %%r0, %%tid.x;\n\tshr.u32 %%r1, %%r0, 5;\n\tmov.u32 %%r9, smem;\n\tld.param.u64 %%rd0, [img];\n"
                   "\tcvta.to.global.u64 %%rd0, %%rd0;\n\tshl.b32 %%r5, %%r0, 4;\n$copy:\n\tsetp.ge.u32 %%p4, %%r5, %d;\n"
                   "\t@%%p4 bra $copied;\n\tcvt.u64.u32 %%rd1, %%r5;\n\tadd.s64 %%rd2, %%rd0, %%rd1;\n"
                   "\tld.global.v4.b32 {%%r10, %%r11, %%r12, %%r13}, [%%rd2];\n\tadd.u32 %%r6, %%r9, %%r5;\n"
                   "\tst.shared.v4.b32 [%%r6], {%%r10, %%r11, %%r12, %%r13};\n\tadd.u32 %%r5, %%r5, %d;\n\tbra $copy;\n"
                   "$copied:\n\tfence.proxy.async.shared::cta;\n",
               IMG, 16 * THREADS);
    buf_puts(&b, "\tsetp.eq.u32 %p0, %r1, 0;\n\tsetp.eq.u32 %p1, %r0, 0;\n\t@!%p0 bra $alloced;\n");
    ln->alloc = line_no(&b);
    buf_printf(&b, "\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [tslot], %d;\n", nc);
    if (c->bug != BUG_OVERALLOC) buf_puts(&b, "\ttcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n");
    if (c->bug == BUG_REALLOC) ln->bug = line_no(&b), buf_puts(&b, "\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [tslot], 32;\n");
    buf_puts(&b, "$alloced:\n");
    if (c->bug == BUG_OVERALLOC) {   /* warp 1 asks for more while warp 0 holds all 512 columns */
        buf_puts(&b, "\tsetp.eq.u32 %p5, %r1, 1;\n\t@!%p5 bra $second;\n");
        ln->bug = line_no(&b);
        buf_puts(&b, "\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [tslot], 32;\n$second:\n");
    }
    buf_puts(&b, "\t@%p1 mbarrier.init.shared::cta.b64 [mbar], 1;\n\tbar.sync 0;\n\tld.shared.b32 %r2, [tslot];\n"
                 "\tshl.b32 %r3, %r1, 21;\n");
    buf_printf(&b, "\tadd.u32 %%r4, %%r2, %s;\n", c->bug == BUG_QUARTER ? "0" : "%r3");
    /* D from dinit: row of this thread = its TMEM lane */
    buf_printf(&b, "\tld.param.u64 %%rd3, [dinit];\n\tcvta.to.global.u64 %%rd3, %%rd3;\n\tmul.wide.u32 %%rd4, %%r0, %d;\n"
                   "\tadd.s64 %%rd5, %%rd3, %%rd4;\n", 4 * c->n);
    if (c->bug != BUG_UNWRITTEN && c->bug != BUG_ACC_POISON && c->bug != BUG_QUARTER) d_io(&b, c, 0, "%rd5");
    buf_puts(&b, "\ttcgen05.wait::st.sync.aligned;\n\ttcgen05.fence::before_thread_sync;\n\tbar.sync 0;\n"
                 "\ttcgen05.fence::after_thread_sync;\n\t@!%p1 bra $issued;\n");
    buf_printf(&b, "\tmov.b32 %%r7, 0x%08x;\n", idesc(c));
    for (int i = 0; i < 4; i++) buf_printf(&b, "\tmov.b32 %%r%d, 0x%08x;\n", 10 + i, c->disable[i]);
    for (int s = 0; s < STEPS; s++) {
        for (int op = 0; op < 2; op++) {
            int ly = op ? c->bly : c->aly, km = op ? c->bkm : c->akm, rows = op ? c->n : c->m;
            buf_printf(&b, "\tadd.u32 %%r5, %%r9, %d;\n\tshr.u32 %%r5, %%r5, 4;\n\tand.b32 %%r5, %%r5, 0x3FFF;\n"
                           "\tcvt.u64.u32 %%rd%d, %%r5;\n\tor.b64 %%rd%d, %%rd%d, 0x%016llx;\n",
                       (2 * s + op) * SLOT, 6 + op, 6 + op, 6 + op, (unsigned long long)desc_hi(ly, km, rows, eb(c)));
        }
        buf_printf(&b, "\tsetp.ne.u32 %%p2, %d, 0;\n", s ? 1 : c->acc);
        if (s == 0) ln->mma = line_no(&b);
        if (c->ws) {
            const char *coll = c->bug == BUG_COLL_NOFILL ? ".collector::b1::use" : !c->coll ? "" : s ? ".collector::b1::lastuse" : ".collector::b1::fill";
            buf_printf(&b, "\ttcgen05.mma.ws.cta_group::1.kind::%s%s [%%r2], %%rd6, %%rd7, %%r7, %%p2;\n", c->at == AT_TF32 ? "tf32" : "f16",
                       coll);
        } else {
            buf_printf(&b, "\ttcgen05.mma.cta_group::1.kind::%s [%%r2], %%rd6, %%rd7, %%r7, {%%r10, %%r11, %%r12, %%r13}, %%p2;\n",
                       c->at == AT_TF32 ? "tf32" : "f16");
        }
    }
    buf_puts(&b, "\ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [mbar];\n");
    if (c->bug == BUG_SMEM_OVERWRITE) ln->bug = line_no(&b), buf_puts(&b, "\tst.shared.b32 [smem+64], %r0;\n");
    buf_puts(&b, "$issued:\n");
    if (c->bug != BUG_LD_EARLY)
        buf_puts(&b, "$wait:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p3, [mbar], 0;\n\t@!%p3 bra $wait;\n"
                     "\ttcgen05.fence::after_thread_sync;\n");
    else
        ln->bug = line_no(&b);
    buf_printf(&b, "\tld.param.u64 %%rd8, [out];\n\tcvta.to.global.u64 %%rd8, %%rd8;\n\tadd.s64 %%rd9, %%rd8, %%rd4;\n");
    if (c->bug == BUG_UNWRITTEN || c->bug == BUG_QUARTER) ln->bug = line_no(&b);
    d_io(&b, c, 1, "%rd9");
    if (c->bug == BUG_TMEM_RACE) {   /* thread 0 reuses D while other warps may still read it: no bar.sync */
        ln->bug = line_no(&b);
        buf_puts(&b, "\t@%p1 tcgen05.mma.cta_group::1.kind::f16 [%r2], %rd6, %rd7, %r7, {%r10, %r11, %r12, %r13}, %p2;\n");
    }
    buf_puts(&b, "\ttcgen05.fence::before_thread_sync;\n\tbar.sync 0;\n");
    if (c->bug != BUG_NO_DEALLOC) buf_printf(&b, "\t@%%p0 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %%r2, %d;\n", nc);
    buf_puts(&b, "\tret;\n}\n");
    return buf_take(&b);
}

/* ---- data and reference ---- */
typedef struct { uint8_t *img; float *dinit, *out; double *ref; } Data;

static uint32_t draw(Rng *r, int at, double *val)
{
    float x = (float)(rng_uniform(r) * 2 - 1);
    if (at == AT_F16) return *val = fp16_to_f32(f32_to_fp16(x)), f32_to_fp16(x);
    if (at == AT_BF16) return *val = bf16_to_f32(f32_to_bf16(x)), f32_to_bf16(x);
    uint32_t bits = f32_bits(x) & ~0x1FFFu;   /* exactly tf32 */
    return *val = bits_f32(bits), bits;
}

/* TMEM lane and column of D row r, column j: the data path layouts as CUTLASS's TMEM traits state
 * them (mma_traits_sm100.hpp): D (M=128), F (M=64: 16 rows per 32-lane quarter), and for .ws
 * E (M=64: column halves over lanes 0-63 / 64-127) and G (M=32: column quarters over the four
 * 32-lane quarters). */
static void d_cell(const Cfg *c, int r, int j, int *lane, int *col)
{
    *lane = r, *col = j;
    if (c->ws && c->m == 32) *lane = r + 32 * (j / (c->n / 4)), *col = j % (c->n / 4);
    else if (c->ws && c->m == 64) *lane = r + 64 * (j / (c->n / 2)), *col = j % (c->n / 2);
    else if (c->m == 64) *lane = 32 * (r / 16) + r % 16;
}

static int data_make(const Cfg *c, Rng *r, Data *d)
{
    int k = kstep(c), n = c->n;
    d->img = calloc(IMG, 1), d->dinit = malloc(sizeof(float) * THREADS * (size_t)n);
    d->out = malloc(sizeof(float) * THREADS * (size_t)n), d->ref = calloc((size_t)THREADS * (size_t)n, sizeof(double));
    if (!d->img || !d->dinit || !d->out || !d->ref) return -1;
    for (int i = 0; i < THREADS * n; i++) d->dinit[i] = (float)(rng_uniform(r) * 2 - 1);
    double *a = malloc(sizeof(double) * (size_t)c->m * (size_t)k), *bb = malloc(sizeof(double) * (size_t)n * (size_t)k);
    double *b0 = malloc(sizeof(double) * (size_t)n * (size_t)k);
    if (!a || !bb || !b0) return free(a), free(bb), free(b0), -1;
    for (int lane = 0; lane < THREADS; lane++)   /* lanes the MMA does not write keep dinit */
        for (int j = 0; j < n; j++) d->ref[lane * n + j] = d->dinit[lane * n + j];
    for (int s = 0; s < STEPS; s++) {
        for (int op = 0; op < 2; op++) {
            int rows = op ? n : c->m, ly = op ? c->bly : c->aly, km = op ? c->bkm : c->akm;
            uint8_t *tile = d->img + (2 * s + op) * SLOT;
            for (int mn = 0; mn < rows; mn++)
                for (int kk = 0; kk < k; kk++) {
                    double v;
                    uint32_t bits = draw(r, c->at, &v);
                    memcpy(tile + elem_off(ly, km, rows, eb(c), mn, kk), &bits, (size_t)eb(c));
                    (op ? bb : a)[mn * k + kk] = v;
                }
        }
        if (c->coll && s == 0) memcpy(b0, bb, sizeof *bb * (size_t)n * (size_t)k);
        const double *bs = c->coll && s == 1 ? b0 : bb;   /* lastuse reads what step 0's fill kept, not this step's tile */
        for (int row = 0; row < c->m; row++)
            for (int j = 0; j < n; j++) {
                int lane, col;
                d_cell(c, row, j, &lane, &col);
                if (c->disable[lane / 32] >> (lane % 32) & 1) continue;
                double sum = 0;
                for (int kk = 0; kk < k; kk++) sum += a[row * k + kk] * bs[j * k + kk];
                double *ref = &d->ref[lane * n + col];
                *ref = (s == 0 && !c->acc ? 0 : *ref) + sum;
            }
    }
    free(a), free(bb), free(b0);
    return 0;
}

static void data_free(Data *d) { free(d->img), free(d->dinit), free(d->out), free(d->ref); }

static int run(const Cfg *c, const char *ptx, Data *d, char *err, size_t errlen)
{
    size_t dbytes = sizeof(float) * THREADS * (size_t)c->n, sz[2] = {IMG, dbytes};
    const void *src[2] = {d->img, d->dinit};
    return probe_run_sim(ptx, THREADS, IMG, 0, 2, src, sz, d->out, dbytes, NULL, err, errlen);
}

static void one(const Cfg *c, Rng *r, int show)
{
    char name[160], err[2048] = "";
    snprintf(name, sizeof name, "mma%s %s M%d N%d A %s-major %s, B %s-major %s, D %s%s%s%s", c->ws ? ".ws" : "", at_name[c->at],
             c->m, c->n, c->akm ? "K" : "MN", ly_name[c->aly], c->bkm ? "K" : "N", ly_name[c->bly], c->d16 ? "f16" : "f32",
             c->acc ? " += A*B" : " = A*B", c->disable[0] | c->disable[1] ? ", lanes disabled" : "",
             c->coll ? ", B of step 2 from collector b1" : "");
    Lines ln;
    char *ptx = mma_probe(c, &ln);
    if (show) fputs(ptx, stdout);
    if (dump_dir) probe_dump(dump_dir, "t", ptx);
    Data d = {0};
    int rc = data_make(c, r, &d) ? (snprintf(err, sizeof err, "out of memory"), -1) : run(c, ptx, &d, err, sizeof err);
    double worst = 0;
    int bad = -1;
    for (int i = 0; !rc && i < THREADS * c->n; i++) {
        double got = d.out[i], want = d.ref[i];
        if (c->d16) got = fp16_to_f32((uint16_t)f32_bits(d.out[i]));   /* an f16 D sits in the cell's low half */
        double e = fabs(got - want) / (1 + fabs(want));
        if (!(e <= worst)) worst = e, bad = i;
    }
    double tol = c->d16 ? 2e-3 : 1e-6;
    check(!rc && worst <= tol, name, "%s%s worst rel error %.3g at lane %d column %d (tol %.0e)", rc ? err : "", rc ? ";" : "",
          worst, bad < 0 ? -1 : bad / c->n, bad < 0 ? -1 : bad % c->n, tol);
    data_free(&d);
    free(ptx);
}

static Cfg cfg(int at, int m, int n, int akm, int aly, int bkm, int bly, int acc)
{
    return (Cfg){.at = at, .m = m, .n = n, .akm = akm, .bkm = bkm, .aly = aly, .bly = bly, .acc = acc};
}

static void numerics(Rng *r)
{
    for (int ly = 0; ly < 4; ly++) {   /* every swizzle, K-major and MN-major, f16 and bf16 */
        Cfg km = cfg(AT_F16, 128, 64, 1, ly, 1, ly, ly & 1);
        one(&km, r, 0);
        Cfg mn = cfg(AT_BF16, 128, 32, 0, ly, 0, 3 - ly, !(ly & 1));
        one(&mn, r, 0);
    }
    int ns[] = {8, 16, 24, 48, 256};
    for (int i = 0; i < 5; i++) {   /* M = 64 takes N in steps of 8; M = 128 in steps of 16 */
        Cfg c = cfg(i % 2 ? AT_BF16 : AT_F16, 64, ns[i], 1, LY_SW128, i % 2, i % 2 ? LY_SW64 : LY_SW32, i % 2);
        one(&c, r, 0);
    }
    Cfg big = cfg(AT_F16, 128, 256, 1, LY_SW128, 1, LY_SW128, 1);
    one(&big, r, 0);
    Cfg tf = cfg(AT_TF32, 128, 64, 1, LY_SW128, 1, LY_SW64, 1), tf64 = cfg(AT_TF32, 64, 40, 1, LY_INTER, 1, LY_SW32, 0);
    one(&tf, r, 0), one(&tf64, r, 0);
    Cfg h = cfg(AT_F16, 128, 32, 1, LY_SW64, 0, LY_SW128, 0);   /* D = A*B: dinit's f32 bits are no f16 D */
    h.d16 = 1;
    one(&h, r, 0);
    Cfg dis = cfg(AT_F16, 128, 32, 1, LY_SW128, 1, LY_SW128, 1);
    dis.disable[0] = 0x0000FF01u, dis.disable[2] = 0x80000000u;
    one(&dis, r, 0);
    /* .ws: M 32/64/128 x N 64/128/256 (Layouts G, E, D), and B kept in a collector buffer */
    int wm[] = {32, 64, 128, 32, 64}, wn[] = {256, 128, 64, 64, 256};
    for (int i = 0; i < 5; i++) {
        Cfg w = cfg(i % 2 ? AT_BF16 : AT_F16, wm[i], wn[i], 1, LY_SW128, i % 2, i % 2 ? LY_SW64 : LY_SW128, i % 2);
        w.ws = 1;
        one(&w, r, 0);
    }
    Cfg wc = cfg(AT_F16, 32, 128, 1, LY_SW128, 1, LY_SW128, 0);
    wc.ws = 1, wc.coll = 1;
    one(&wc, r, 0);
    Cfg wt = cfg(AT_TF32, 64, 64, 1, LY_SW128, 1, LY_SW32, 0);
    wt.ws = 1;
    one(&wt, r, 0);
}

static void planted(const char *name, Bug bug, const char *want, int want_mma, int want_at)
{
    Cfg c = cfg(AT_F16, bug == BUG_UNWRITTEN ? 64 : 128, bug == BUG_COLL_NOFILL ? 64 : 32, 1, LY_SW128, 1, LY_SW128,
                bug == BUG_ACC_POISON);
    c.bug = bug, c.ws = bug == BUG_COLL_NOFILL;
    Lines ln;
    char *ptx = mma_probe(&c, &ln), err[4096] = "", la[48] = "", lb[48] = "";
    if (dump_dir) probe_dump(dump_dir, "t", ptx);
    Rng r;
    rng_seed(&r, 7);
    Data d = {0};
    int rc = data_make(&c, &r, &d) ? 0 : run(&c, ptx, &d, err, sizeof err);
    if (want_mma) snprintf(la, sizeof la, "PTX line %d", ln.mma);
    if (want_at == 1) snprintf(lb, sizeof lb, "PTX line %d", ln.alloc);
    if (want_at == 2) snprintf(lb, sizeof lb, "PTX line %d", ln.bug);
    /* want may name two reports, "first|second": either one found is right */
    const char *bar = strchr(want, '|');
    int found = strstr(err, bar ? bar + 1 : want) != NULL;
    if (bar) found = found || (memmem(err, strlen(err), want, (size_t)(bar - want)) != NULL);
    check(rc && found && strstr(err, la) && strstr(err, lb), name, "wanted an error with \"%s\" %s %s, got %s: %s",
          want, la, lb, rc ? "this error" : "success", err);
    if (rc) printf("  %s\n", err);
    data_free(&d);
    free(ptx);
}

static void planted_bugs(void)
{
    /* warp 0 reads its own lanes before the MMA landed; warp 1, ahead of the issue, read lanes the MMA then overwrites */
    planted("planted: tcgen05.ld of D before the commit's mbarrier wait", BUG_LD_EARLY,
            "before the tcgen05.mma at PTX line|TMEM race: the tcgen05.mma overwrites lane", 1, 0);
    planted("planted: A overwritten by st.shared while the mma is in flight", BUG_SMEM_OVERWRITE,
            "that the in-flight tcgen05.mma at PTX line", 1, 2);
    planted("planted: warp 1 loads warp 0's lane quarter", BUG_QUARTER, "warp 1 may access lanes 32..63 only", 0, 2);
    planted("planted: M=64 D read over lanes the MMA never wrote", BUG_UNWRITTEN, "that nothing (mma, st, cp) has written", 0, 2);
    planted("planted: the CTA exits without tcgen05.dealloc", BUG_NO_DEALLOC, "still allocated (tcgen05.alloc at", 0, 1);
    planted("planted: alloc after relinquish_alloc_permit", BUG_REALLOC, "after tcgen05.relinquish_alloc_permit", 0, 2);
    planted("planted: alloc beyond 512 columns blocks forever", BUG_OVERALLOC, "waits for a resource at", 0, 2);
    planted("planted: enable_input_d true on never-written D", BUG_ACC_POISON, "accumulates (enable_input_d true) into TMEM", 1, 0);
    planted("planted: .ws uses collector b1 that nothing filled", BUG_COLL_NOFILL, "no .collector::b1::fill has filled the buffer", 1, 0);
    planted("planted: an MMA overwrites D that other warps read, with no barrier", BUG_TMEM_RACE,
            "TMEM race: the tcgen05.mma overwrites lane", 0, 2);
}

/* ---- ld/st shapes ---- */
static void shape_pins(void)
{
    /* cells read off the ISA's "Matrix fragments for tcgen05.ld/st" figures: {shape, num, thread, reg, half, lane, col} */
    static const int pin[][7] = {
        {TM_32X32B, 1, 5, 0, 0, 5, 0},   {TM_32X32B, 8, 31, 7, 0, 31, 7},  {TM_16X256B, 1, 0, 0, 0, 0, 0},
        {TM_16X256B, 1, 5, 2, 0, 9, 2},  {TM_16X256B, 2, 30, 7, 0, 15, 13}, {TM_16X32BX2, 2, 3, 1, 8, 3, 1},
        {TM_16X32BX2, 2, 17, 1, 8, 1, 9},
        /* 16x64b and 16x128b, decoded by hand from CUTLASS's Copy_Traits<SM100_TMEM_LOAD_16dp64b1x> DstLayout
         * ((2,2,8),32):((512,32,64),1) over ValID (64 bits, 16 lanes): thread t -> lane t/4 + 8(t%2), column
         * (t/2)%2 (+2 per .x repeat); and <..._16dp128b1x> ((4,8),(32,2)):((32,128),(1,1024)) over (128 bits,
         * 16 lanes): register 2k -> lane t/4, column 4k + t%4; register 2k+1 -> lane t/4 + 8 (PTX_FACTS 3.9) */
        {TM_16X64B, 1, 5, 0, 0, 9, 0},   {TM_16X64B, 1, 6, 0, 0, 1, 1},    {TM_16X64B, 2, 31, 1, 0, 15, 3},
        {TM_16X64B, 4, 12, 2, 0, 3, 4},  {TM_16X128B, 1, 6, 1, 0, 9, 2},   {TM_16X128B, 2, 31, 3, 0, 15, 7},
        {TM_16X128B, 2, 0, 2, 0, 0, 4},
    };
    for (size_t i = 0; i < sizeof pin / sizeof pin[0]; i++) {
        int lane, col;
        sim_tmem_shape_map(pin[i][0], pin[i][1], pin[i][2], pin[i][3], pin[i][4], &lane, &col);
        char name[96];
        snprintf(name, sizeof name, "tmem shape map pin %zu (shape %d .x%d thread %d reg %d)", i, pin[i][0], pin[i][1], pin[i][2], pin[i][3]);
        check(lane == pin[i][5] && col == pin[i][6], name, "got lane %d column %d, want %d %d", lane, col, pin[i][5], pin[i][6]);
    }
}

static const char *shape_text[] = {"32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2"};

/* Each warp: markers over its quarter's 32 lanes x W columns, the shape's store, a 32x32b read of the
 * quarter to out[warp][lane][col], and the shape's own load to out2[thread][reg]. */
static char *shape_probe(int shape, int num, int half, int width)
{
    Buf b = {0};
    int regs = sim_tmem_shape_regs(shape, num);
    buf_printf(&b, ".version 8.6\n.target sm_100a\n.address_size 64\n.shared .align 4 .b32 tslot;\n"
                   ".visible .entry k(.param .u64 out, .param .u64 out2)\n.maxntid 128, 1, 1\n{\n\t.reg .pred %%p<4>;\n"
                   "\t.reg .b32 %%r<16>;\n\t.reg .b64 %%rd<8>;\n\t.reg .b32 %%v<%d>;\n", width > regs ? width : regs);
    buf_puts(&b, "\tmov.u32 %r0, %tid.x;\n\tshr.u32 %r1, %r0, 5;\n\tsetp.eq.u32 %p0, %r1, 0;\n\t@!%p0 bra $a;\n"
                 "\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [tslot], 128;\n$a:\n\tbar.sync 0;\n"
                 "\tld.shared.b32 %r2, [tslot];\n\tshl.b32 %r3, %r1, 21;\n\tadd.u32 %r4, %r2, %r3;\n");
    for (int j = 0; j < width; j++) buf_printf(&b, "\tmov.b32 %%v%d, 0xDEAD%04x;\n", j, j);
    buf_printf(&b, "\ttcgen05.st.sync.aligned.32x32b.x%d.b32 [%%r4], ", width);
    reglist(&b, ";\n", width, 0);
    for (int j = 0; j < regs; j++) buf_printf(&b, "\tshl.b32 %%r5, %%r0, 8;\n\tor.b32 %%v%d, %%r5, %d;\n", j, j);
    buf_printf(&b, "\ttcgen05.st.sync.aligned.%s.x%d.b32 [%%r4]%s", shape_text[shape], num, half ? "" : ", ");
    if (half) buf_printf(&b, ", %d, ", half);
    reglist(&b, ";\n\ttcgen05.wait::st.sync.aligned;\n", regs, 0);
    buf_printf(&b, "\ttcgen05.ld.sync.aligned.32x32b.x%d.b32 ", width);
    reglist(&b, ", [%r4];\n\ttcgen05.wait::ld.sync.aligned;\n", width, 0);
    buf_printf(&b, "\tld.param.u64 %%rd0, [out];\n\tcvta.to.global.u64 %%rd0, %%rd0;\n\tmul.wide.u32 %%rd1, %%r0, %d;\n"
                   "\tadd.s64 %%rd2, %%rd0, %%rd1;\n", 4 * width);
    for (int j = 0; j < width; j++) buf_printf(&b, "\tst.global.b32 [%%rd2+%d], %%v%d;\n", 4 * j, j);
    buf_printf(&b, "\ttcgen05.ld.sync.aligned.%s.x%d.b32 ", shape_text[shape], num);
    reglist(&b, ", [%r4]", regs, 0);
    if (half) buf_printf(&b, ", %d", half);
    buf_printf(&b, ";\n\ttcgen05.wait::ld.sync.aligned;\n\tld.param.u64 %%rd3, [out2];\n\tcvta.to.global.u64 %%rd3, %%rd3;\n"
                   "\tmul.wide.u32 %%rd4, %%r0, %d;\n\tadd.s64 %%rd5, %%rd3, %%rd4;\n", 4 * regs);
    for (int j = 0; j < regs; j++) buf_printf(&b, "\tst.global.b32 [%%rd5+%d], %%v%d;\n", 4 * j, j);
    buf_puts(&b, "\tbar.sync 0;\n\t@%p0 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 128;\n\tret;\n}\n");
    return buf_take(&b);
}

static void shape_case(int shape, int num, int half)
{
    int regs = sim_tmem_shape_regs(shape, num), width = 0;
    for (int t = 0; t < 32; t++)
        for (int r = 0; r < regs; r++) {
            int lane, col;
            sim_tmem_shape_map(shape, num, t, r, half, &lane, &col);
            if (col + 1 > width) width = col + 1;
        }
    width = width <= 32 ? 32 : width <= 64 ? 64 : 128;
    char *ptx = shape_probe(shape, num, half, width), err[2048] = "", name[96];
    if (dump_dir) probe_dump(dump_dir, "t", ptx);
    snprintf(name, sizeof name, "tcgen05.st/ld .%s.x%d%s round trip", shape_text[shape], num, half ? " (half offset)" : "");
    uint32_t *out = malloc(4u * THREADS * (unsigned)width), *out2 = malloc(4u * THREADS * (unsigned)regs);
    Device *dev = NULL;
    DevModule *m = NULL;
    DevFunc *f = NULL;
    DevPtr p[2] = {0};
    size_t sz[2] = {4u * THREADS * (size_t)width, 4u * THREADS * (size_t)regs};
    unsigned grid[3] = {1, 1, 1}, block[3] = {THREADS, 1, 1};
    int rc = !out || !out2 || dev_open(&dev, "sim", 0, err, sizeof err) || dev_load_ptx(dev, ptx, NULL, &m, err, sizeof err) ||
             dev_get_func(m, "k", &f, err, sizeof err);
    for (int i = 0; i < 2 && !rc; i++) rc = dev_alloc(dev, &p[i], sz[i], err, sizeof err);
    void *args[2] = {&p[0], &p[1]};
    rc = rc || dev_launch(f, grid, block, 0, args, err, sizeof err) || dev_download(dev, out, p[0], sz[0], err, sizeof err) ||
         dev_download(dev, out2, p[1], sz[1], err, sizeof err);
    int bad = 0, placed = 0;
    for (int w = 0; !rc && w < 4; w++)
        for (int t = 0; t < 32; t++)
            for (int r = 0; r < regs; r++) {
                int lane, col, th = 32 * w + t;
                sim_tmem_shape_map(shape, num, t, r, half, &lane, &col);
                uint32_t want = (uint32_t)th << 8 | (uint32_t)r;
                placed++;
                if (out[(32 * w + lane) * width + col] != want || out2[th * regs + r] != want) bad++;
            }
    check(!rc && !bad, name, "%s %d of %d registers misplaced", rc ? err : "", bad, placed);
    char ignore[256];
    for (int i = 0; i < 2; i++)
        if (p[i]) dev_free(dev, p[i], ignore, sizeof ignore);
    if (m) dev_unload(m);
    if (dev) dev_close(dev);
    free(out), free(out2), free(ptx);
}

static void shapes(void)
{
    shape_pins();
    int nums[] = {1, 2, 4};
    for (int s = 0; s < TM_SHAPES; s++)
        for (int i = 0; i < 3; i++) shape_case(s, nums[i], s == TM_16X32BX2 ? 16 : 0);
    shape_case(TM_32X32B, 32, 0);
    shape_case(TM_16X64B, 16, 0);
}

int main(int argc, char **argv)
{
    ProbeArgs args = {0};
    if (probe_args(argc, argv, "seed ptx dump", "test_sim_tcgen05 [--seed N] [--ptx] [--dump DIR]", &args)) return 2;
    uint64_t seed = args.seed;
    int show = args.show;
    dump_dir = args.dump;
    Rng r;
    rng_seed(&r, seed);
    if (show) {
        Cfg c = cfg(AT_F16, 128, 64, 1, LY_SW128, 0, LY_SW64, 1);
        one(&c, &r, 1);
        return 0;
    }
    printf("tcgen05 on the sim, seed %llu\n", (unsigned long long)seed);
    shapes();
    numerics(&r);
    planted_bugs();
    return check_summary();
}
