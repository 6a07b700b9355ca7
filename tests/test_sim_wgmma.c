/* wgmma on the sim (runner/sim/sim_wgmma.c) against a float64 reference.
 * One probe kernel, written here as PTX text per configuration: 128 threads
 * copy a shared-memory image (A and B tiles laid out on the host in the
 * canonical layout under test) from global memory with st.shared, fence the
 * proxies, build the matrix descriptors on the device as NVIDIA's kernels do
 * (address >> 4 | LBO, SBO and layout bits), load the accumulators (and the
 * RS A fragments), run two chained k-steps of wgmma.mma_async, commit, wait
 * and store every thread's accumulator registers. The host lays out the
 * tiles and places the fragments with its own code, written from the PTX
 * ISA's canonical-layout table and fragment figures, not with sim_desc.c.
 * Covered: SS and RS; f16, bf16, tf32 and fp8 (e4m3, e5m2, mixed) inputs; f32 and f16 accumulators;
 * N 8, 64, 256; K-major and MN-major; no swizzle (two LBO/SBO arrangements)
 * and the 32B, 64B and 128B swizzles; negated A or B; D = A*B and D += A*B.
 * Then planted bugs, each refused with the message that names it.
 * usage: test_sim_wgmma [--seed N] [--ptx] [--dump DIR] [--device sim|cuda]
 *   --ptx prints one probe; --dump DIR writes every probe, planted bugs
 *   included, to DIR/NNN.ptx (tests/run_all.sh assembles them with ptxas);
 *   --device cuda runs the matrix (not the planted bugs) on a GPU against the
 *   same references, FP8 within 1e-2 of its terms (Hopper's FP8 accumulation
 *   keeps fewer bits than f32; the sim rounds once, within 1e-6). */
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

enum { LY_INTER, LY_SW32, LY_SW64, LY_SW128 };
enum { AT_F16, AT_BF16, AT_TF32, AT_E4M3, AT_E5M2 };
enum { STEPS = 2, THREADS = 128 };
static const char *ly_name[] = {"interleave", "32B", "64B", "128B"}, *at_name[] = {"f16", "bf16", "tf32", "e4m3", "e5m2"};
static const char *device = "sim";   /* --device */

/* One operand tile in shared memory: rows (M = 64 for A, N for B) x ktot. */
typedef struct {
    int layout, kmajor, var, rows, ktot, eb;
    uint32_t base, lbo, sbo, kblk, bytes;   /* kblk: K-major swizzled, bytes between atom-wide K blocks */
} Tile;

typedef enum {
    BUG_NONE, BUG_READ_EARLY, BUG_WRITE_ACC, BUG_SMEM_OVERWRITE, BUG_SKIP_WARP, BUG_BASE_OFFSET, BUG_DESC_OOB,
    BUG_NO_FENCE, BUG_FENCE_ORDER, BUG_A_WRITE, BUG_DIVERGENT, BUG_DESC_DIVERGE, BUG_GROUP_MISMATCH, BUG_SMALL_CTA,
    BUG_SKIP_EXIT
} Bug;

typedef struct {
    int rs, at, bt, d32, n, neg_a, neg_b, acc;   /* bt: B's type (A's but for mixed FP8) */
    int nobar;     /* no bar.sync after the copy: each warp's writes are ordered before the warpgroup's mma_async */
    int wgs;       /* warpgroups (1 or 2, SS only): the second runs its own mma_async with A negated the other way */
    Tile a, b;
    Bug bug;
} Cfg;

/* Lines of the probe that planted-bug messages must name. */
typedef struct { int mma[STEPS], store, bug; } Lines;

static int atom_bytes(int ly) { return ly == LY_INTER ? 16 : 16 << ly; }
static int fp8(int at) { return at == AT_E4M3 || at == AT_E5M2; }
static int k_step(const Cfg *c) { return c->at == AT_TF32 ? 8 : fp8(c->at) ? 32 : 16; }
static int elem_bytes(int at) { return at == AT_TF32 ? 4 : fp8(at) ? 1 : 2; }
static int nregs(const Cfg *c) { return c->d32 ? c->n / 2 : c->n / 4; }
static int threads(const Cfg *c) { return THREADS * c->wgs; }
static uint32_t copy_stride(const Cfg *c) { return 16u * (uint32_t)threads(c); }

static const char *dump_dir;   /* --dump: where every probe is written */

/* ---- host layouts (PTX ISA "Shared Memory Matrix Layout": canonical layouts in 16-byte units) ---- */

/* LBO/SBO as this test arranges the tile. K-major, no swizzle: 8x16-byte
 * core matrices, var 0 K-adjacent (LBO 128), var 1 MN-adjacent (SBO 128).
 * K-major swizzled: rows W bytes, 8-row groups SBO apart (8W, or 16W with a
 * gap), K blocks of W bytes after each other. MN-major, no swizzle: 16-byte
 * MN chunks SBO apart, 8-deep K groups LBO apart. MN-major swizzled: W-byte
 * MN runs, K rows W apart, atoms along MN LBO apart, 8-deep K groups SBO
 * apart. */
static void tile_setup(Tile *t, int ly, int kmajor, int var, int rows, int ktot, int eb, uint32_t base)
{
    uint32_t w = (uint32_t)atom_bytes(ly), mnb = (uint32_t)(rows * eb), kbytes = (uint32_t)(ktot * eb);
    *t = (Tile){.layout = ly, .kmajor = kmajor, .var = var, .rows = rows, .ktot = ktot, .eb = eb, .base = base};
    if (kmajor && ly == LY_INTER) {
        t->lbo = var ? (uint32_t)rows / 8 * 128 : 128, t->sbo = var ? 128 : kbytes / 16 * 128;
        t->bytes = mnb * (uint32_t)ktot;
    } else if (kmajor) {
        t->lbo = 16, t->sbo = (var ? 16 : 8) * w, t->kblk = (uint32_t)rows / 8 * t->sbo;
        t->bytes = (kbytes + w - 1) / w * t->kblk;
    } else if (ly == LY_INTER) {
        t->sbo = var ? (uint32_t)ktot / 8 * 128 : 128, t->lbo = var ? 128 : mnb / 16 * 128;
        t->bytes = mnb * (uint32_t)ktot;
    } else {
        uint32_t atoms = (mnb + w - 1) / w;
        t->sbo = var ? atoms * 8 * w : 8 * w, t->lbo = var ? 8 * w : (uint32_t)ktot / 8 * 8 * w;
        t->bytes = atoms * (uint32_t)ktot / 8 * 8 * w;
    }
}

static uint32_t tile_off(const Tile *t, int mn, int k)
{
    uint32_t w = (uint32_t)atom_bytes(t->layout), kb = (uint32_t)(k * t->eb), mb = (uint32_t)(mn * t->eb);
    uint32_t m = (uint32_t)mn, kk = (uint32_t)k;
    if (t->kmajor && t->layout == LY_INTER) return m % 8 * 16 + m / 8 * t->sbo + kb / 16 * t->lbo + kb % 16;
    if (t->kmajor) return kb / w * t->kblk + m / 8 * t->sbo + m % 8 * w + kb % w;
    if (t->layout == LY_INTER) return mb / 16 * t->sbo + mb % 16 + kk % 8 * 16 + kk / 8 * t->lbo;
    return mb / w * t->lbo + mb % w + kk % 8 * w + kk / 8 * t->sbo;
}

/* Swizzle<b,4,3>: the b address bits from 7 up are XORed into those from 4 up. */
static uint32_t swizzle(int ly, uint32_t a)
{
    uint32_t bits = ly == LY_INTER ? 0 : (uint32_t)ly;
    return a ^ ((a >> 7) & ((1u << bits) - 1)) << 4;
}

/* Where k-step s starts, from the tile's base. */
static uint32_t step_start(const Tile *t, int s, int kstep)
{
    uint32_t kb = (uint32_t)(s * kstep * t->eb), w = (uint32_t)atom_bytes(t->layout), k0 = (uint32_t)(s * kstep);
    if (t->kmajor) return t->layout == LY_INTER ? kb / 16 * t->lbo : kb / w * t->kblk + kb % w;
    return t->layout == LY_INTER ? k0 / 8 * t->lbo : k0 / 8 * t->sbo;
}

/* The descriptor's constant bits: LBO, SBO, layout type (62-63: 0 none, 1 128B, 2 64B, 3 32B). */
static uint64_t desc_hi(const Tile *t)
{
    static const uint64_t code[] = {0, 3, 2, 1};
    return (uint64_t)(t->sbo >> 4) << 32 | (uint64_t)(t->lbo >> 4) << 16 | code[t->layout] << 62;
}

/* ---- fragments (PTX ISA wgmma register-fragment figures) ---- */

/* Accumulator element e of warpgroup thread t: row 16w + g (+8), column 8(e/4) + 2q + e%2. */
static void d_elem(int t, int e, int *row, int *col)
{
    int w = t / 32, g = t % 32 / 4, q = t % 4;
    *row = 16 * w + g + 8 * (e / 2 % 2);
    *col = 8 * (e / 4) + 2 * q + e % 2;
}

/* RS A register r (part h) of thread t: 16-bit types row g (+8 odd r), k 2q + h (+8 for r >= 2);
 * tf32 one element, k q (+4 for r >= 2); fp8 four, byte h at k 4q + h (+16 for r >= 2). */
static void a_elem(int at, int t, int r, int h, int *row, int *k)
{
    int w = t / 32, g = t % 32 / 4, q = t % 4;
    *row = 16 * w + g + 8 * (r % 2);
    *k = at == AT_TF32 ? q + 4 * (r / 2) : fp8(at) ? 4 * q + h + 16 * (r / 2) : 2 * q + h + 8 * (r / 2);
}

/* ---- the probe kernel ---- */

static int line_no(const Buf *b)
{
    int n = 1;
    for (size_t i = 0; i < b->len; i++) n += b->s[i] == '\n';
    return n;
}

static uint32_t img_bytes(const Cfg *c)
{
    uint32_t end = c->b.base + c->b.bytes;
    if (!c->rs && c->a.base + c->a.bytes > end) end = c->a.base + c->a.bytes;
    return (end + copy_stride(c) - 1) / copy_stride(c) * copy_stride(c);
}

/* vector operand text {%p<from>, ..., %p<from+n-1>} */
static void vec(Buf *b, const char *p, int from, int n)
{
    buf_puts(b, "{");
    for (int i = 0; i < n; i++) buf_printf(b, "%s%s%d", i ? ", " : "", p, from + i);
    buf_puts(b, "}");
}

/* Loads or stores the accumulators at [%rd5]: 16 bytes at a time (8 when 2 registers). */
static void acc_io(Buf *b, const Cfg *c, int store)
{
    int n = nregs(c), w = n % 4 ? 2 : 4;
    for (int i = 0; i < n; i += w) {
        buf_printf(b, "\t%s.global.v%d.b32 ", store ? "st" : "ld", w);
        if (store) buf_printf(b, "[%%rd5+%d], ", 4 * i);
        vec(b, "%d", i, w);
        if (!store) buf_printf(b, ", [%%rd5+%d]", 4 * i);
        buf_puts(b, ";\n");
    }
}

static void desc(Buf *b, const Cfg *c, const Tile *t, int s, int reg, int bug_offset)
{
    uint64_t hi = desc_hi(t) | (bug_offset ? 1ull << 49 : 0);
    buf_printf(b, "\tadd.u32 %%r10, %%r1, %u;\n", t->base + step_start(t, s, k_step(c)));
    if (c->bug == BUG_DESC_DIVERGE && reg == 6) buf_puts(b, "\tadd.u32 %r10, %r10, %r11;\n");
    buf_printf(b, "\tshr.u32 %%r10, %%r10, 4;\n\tand.b32 %%r10, %%r10, 16383;\n\tcvt.u64.u32 %%rd%d, %%r10;\n", reg);
    buf_printf(b, "\tor.b64 %%rd%d, %%rd%d, %llu;\n", reg, reg, (unsigned long long)hi);
}

static char *probe(const Cfg *c, Lines *ln)
{
    Buf b = {0};
    const char *dt = c->d32 ? "f32" : "f16", *at = at_name[c->at];
    int n = nregs(c);
    *ln = (Lines){0};
    buf_printf(&b, "// wgmma probe: %s m64n%dk%d.%s.%s\n.version 8.0\n.target sm_90a\n.address_size 64\n\n", c->rs ? "RS" : "SS",
               c->n, k_step(c), dt, at);
    buf_puts(&b, ".extern .shared .align 1024 .b8 smem[];\n\n.visible .entry k(.param .u64 img, .param .u64 afrag, "
                 ".param .u64 dinit, .param .u64 out, .param .u32 acc)\n");
    buf_printf(&b, ".maxntid %d, 1, 1\n{\n", threads(c));
    buf_printf(&b, "\t.reg .pred %%p<4>;\n\t.reg .b32 %%r<16>;\n\t.reg .b64 %%rd<12>;\n\t.reg .b32 %%a<8>;\n\t.reg .%s %%d<%d>;\n\n",
               c->d32 ? "f32" : "b32", n);
    /* the image, 16 bytes a thread at a time */
    buf_printf(&b, "\tmov.u32 %%r0, %%tid.x;\n\tshr.u32 %%r9, %%r0, 5;\n\tand.b32 %%r11, %%r0, 16;\n\tmov.u32 %%r1, smem;\n"
                   "\tld.param.u64 %%rd0, [img];\n\tcvta.to.global.u64 %%rd0, %%rd0;\n\tshl.b32 %%r2, %%r0, 4;\n"
                   "$copy:\n\tsetp.ge.u32 %%p0, %%r2, %u;\n\t@%%p0 bra $copied;\n\tcvt.u64.u32 %%rd1, %%r2;\n"
                   "\tadd.s64 %%rd2, %%rd0, %%rd1;\n\tld.global.v4.b32 {%%r4, %%r5, %%r6, %%r7}, [%%rd2];\n"
                   "\tadd.u32 %%r3, %%r1, %%r2;\n\tst.shared.v4.b32 [%%r3], {%%r4, %%r5, %%r6, %%r7};\n"
                   "\tadd.u32 %%r2, %%r2, %d;\n\tbra $copy;\n$copied:\n\tfence.proxy.async.shared::cta;\n%s",
               img_bytes(c), copy_stride(c), c->nobar ? "" : "\tbar.sync 0;\n");
    /* accumulators, RS fragments, the scale-d predicate */
    buf_printf(&b, "\tld.param.u64 %%rd3, [dinit];\n\tcvta.to.global.u64 %%rd3, %%rd3;\n\tmul.wide.u32 %%rd4, %%r0, %d;\n"
                   "\tadd.s64 %%rd5, %%rd3, %%rd4;\n", 4 * n);
    acc_io(&b, c, 0);
    /* the fence orders these register writes before the mma_async reads them (FENCE_ORDER: it comes first) */
    if (c->bug == BUG_FENCE_ORDER) buf_puts(&b, "\twgmma.fence.sync.aligned;\n");
    if (c->rs) {
        buf_puts(&b, "\tld.param.u64 %rd8, [afrag];\n\tcvta.to.global.u64 %rd8, %rd8;\n\tmul.wide.u32 %rd9, %r0, 16;\n"
                     "\tadd.s64 %rd8, %rd8, %rd9;\n");
        for (int s = 0; s < STEPS; s++) {
            if (c->bug == BUG_FENCE_ORDER && s == 1) ln->bug = line_no(&b);
            buf_printf(&b, "\tld.global.v4.b32 {%%a%d, %%a%d, %%a%d, %%a%d}, [%%rd8+%d];\n", 4 * s, 4 * s + 1, 4 * s + 2,
                       4 * s + 3, s * THREADS * 16);
        }
    }
    if (c->bug != BUG_NO_FENCE && c->bug != BUG_FENCE_ORDER) buf_puts(&b, "\twgmma.fence.sync.aligned;\n");
    buf_puts(&b, "\tld.param.u32 %r8, [acc];\n\tsetp.ne.u32 %p1, %r8, 0;\n\tsetp.eq.u32 %p2, %r9, 3;\n");
    if (c->bug == BUG_SKIP_WARP) buf_puts(&b, "\t@%p2 bra $quit;\n");
    if (c->bug == BUG_SKIP_EXIT) buf_puts(&b, "\t@%p2 bra $late;\n");
    if (c->bug == BUG_GROUP_MISMATCH) {
        buf_puts(&b, "\t@!%p2 bra $nocommit;\n");
        ln->bug = line_no(&b);
        buf_puts(&b, "\twgmma.commit_group.sync.aligned;\n$nocommit:\n");
    }
    for (int g = 0; g < c->wgs; g++) {
    if (c->wgs > 1) buf_puts(&b, g ? "\tbra.uni $joined;\n$wg1:\n" : "\tsetp.ge.u32 %p3, %r0, 128;\n\t@%p3 bra $wg1;\n");
    for (int s = 0; s < STEPS; s++) {
        if (!c->rs) desc(&b, c, &c->a, s, 6, c->bug == BUG_BASE_OFFSET);
        Tile bt = c->b;
        if (c->bug == BUG_DESC_OOB) bt.base = img_bytes(c);
        desc(&b, c, &bt, s, 7, 0);
        const char *guard = c->bug == BUG_DIVERGENT ? "@%p3 " : "";
        if (c->bug == BUG_DIVERGENT) buf_puts(&b, "\tsetp.lt.u32 %p3, %r0, 127;\n");
        ln->mma[s] = line_no(&b);
        buf_printf(&b, "\t%swgmma.mma_async.sync.aligned.m64n%dk%d.%s.%s.%s ", guard, c->n, k_step(c), dt, at, at_name[c->bt]);
        vec(&b, "%d", 0, n);
        if (c->rs) buf_puts(&b, ", "), vec(&b, "%a", 4 * s, 4);
        else buf_puts(&b, ", %rd6");
        buf_printf(&b, ", %%rd7, %s, %d, %d", s ? "1" : "%p1", c->neg_a ^ g ? -1 : 1, c->neg_b ? -1 : 1);
        if (c->at != AT_TF32 && !fp8(c->at) && !c->rs) buf_printf(&b, ", %d", !c->a.kmajor);   /* tf32, fp8: no transpose */
        if (c->at != AT_TF32 && !fp8(c->at)) buf_printf(&b, ", %d", !c->b.kmajor);
        buf_puts(&b, ";\n");
    }
    }
    if (c->wgs > 1) buf_puts(&b, "$joined:\n");
    buf_puts(&b, "\twgmma.commit_group.sync.aligned;\n");
    if (c->bug != BUG_GROUP_MISMATCH && c->bug != BUG_FENCE_ORDER) ln->bug = line_no(&b);
    if (c->bug == BUG_WRITE_ACC) buf_printf(&b, "\tmov.b32 %%d%d, 0;\n", n - 1);
    if (c->bug == BUG_SMEM_OVERWRITE) buf_printf(&b, "\tst.shared.b32 [%%r1+%u], %%r0;\n", c->b.base + 64);
    if (c->bug == BUG_A_WRITE) buf_puts(&b, "\tmov.b32 %a6, 0;\n");
    buf_printf(&b, "\tld.param.u64 %%rd3, [out];\n\tcvta.to.global.u64 %%rd3, %%rd3;\n\tadd.s64 %%rd5, %%rd3, %%rd4;\n");
    if (c->bug != BUG_READ_EARLY) buf_puts(&b, "\twgmma.wait_group.sync.aligned 0;\n");
    ln->store = line_no(&b);
    acc_io(&b, c, 1);
    buf_puts(&b, "\tret;\n");
    if (c->bug == BUG_SKIP_WARP) buf_puts(&b, "$quit:\n\tret;\n");   /* warp 3 leaves before the others issue */
    if (c->bug == BUG_SKIP_EXIT) {   /* warp 3 dawdles, then leaves while the others wait for it */
        buf_puts(&b, "$late:\n\tmov.u32 %r12, 0;\n$spin:\n\tadd.u32 %r12, %r12, 1;\n\tsetp.lt.u32 %p3, %r12, 200;\n"
                     "\t@%p3 bra $spin;\n");
        ln->bug = line_no(&b);
        buf_puts(&b, "\tret;\n");
    }
    buf_puts(&b, "}\n");
    return buf_take(&b);
}

/* ---- host data, reference, launch ---- */

typedef struct {
    double *a, *b, *d0;        /* A [64][ktot], B [n][ktot], D init [64][n], as the wgmma sees them */
    uint8_t *img;
    uint32_t *afrag, *dinit, *out;
} Data;

static uint32_t draw(Rng *r, int at, double *val)
{
    double x = rng_uniform(r) * 4 - 2;
    uint32_t bits;
    if (at == AT_TF32) bits = f32_bits((float)x), *val = bits_f32(bits & ~0x1FFFu);   /* the ISA: low 13 bits dropped */
    else if (at == AT_BF16) bits = f32_to_bf16((float)x), *val = bf16_to_f32((uint16_t)bits);
    else if (fp8(at)) bits = f32_to_fp8((float)x, at == AT_E5M2), *val = fp8_to_f32((uint8_t)bits, at == AT_E5M2);
    else bits = f32_to_fp16((float)x), *val = fp16_to_f32((uint16_t)bits);
    return bits;
}

static void put(uint8_t *img, const Tile *t, int mn, int k, uint32_t bits)
{
    uint32_t at = swizzle(t->layout, t->base + tile_off(t, mn, k));
    memcpy(img + at, &bits, (size_t)t->eb);
}

static int data_make(const Cfg *c, Rng *r, Data *d)
{
    int kt = STEPS * k_step(c), n = c->n, nr = nregs(c), eb = elem_bytes(c->at);
    d->a = malloc(sizeof(double) * 64 * (size_t)kt), d->b = malloc(sizeof(double) * (size_t)(n * kt));
    d->d0 = malloc(sizeof(double) * 64 * (size_t)(n * c->wgs)), d->img = calloc(img_bytes(c), 1);
    d->afrag = calloc((size_t)STEPS * THREADS * 4, 4), d->dinit = malloc(4 * (size_t)(threads(c) * nr));
    d->out = malloc(4 * (size_t)(threads(c) * nr));
    if (!d->a || !d->b || !d->d0 || !d->img || !d->afrag || !d->dinit || !d->out) return -1;
    uint32_t *abits = malloc(4 * 64 * (size_t)kt);
    if (!abits) return -1;
    for (int m = 0; m < 64; m++)
        for (int k = 0; k < kt; k++) {
            abits[m * kt + k] = draw(r, c->at, &d->a[m * kt + k]);
            if (!c->rs) put(d->img, &c->a, m, k, abits[m * kt + k]);
        }
    for (int j = 0; j < n; j++)
        for (int k = 0; k < kt; k++) put(d->img, &c->b, j, k, draw(r, c->bt, &d->b[j * kt + k]));
    for (int s = 0; c->rs && s < STEPS; s++)
        for (int t = 0; t < THREADS; t++)
            for (int q = 0; q < 4; q++)
                for (int h = 0; h < 4 / eb; h++) {
                    int row, k;
                    a_elem(c->at, t, q, h, &row, &k);
                    d->afrag[(s * THREADS + t) * 4 + q] |= abits[row * kt + s * k_step(c) + k] << (8 * eb * h);
                }
    free(abits);
    for (int t = 0; t < threads(c); t++)
        for (int j = 0; j < nr; j++)
            for (int h = 0; h < (c->d32 ? 1 : 2); h++) {
                int e = c->d32 ? j : 2 * j + h, row, col;
                d_elem(t % THREADS, e, &row, &col);
                double x = rng_uniform(r) * 8 - 4;
                uint32_t bits = c->d32 ? f32_bits((float)x) : f32_to_fp16((float)x);
                d->d0[(t / THREADS * 64 + row) * n + col] = c->d32 ? bits_f32(bits) : fp16_to_f32((uint16_t)bits);
                if (!h) d->dinit[t * nr + j] = 0;
                d->dinit[t * nr + j] |= bits << (16 * h);
            }
    return 0;
}

static void data_free(Data *d)
{
    free(d->a), free(d->b), free(d->d0), free(d->img), free(d->afrag), free(d->dinit), free(d->out);
}

/* Largest |D - ref| relative to the sum of |terms| of its element; -1 for an unwritten (NaN) element. */
static double compare(const Cfg *c, const Data *d, int *bad_row, int *bad_col)
{
    int kt = STEPS * k_step(c), n = c->n, nr = nregs(c);
    double worst = 0, sb = c->neg_b ? -1 : 1;
    for (int t = 0; t < threads(c); t++)
        for (int e = 0; e < n / 2; e++) {
            int row, col, wg = t / THREADS;
            double sa = c->neg_a ^ wg ? -1 : 1;
            d_elem(t % THREADS, e, &row, &col);
            uint32_t w = d->out[t * nr + (c->d32 ? e : e / 2)];
            double got = c->d32 ? bits_f32(w) : fp16_to_f32((uint16_t)(w >> (16 * (e % 2))));
            double ref = c->acc ? d->d0[(wg * 64 + row) * n + col] : 0, mag = fabs(ref);
            for (int k = 0; k < kt; k++) {
                double p = sa * d->a[row * kt + k] * sb * d->b[col * kt + k];
                ref += p, mag += fabs(p);
            }
            double err = isnan(got) ? -1 : fabs(got - ref) / (mag + 1e-30);
            if (err < 0 || err > worst) {
                worst = err, *bad_row = wg * 64 + row, *bad_col = col;
                if (err < 0) return -1;
            }
        }
    return worst;
}

/* Runs the probe on the sim; 0, or -1 with the error in err. */
static int run(const Cfg *c, const char *ptx, Data *d, int strict, char *err, size_t errlen)
{
    size_t sz[3] = {img_bytes(c), (size_t)STEPS * THREADS * 16, 4 * (size_t)(threads(c) * nregs(c))};
    const void *src[3] = {d->img, d->afrag, d->dinit};
    unsigned acc = (unsigned)c->acc, nthreads = c->bug == BUG_SMALL_CTA ? 96 : (unsigned)threads(c);
    return probe_run_on(device, ptx, nthreads, (unsigned)img_bytes(c), strict, 3, src, sz, d->out, sz[2], &acc, err, errlen);
}

static void cfg_name(const Cfg *c, char *out, size_t cap)
{
    char a[64] = "regs";
    if (!c->rs) snprintf(a, sizeof a, "%s-major %s%s", c->a.kmajor ? "K" : "MN", ly_name[c->a.layout], c->a.var ? "'" : "");
    snprintf(out, cap, "%s m64n%dk%d .%s.%s%s%s A %s, B %s-major %s%s%s%s%s%s%s", c->rs ? "RS" : "SS", c->n, k_step(c),
             c->d32 ? "f32" : "f16", at_name[c->at], c->bt != c->at ? "." : "", c->bt != c->at ? at_name[c->bt] : "", a, c->b.kmajor ? "K" : "MN", ly_name[c->b.layout], c->b.var ? "'" : "",
             c->neg_a ? ", -A" : "", c->neg_b ? ", -B" : "", c->acc ? ", D += A*B" : ", D = A*B",
             c->nobar ? ", tiles from the warpgroup's own warps without bar.sync" : "",
             c->wgs > 1 ? ", two warpgroups (the second with A negated the other way)" : "");
}

static Cfg make_cfg(int rs, int at, int d32, int n, int aly, int akm, int bly, int bkm, int var, int flags)
{
    Cfg c = {.rs = rs, .at = at, .bt = at, .d32 = d32, .n = n, .neg_a = flags & 1, .neg_b = flags >> 1 & 1,
             .acc = flags >> 2 & 1, .wgs = 1};
    int eb = elem_bytes(at), kt = STEPS * k_step(&c);
    tile_setup(&c.a, aly, akm, var, 64, kt, eb, 0);
    uint32_t bbase = rs ? 0 : (c.a.bytes + 1023) / 1024 * 1024;
    tile_setup(&c.b, bly, bkm, !var, n, kt, eb, bbase);
    return c;
}

static void one(const Cfg *c, Rng *r, int show)
{
    char name[256], err[2048] = "";
    cfg_name(c, name, sizeof name);
    Lines ln;
    char *ptx = probe(c, &ln);
    if (show) { fputs(ptx, stdout); free(ptx); return; }
    if (dump_dir) probe_dump(dump_dir, "", ptx);
    Data d = {0};
    if (data_make(c, r, &d)) {
        check(0, name, "out of memory");
    } else if (run(c, ptx, &d, 1, err, sizeof err)) {
        check(0, name, "%s", err);
    } else {
        int row = -1, col = -1;
        double e = compare(c, &d, &row, &col);
        double tol = c->d32 ? (fp8(c->at) && strcmp(device, "sim") ? 1e-2 : 1e-6) : 2e-3;
        check(e >= 0 && e <= tol, name, "D[%d][%d] off by %.3g of its terms' magnitude (tolerance %.1g)%s", row, col, e, tol,
              e < 0 ? ": not written" : "");
    }
    data_free(&d);
    free(ptx);
}

/* ---- the matrix ---- */

static void numerics(Rng *r)
{
    static const int ns[] = {8, 64, 256};
    static const struct { int at, d32; } types[] = {{AT_F16, 1}, {AT_F16, 0}, {AT_BF16, 1}};
    int i = 0;
    for (int t = 0; t < 3; t++)
        for (int ni = 0; ni < 3; ni++)
            for (int ly = LY_INTER; ly <= LY_SW128; ly++)
                for (int km = 0; km < 2; km++, i++) {
                    /* SS: A and B in the same layout and majorness; the LBO/SBO arrangement, negation and
                     * accumulate flags turn over with the index */
                    Cfg c = make_cfg(0, types[t].at, types[t].d32, ns[ni], ly, km, ly, km, i & 1, i % 8);
                    one(&c, r, 0);
                    /* RS: B in that layout and majorness */
                    c = make_cfg(1, types[t].at, types[t].d32, ns[ni], LY_SW128, 1, ly, km, i & 1, (i + 3) % 8);
                    one(&c, r, 0);
                }
    /* mixed operands: A and B in different layouts and majors */
    Cfg mixed[] = {make_cfg(0, AT_F16, 1, 64, LY_SW128, 1, LY_SW64, 0, 0, 4), make_cfg(0, AT_BF16, 1, 128, LY_SW32, 0, LY_INTER, 1, 1, 5),
                   make_cfg(0, AT_F16, 0, 24, LY_INTER, 0, LY_SW128, 1, 0, 6), make_cfg(0, AT_BF16, 1, 200, LY_SW64, 1, LY_SW32, 0, 1, 7)};
    for (size_t k = 0; k < sizeof mixed / sizeof mixed[0]; k++) one(&mixed[k], r, 0);
    /* the tiles written by the four warps of the warpgroup itself, no bar.sync before the mma_async */
    Cfg nobar = make_cfg(0, AT_BF16, 1, 64, LY_SW128, 1, LY_SW128, 0, 0, 4);
    nobar.nobar = 1;
    one(&nobar, r, 0);
    /* two warpgroups, each its own ops, keys and fragments (warps 4-7 hold rows of the second D) */
    Cfg two[] = {make_cfg(0, AT_F16, 1, 128, LY_SW64, 0, LY_SW128, 1, 1, 4), make_cfg(0, AT_BF16, 1, 8, LY_INTER, 1, LY_SW32, 0, 0, 3),
                 make_cfg(0, AT_F16, 0, 256, LY_SW128, 1, LY_INTER, 0, 1, 6)};
    for (size_t k = 0; k < sizeof two / sizeof two[0]; k++) two[k].wgs = 2, one(&two[k], r, 0);
    /* fp8: K-major only (no transpose), SS and RS, f32 and f16 accumulators, e4m3 and e5m2 and the two mixed */
    static const int f8[][3] = {{AT_E4M3, AT_E4M3, 1}, {AT_E5M2, AT_E5M2, 0}, {AT_E4M3, AT_E5M2, 1}, {AT_E5M2, AT_E4M3, 1}};
    for (int f = 0; f < 4; f++)
        for (int ni = 0; ni < 3; ni++)
            for (int ly = LY_INTER; ly <= LY_SW128; ly += 3 - 2 * (ni == 1)) {   /* interleave and 128B; n 64: all four */
                Cfg c = make_cfg(0, f8[f][0], f8[f][2], ns[ni], ly, 1, ly, 1, ly & 1, ly + ni + f);
                c.bt = f8[f][1];
                one(&c, r, 0);
                c = make_cfg(1, f8[f][0], f8[f][2], ns[ni], LY_SW128, 1, ly, 1, ly & 1, ly + ni + f + 3);
                c.bt = f8[f][1];
                one(&c, r, 0);
            }
    /* tf32: K-major only (the ISA: no transpose for .tf32), SS and RS */
    for (int ni = 0; ni < 3; ni++)
        for (int ly = LY_INTER; ly <= LY_SW128; ly++) {
            Cfg c = make_cfg(0, AT_TF32, 1, ns[ni], ly, 1, ly, 1, ly & 1, ly + ni);
            one(&c, r, 0);
            c = make_cfg(1, AT_TF32, 1, ns[ni], LY_SW128, 1, ly, 1, ly & 1, ly + ni + 3);
            one(&c, r, 0);
        }
}

/* A planted bug must be refused with a message holding want (and, where it
 * names them, the PTX lines of the op and of the offending instruction). */
static void planted(const char *name, Cfg c, Bug bug, int strict, const char *want, int want_mma, int want_at)
{
    c.bug = bug;
    Lines ln;
    char *ptx = probe(&c, &ln), err[2048] = "", line_a[48] = "", line_b[48] = "";
    if (dump_dir) probe_dump(dump_dir, "", ptx);
    Rng r;
    rng_seed(&r, 7);
    Data d = {0};
    int rc = data_make(&c, &r, &d) ? 0 : run(&c, ptx, &d, strict, err, sizeof err);
    int mma_line = want_mma ? ln.mma[want_mma - 1] : 0, at_line = want_at == 1 ? ln.store : want_at == 2 ? ln.bug : 0;
    if (mma_line) snprintf(line_a, sizeof line_a, "PTX line %d", mma_line);
    if (at_line) snprintf(line_b, sizeof line_b, "at PTX line %d", at_line);
    check(rc && strstr(err, want) && strstr(err, line_a) && strstr(err, line_b), name,
          "wanted an error with \"%s\" %s %s, got %s: %s", want, line_a, line_b, rc ? "this error" : "success", err);
    if (rc) printf("  %s\n", err);
    data_free(&d);
    free(ptx);
}

static void planted_bugs(void)
{
    Cfg ss = make_cfg(0, AT_F16, 1, 64, LY_SW128, 1, LY_SW128, 1, 0, 4), rs = make_cfg(1, AT_BF16, 1, 64, LY_SW128, 1, LY_SW64, 1, 0, 4);
    Cfg f16acc = make_cfg(0, AT_F16, 0, 32, LY_SW64, 0, LY_INTER, 1, 0, 4);
    planted("planted: accumulator stored before wait_group", ss, BUG_READ_EARLY, 0,
            "wgmma accumulator register %d0 read before wgmma.wait_group", 2, 1);
    planted("planted: f16 accumulator written before wait_group", f16acc, BUG_WRITE_ACC, 0,
            "wgmma accumulator register %d7 written before wgmma.wait_group", 2, 2);
    planted("planted: B overwritten by st.shared while the wgmma is in flight", ss, BUG_SMEM_OVERWRITE, 0,
            "that the in-flight wgmma.mma_async at PTX line", 1, 2);
    planted("planted: RS A fragment register written before wait_group", rs, BUG_A_WRITE, 0,
            "wgmma A-fragment register %a6 written before wgmma.wait_group", 2, 2);
    /* three ways to skip: warp 3 leaves before the others issue (their wait finds it gone), leaves after
     * (its exit is refused), or waits itself (tests/sim/wgmma_skip_warp.ptx) */
    planted("planted: warp 3 skips the mma_async and leaves at once", ss, BUG_SKIP_WARP, 0, "warp 3 exited without", 1, 0);
    planted("planted: warp 3 skips the mma_async and exits while the others wait", ss, BUG_SKIP_EXIT, 0,
            "the warp exits without issuing the wgmma.mma_async", 1, 2);
    planted("planted: warp 3 commits a group the others do not", ss, BUG_GROUP_MISMATCH, 0, "in commit group 1", 0, 0);
    planted("planted: descriptor base offset 1 on a 128B-swizzled tile at row 0", ss, BUG_BASE_OFFSET, 0,
            "but base offset is 1", 1, 0);
    planted("planted: b-desc beyond the CTA's shared memory", ss, BUG_DESC_OOB, 0, "lies outside the CTA's shared memory", 0, 0);
    planted("planted: descriptor differs between lanes", ss, BUG_DESC_DIVERGE, 0, "must be the same in every thread", 0, 0);
    planted("planted: mma_async by 127 of 128 threads", ss, BUG_DIVERGENT, 0, "is .sync.aligned", 0, 0);
    planted("planted: a 96-thread CTA has no whole warpgroup", ss, BUG_SMALL_CTA, 0, "leaves incomplete", 0, 0);
    planted("planted: no wgmma.fence (strict)", ss, BUG_NO_FENCE, 1, "before any wgmma.fence", 1, 0);
    planted("planted: RS fragment touched after the fence (strict)", rs, BUG_FENCE_ORDER, 1,
            "accessed after this warp's last wgmma.fence", 1, 0);
}

int main(int argc, char **argv)
{
    ProbeArgs args = {0};
    if (probe_args(argc, argv, "seed ptx dump device", "test_sim_wgmma [--seed N] [--ptx] [--dump DIR] [--device sim|cuda]",
                   &args))
        return 2;
    if (args.device) device = args.device;
    uint64_t seed = args.seed;
    int show = args.show;
    dump_dir = args.dump;
    Rng r;
    rng_seed(&r, seed);
    if (show) {
        Cfg c = make_cfg(0, AT_F16, 1, 64, LY_SW128, 1, LY_SW64, 0, 0, 4);
        one(&c, &r, 1);
        return 0;
    }
    printf("wgmma on the %s, seed %llu\n", device, (unsigned long long)seed);
    numerics(&r);
    if (!strcmp(device, "sim")) planted_bugs();   /* the sim's refusals; a GPU runs them to whatever they give */
    return check_summary();
}
