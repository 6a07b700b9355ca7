/* The TMA unit (sim.h "units of the async families"): bulk and tensor
 * copies between global and shared memory, issued by one thread each and
 * landing through the async queue (sim_async.c). This file owns dispatch,
 * the per-thread bulk async-groups (commit_group / wait_group), and the two
 * kinds of landing every variant reduces to:
 *  - into shared memory: an image read from global memory at issue lands in
 *    each destination CTA (multicast) at the same offset, swizzled on the
 *    absolute address, then does complete_tx of its bytes on an mbarrier;
 *  - out of shared memory: the source bytes are held from issue, and at the
 *    landing (the bulk group's wait, or when nothing else can run) written
 *    or reduced into global memory.
 * Tensor-map boxes are turned into these in sim_tma_tensor.c, plain byte
 * ranges in sim_tma_bulk.c. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "sim_tma.h"
#include "sim_tmap.h"

void tma_fail(const TmaIssue *x, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sim_fail(x->c, sim_warp_id(x->c, x->w), x->lane, x->in, "%s", msg);
}

SimCta *tma_shared_opnd(const TmaIssue *x, const SimOpnd *o, int cluster_ok, const char *what, uint32_t *lo)
{
    uint64_t a = sim_addr(x->c, x->w, o, x->lane);
    if (a - SIM_SHARED_WINDOW < (1ull << 32)) a -= SIM_SHARED_WINDOW;   /* a generic address of shared memory */
    if (a >= (1ull << 32)) {
        tma_fail(x, "%s 0x%llx is not a shared-memory address", what, (unsigned long long)a);
        return NULL;
    }
    return sim_smem_owner(x->c, x->w, x->lane, x->in, (uint32_t)a, cluster_ok, lo);
}

uint8_t *tma_gptr(const TmaIssue *x, TmaGcache *gc, uint64_t ga, uint32_t len, int kind)
{
    SimBuf *b = gc->buf;
    if (!b || ga < b->base || ga - b->base + len > b->size) b = sim_heap_find(&x->c->sim->heap, ga, len);
    if (!b) {
        char where[160];
        sim_heap_describe(&x->c->sim->heap, ga, where, sizeof where);
        tma_fail(x, "out-of-bounds global %s of %u bytes at 0x%llx (%s)", kind == SIM_ACC_R ? "load" : "store", len,
                 (unsigned long long)ga, where);
        return NULL;
    }
    gc->buf = b;
    sim_pdl_access(x->c, x->w, x->lane, x->in, b, ga, (int)len, kind);
    return b->data + (ga - b->base);
}

void tma_count_gmem(const TmaIssue *x, uint64_t bytes, uint64_t sectors)
{
    SimStats *st = &x->c->sim->stats;
    st->gmem_requests++, st->gmem_bytes += bytes, st->gmem_sectors += sectors;
}

/* ---- bulk async-groups: per thread, committed counts ---- */
/* A store's or reduction's shared source: read until the op completes, which its thread learns only from a
 * wait_group (.read or not) covering the op's group. The words keep the op's serial until then (bop). */
typedef struct { uint32_t lo, bytes, group, serial; int thread, line; } TmaRead;
typedef struct {
    uint32_t *committed;
    TmaRead *reads;                 /* sources no wait_group has covered yet */
    int nreads, capreads;
    uint32_t serials, *bop;         /* per shared word: the serial of the op in reads that reads it, or 0 */
} TmaState;

static TmaState *state(const TmaIssue *x)
{
    SimCta *c = x->c;
    if (!c->tma) {
        TmaState *s = calloc(1, sizeof *s);
        if (s) s->committed = calloc((size_t)c->nwarps * 32, sizeof *s->committed);
        if (!s || !s->committed) {
            free(s);
            tma_fail(x, "out of host memory for the TMA unit's bulk groups");
            return NULL;
        }
        c->tma = s;
    }
    return c->tma;
}

void sim_tma_reset(SimCta *c)
{
    TmaState *s = c->tma;
    if (s) free(s->committed), free(s->reads), free(s->bop);
    free(s);
    c->tma = NULL;
}

static int thread_id(const TmaIssue *x) { return sim_warp_id(x->c, x->w) * 32 + x->lane; }

/* A store's source r, in the thread's open group: its words are read until a wait_group covers the group. */
static int keep_read(const TmaIssue *x, SimRange r, uint32_t group)
{
    TmaState *s = state(x);
    if (!s) return -1;
    if (!s->bop && !(s->bop = calloc(x->c->smem_size / 4 + 1, sizeof *s->bop))) {
        tma_fail(x, "out of host memory for the TMA unit's source records");
        return -1;
    }
    if (s->nreads == s->capreads) {
        int cap = s->capreads ? 2 * s->capreads : 16;
        TmaRead *n = realloc(s->reads, (size_t)cap * sizeof *n);
        if (!n) {
            tma_fail(x, "out of host memory for the TMA unit's source records");
            return -1;
        }
        s->reads = n, s->capreads = cap;
    }
    uint32_t serial = ++s->serials;
    s->reads[s->nreads++] = (TmaRead){r.lo, r.bytes, group, serial, thread_id(x), x->in->line};
    for (uint32_t wd = r.lo / 4; r.bytes && wd <= (r.lo + r.bytes - 1) / 4; wd++) s->bop[wd] = serial;
    return 0;
}

/* The thread waited for its groups below `below`: their sources are read, as of the warp's clock now. A
 * write by another warp must be ordered after this wait (the generic read clocks, sim_mem.c). */
static void reads_done(const TmaIssue *x, uint32_t below)
{
    TmaState *s = state(x);
    if (!s) return;
    SimCta *c = x->c;
    int t = thread_id(x), wid = t / 32, n = 0;
    for (int i = 0; i < s->nreads; i++) {
        TmaRead r = s->reads[i];
        if (r.thread != t || r.group >= below) {
            s->reads[n++] = r;
            continue;
        }
        for (uint32_t wd = r.lo / 4; r.bytes && wd <= (r.lo + r.bytes - 1) / 4; wd++) {
            if (s->bop[wd] == r.serial) s->bop[wd] = 0;
            c->rclk[(size_t)wd * (size_t)c->nwarps + (size_t)wid] = x->w->vc[wid];
        }
    }
    s->nreads = n;
}

int sim_tma_write_ordered(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t wd)
{
    TmaState *s = c->tma;
    if (!s || !s->bop || !s->bop[wd]) return 1;
    for (int i = 0; i < s->nreads; i++)
        if (s->reads[i].serial == s->bop[wd]) {
            sim_fail(c, sim_warp_id(c, w), lane, in,
                     "shared-memory race: overwrites word 0x%x, the source of the bulk store or reduction at PTX line %d "
                     "(thread %d), before that thread's cp.async.bulk.wait_group covered it: the copy may still read it",
                     wd * 4, s->reads[i].line, s->reads[i].thread);
            return 0;
        }
    return 1;
}

/* The unit in the top byte keeps these keys apart from other units' keys. */
uint64_t tma_key(const TmaIssue *x)
{
    return (uint64_t)U_TMA << 56 | (uint64_t)(uint32_t)x->c->rank << 32 | (uint32_t)thread_id(x);
}

uint32_t tma_open_group(const TmaIssue *x)
{
    TmaState *s = state(x);
    return s ? s->committed[thread_id(x)] : 0;
}

static void commit(const TmaIssue *x)
{
    TmaState *s = state(x);
    if (s) s->committed[thread_id(x)]++;
}

/* wait_group N (and .read): every group but the N newest committed ones
 * lands now. Landing does the whole op, which .read does not wait for; the
 * writes only become visible earlier than the ISA promises. */
static void wait_group(const TmaIssue *x)
{
    const SimOpnd *o = &x->in->o[0];   /* a constant N >= 0: sim_form.c */
    TmaState *s = state(x);
    if (!s) return;
    uint32_t n = s->committed[thread_id(x)], keep = (uint32_t)o->imm;
    if (n > keep && sim_async_land_group(x->c->cl, tma_key(x), n - keep) >= 0) reads_done(x, n - keep);
}

/* ---- images landing in shared memory ---- */
/* Calls fn for each stretch of an image of bytes placed at shared offset lo
 * under a swizzle: 16-byte chunks move within their 128-byte row by the
 * absolute address, so the stretches are the chunks, merged where they stay
 * contiguous (the whole image when unswizzled). */
typedef int (*PieceFn)(void *ctx, uint32_t at, uint32_t off, uint32_t len);
static int each_piece(uint32_t lo, uint32_t bytes, int swizzle, PieceFn fn, void *ctx)
{
    uint32_t at = 0, off = 0, len = 0;
    for (uint32_t o = 0; o < bytes; o += 16) {
        uint32_t n = bytes - o < 16 ? bytes - o : 16, a = sim_tmap_swizzle(swizzle, lo + o);
        if (len && a == at + len && o == off + len) { len += n; continue; }
        int rc = len ? fn(ctx, at, off, len) : 0;
        if (rc) return rc;
        at = a, off = o, len = n;
    }
    return len ? fn(ctx, at, off, len) : 0;
}

typedef struct { uint32_t lo, hi; } Span;
static int widen(void *ctx, uint32_t at, uint32_t off, uint32_t len)
{
    Span *s = ctx;
    (void)off;
    if (at < s->lo) s->lo = at;
    if (at + len > s->hi) s->hi = at + len;
    return 0;
}

/* The shared bytes an image covers: what the queue marks in flight or held. */
static SimRange covered(SimCta *c, uint32_t lo, uint32_t bytes, int swizzle)
{
    Span s = {UINT32_MAX, 0};
    each_piece(lo, bytes, swizzle, widen, &s);
    return (SimRange){c, s.lo, s.hi - s.lo};
}

typedef struct { const TmaIssue *x; SimCta *c; } CheckCtx;
static int check_dst_piece(void *ctx, uint32_t at, uint32_t off, uint32_t len)
{
    CheckCtx *k = ctx;
    (void)off;
    return !sim_async_check_dst(k->x->c, k->x->w, k->x->lane, k->x->in, k->c, at, len);
}

static int check_src_piece(void *ctx, uint32_t at, uint32_t off, uint32_t len)
{
    CheckCtx *k = ctx;
    (void)off;
    return !sim_async_check_src(k->x->c, k->x->w, k->x->lane, k->x->in, k->c, at, len);
}

/* mbarrier rules of cp.async.bulk{.tensor} (PTX ISA): without multicast the
 * mbarrier sits in the destination CTA, or with .cta_group::2 in it or its
 * peer of the pair; with multicast each destination's signal goes to the
 * mbarrier at the same offset in that CTA (.cta_group::1), or with
 * .cta_group::2 in that CTA or its peer, whichever has the parity of the
 * rank whose shared memory mbar names. */
static SimCta *signal_cta(const TmaIssue *x, SimCta *dst, SimCta *bar, int multicast)
{
    int pair = x->in->d.cta_group == 2;
    SimCluster *cl = x->c->cl;
    if (!multicast) {
        if (bar == dst || (pair && (bar->rank >> 1) == (dst->rank >> 1))) return bar;
        tma_fail(x, "the mbarrier is in CTA rank %d but the destination in CTA rank %d: %s", bar->rank, dst->rank,
                 pair ? ".cta_group::2 lets it be in the destination CTA or its peer of the pair only"
                 : x->in->d.op == I_ST_ASYNC ? "it must be in the destination CTA"
                                             : "it must be in the destination CTA (.cta_group::2 would allow the peer of the pair)");
        return NULL;
    }
    if (!pair) return dst;
    int r = (dst->rank & ~1) | (bar->rank & 1);
    if (r >= cl->n) {
        tma_fail(x, ".cta_group::2 multicast to CTA rank %d signals rank %d (the parity of the mbarrier's CTA), which the "
                 "%d-CTA cluster lacks", dst->rank, r, cl->n);
        return NULL;
    }
    return &cl->cta[r];
}

int tma_load_dests(const TmaIssue *x, const SimOpnd *dst, const SimOpnd *mbar, const SimOpnd *mask, uint32_t align,
                   TmaDests *d)
{
    int cluster = x->in->d.space[0] == SP_SHARED_CLUSTER;
    uint32_t lo, blo;
    SimCta *dc = tma_shared_opnd(x, dst, cluster, "the destination", &lo);
    SimCta *bc = dc ? tma_shared_opnd(x, mbar, 1, "the mbarrier", &blo) : NULL;
    if (!bc) return -1;
    if (lo % align) {
        tma_fail(x, "the destination shared 0x%x is not %u-byte aligned (%s)", lo, align,
                 x->in->d.op == I_ST_ASYNC ? "st.async stores at an address aligned to the value's size"
                 : align == 128 ? "a tensor copy's box starts on 128 bytes in shared memory; an H200 faults with a "
                                  "misaligned address otherwise" : "bulk copies move 16-byte aligned data");
        return -1;
    }
    if (blo % 8) {
        tma_fail(x, "the mbarrier address shared 0x%x is not 8-byte aligned", blo);
        return -1;
    }
    uint32_t m = 1u << dc->rank;
    if (mask) {
        m = (uint16_t)sim_read(x->c, x->w, mask, x->lane);
        if (!m) {
            tma_fail(x, "ctaMask 0x0000 names no destination CTA");
            return -1;
        }
    }
    d->n = 0, d->lo = lo, d->bar_lo = blo, d->hold = (SimRange){0};
    for (int r = 0; r < TMA_MAX_DESTS; r++) {
        if (!(m >> r & 1)) continue;
        if (r >= x->c->cl->n) {
            tma_fail(x, "ctaMask 0x%04x names CTA rank %d; the cluster has %d CTA%s", m, r, x->c->cl->n,
                     x->c->cl->n == 1 ? "" : "s");
            return -1;
        }
        SimCta *t = mask ? &x->c->cl->cta[r] : dc, *b = signal_cta(x, t, bc, mask != NULL);
        if (!b) return -1;
        if (!sim_mbar_at(b, blo)) {
            tma_fail(x, "the mbarrier at shared 0x%x of CTA rank %d, which this copy signals, is used before mbarrier.init",
                     blo, b->rank);
            return -1;
        }
        d->dst[d->n] = t, d->bar[d->n] = b, d->n++;
    }
    return 0;
}

/* One image shared by the ops of a multicast, freed with the last. */
typedef struct {
    int refs;
    uint32_t lo, bytes;
    int swizzle;
    const SimInsn *in;
    uint8_t *data;
} Image;

static void drop_image(SimAsync *op)
{
    Image *m = op->payload;
    if (--m->refs == 0) free(m->data), free(m);
}

typedef struct { SimCta *c; const Image *m; } CopyCtx;
static int copy_piece(void *ctx, uint32_t at, uint32_t off, uint32_t len)
{
    CopyCtx *k = ctx;
    memcpy(k->c->smem + at, k->m->data + off, len);
    sim_async_mark_landed(k->c, at, len);
    return 0;
}

static int land_image(SimCluster *cl, SimAsync *op)
{
    (void)cl;
    Image *m = op->payload;
    CopyCtx k = {op->dst[0].cta, m};
    each_piece(m->lo, m->bytes, m->swizzle, copy_piece, &k);
    SimMbar *b = sim_mbar_at(op->bar_cta, op->bar_addr);
    if (!b) {
        sim_fail(op->cta, op->warp, op->lane, m->in, "the mbarrier at shared 0x%x of CTA rank %d, which the %s signals, "
                 "was invalidated before the copy landed", op->bar_addr, op->bar_cta->rank, op->what);
        return -1;
    }
    sim_mbar_tx(op->bar_cta, b, -(int64_t)m->bytes);
    return 0;
}

/* An mbarrier's 8 bytes are its state: a copy landing on them is a bug
 * the byte flags cannot see (init marks them written). */
static int over_mbarrier(const TmaIssue *x, SimCta *dc, SimRange r)
{
    for (int i = 0; i < dc->nmbar; i++)
        if (dc->mbar[i].addr < r.lo + r.bytes && r.lo < dc->mbar[i].addr + 8) {
            tma_fail(x, "the copy's destination (shared 0x%x..0x%x of CTA rank %d) overlaps the mbarrier at 0x%x "
                     "(initialised at PTX line %d)", r.lo, r.lo + r.bytes - 1, dc->rank, dc->mbar[i].addr,
                     dc->mbar[i].init_line);
            return 1;
        }
    return 0;
}

int tma_load_push(const TmaIssue *x, const TmaDests *d, uint8_t *image, uint32_t bytes, int swizzle, const char *what)
{
    for (int i = 0; i < d->n; i++) {
        CheckCtx k = {x, d->dst[i]};
        if (each_piece(d->lo, bytes, swizzle, check_dst_piece, &k) || x->c->failed ||
            over_mbarrier(x, d->dst[i], covered(d->dst[i], d->lo, bytes, swizzle))) {
            free(image);
            return -1;
        }
    }
    Image *m = malloc(sizeof *m);
    if (!m) {
        free(image);
        tma_fail(x, "out of host memory for a %s", what);
        return -1;
    }
    *m = (Image){.lo = d->lo, .bytes = bytes, .swizzle = swizzle, .in = x->in, .data = image};
    for (int i = 0; i < d->n; i++) {
        SimAsync *op = sim_async_new(x->c, x->w, x->lane, x->in, what);
        if (!op) break;
        m->refs++;
        /* mbarrier ops are in no bulk group: a group index no wait_group reaches */
        op->key = tma_key(x), op->group = UINT32_MAX;
        op->bar_cta = d->bar[i], op->bar_addr = d->bar_lo;
        op->dst[0] = covered(d->dst[i], d->lo, bytes, swizzle), op->ndst = 1;
        if (d->hold.cta) op->src[0] = d->hold, op->nsrc = 1;
        op->land = land_image, op->drop = drop_image, op->payload = m;
        if (sim_async_push(x->c->cl, op)) return -1;   /* push dropped the op */
    }
    if (!m->refs) free(image), free(m);
    return x->c->failed ? -1 : 0;
}

/* ---- shared bytes landing in global memory ---- */
int tma_store_add(const TmaIssue *x, TmaStore *st, uint64_t gaddr, uint32_t off, uint32_t len)
{
    TmaRun *last = st->n ? &st->runs[st->n - 1] : NULL;
    if (last && last->gaddr + last->len == gaddr && last->off + last->len == off) {
        last->len += len;
        return 0;
    }
    if (st->n == st->cap) {
        int cap = st->cap ? 2 * st->cap : 64;
        TmaRun *r = realloc(st->runs, (size_t)cap * sizeof *r);
        if (!r) {
            tma_fail(x, "out of host memory for a bulk store");
            return -1;
        }
        st->runs = r, st->cap = cap;
    }
    st->runs[st->n++] = (TmaRun){gaddr, off, len};
    return 0;
}

int tma_reduce_ok(const TmaIssue *x, int redop, int type)
{
    int bits = isa_type_bits(type), fl = isa_type_is_float(type), half = type == T_F16 || type == T_BF16;
    int ok = 0;
    switch (redop) {
    case RO_ADD: ok = half || type == T_F32 || type == T_F64 || type == T_U32 || type == T_S32 || type == T_U64; break;
    case RO_MIN: case RO_MAX: ok = half || type == T_U32 || type == T_S32 || type == T_U64 || type == T_S64; break;
    case RO_INC: case RO_DEC: ok = type == T_U32; break;
    case RO_AND: case RO_OR: case RO_XOR: ok = !fl && (bits == 32 || bits == 64); break;
    }
    if (!ok)
        tma_fail(x, "a bulk reduction .%s on %s elements is not one the ISA allows into global memory",
                 redop == RO_ADD ? "add" : redop == RO_MIN ? "min" : redop == RO_MAX ? "max" : redop == RO_INC ? "inc"
                 : redop == RO_DEC ? "dec" : redop == RO_AND ? "and" : redop == RO_OR ? "or" : redop == RO_XOR ? "xor" : "(none)",
                 type == T_NONE ? "untyped" : bits ? (fl ? "floating-point" : "integer") : "these");
    return ok;
}

typedef struct {
    TmaStore st;
    uint32_t lo, bytes;
    int swizzle;
    const SimInsn *in;
} Store;

static void drop_store(SimAsync *op)
{
    Store *s = op->payload;
    free(s->st.runs), free(s);
}

static uint32_t ftz32(uint32_t v) { return (v & 0x7F800000u) ? v : v & 0x80000000u; }

static void reduce_elems(const Store *s, uint8_t *g, const uint8_t *src, uint32_t len)
{
    int w = isa_type_bits(s->st.type) / 8;
    for (uint32_t i = 0; i + (uint32_t)w <= len; i += (uint32_t)w) {
        uint64_t old = 0, v = 0;
        memcpy(&old, g + i, (size_t)w), memcpy(&v, src + i, (size_t)w);
        int ftz = s->st.ftz && s->st.type == T_F32;
        if (ftz) old = ftz32((uint32_t)old), v = ftz32((uint32_t)v);
        uint64_t r = sim_red_apply(s->st.type, s->st.redop, old, v, 0, w);
        if (ftz) r = ftz32((uint32_t)r);
        memcpy(g + i, &r, (size_t)w);
    }
}

static int land_store(SimCluster *cl, SimAsync *op)
{
    Store *s = op->payload;
    SimCta *c = op->src[0].cta;
    for (int i = 0; i < s->st.n; i++) {
        const TmaRun *r = &s->st.runs[i];
        SimBuf *b = sim_heap_find(&cl->sim->heap, r->gaddr, r->len);
        if (!b) {   /* checked at issue; only a buffer freed mid-launch gets here */
            sim_fail(op->cta, op->warp, op->lane, s->in, "the %s's global bytes at 0x%llx are gone when it lands", op->what,
                     (unsigned long long)r->gaddr);
            return -1;
        }
        uint8_t *g = b->data + (r->gaddr - b->base);
        /* a run may cross 16-byte chunks, which the swizzle moves apart */
        for (uint32_t k = 0; k < r->len;) {
            uint32_t off = r->off + k, n = 16 - off % 16;
            if (n > r->len - k) n = r->len - k;
            const uint8_t *src = c->smem + sim_tmap_swizzle(s->swizzle, s->lo + off);
            if (s->st.redop) reduce_elems(s, g + k, src, n);
            else memcpy(g + k, src, n);
            k += n;
        }
    }
    return 0;
}

int tma_store_push(const TmaIssue *x, TmaStore *st, uint32_t lo, uint32_t bytes, int swizzle, const char *what)
{
    CheckCtx k = {x, x->c};
    Store *s = NULL;
    SimAsync *op = NULL;
    if (each_piece(lo, bytes, swizzle, check_src_piece, &k) || x->c->failed) goto fail;
    s = malloc(sizeof *s);
    op = s ? sim_async_new(x->c, x->w, x->lane, x->in, what) : NULL;
    if (!op) {
        if (!s) tma_fail(x, "out of host memory for a %s", what);
        goto fail;
    }
    uint64_t moved = 0, sectors = 0;
    for (int i = 0; i < st->n; i++) moved += st->runs[i].len, sectors += sectors_of(st->runs[i].gaddr, st->runs[i].len);
    tma_count_gmem(x, moved, sectors);
    *s = (Store){.st = *st, .lo = lo, .bytes = bytes, .swizzle = swizzle, .in = x->in};
    st->runs = NULL;
    op->key = tma_key(x), op->group = tma_open_group(x);
    op->src[0] = covered(x->c, lo, bytes, swizzle), op->nsrc = 1;
    op->land = land_store, op->drop = drop_store, op->payload = s;
    if (keep_read(x, op->src[0], op->group)) {
        drop_store(op), free(op);
        return -1;
    }
    return sim_async_push(x->c->cl, op);
fail:
    free(s), free(st->runs);
    st->runs = NULL;
    return -1;
}

/* clusterlaunchcontrol.try_cancel: the 16-byte response lands in this CTA's shared memory (.multicast::cluster::all:
 * at the same offset in every CTA of the cluster) and completes 16 bytes on the mbarrier there, as a copy does.
 * The sim cancels no cluster: every response says the request failed (bit 0 clear), which the ISA allows at any
 * time (a kernel must handle it: it then ends, and every cluster of the grid runs its own launch). */
static int clc_try_cancel(const TmaIssue *x)
{
    SimOpnd all = {.kind = SO_IMM, .reg2 = -1, .imm = (int64_t)((1u << x->c->cl->n) - 1)};
    TmaDests d;
    if (tma_load_dests(x, &x->in->o[0], &x->in->o[1], (x->in->d.flags & F_MULTICAST) ? &all : NULL, 16, &d)) return -1;
    uint8_t *response = calloc(1, 16);
    if (!response) {
        tma_fail(x, "out of host memory for a try_cancel response");
        return -1;
    }
    return tma_load_push(x, &d, response, 16, 0, "a cluster launch control response (clusterlaunchcontrol.try_cancel)");
}

/* st.async: the thread's value (4 to 16 bytes: a register or a vector of them) lands in the shared memory of a CTA
 * of the cluster, a peer or its own (an H200 runs both: tests/sim/st_async.ptx and st_async_own.ptx), and completes
 * its bytes on the mbarrier there (PTX ISA st.async: the address aligned to the value's size, the mbarrier in the
 * destination's CTA). Modelled as a copy into shared memory whose source is the thread's registers, read as it
 * issues. */
static int st_async(const TmaIssue *x)
{
    const SimInsn *in = x->in;
    const SimOpnd *v = &in->o[1];
    int width = isa_type_bits(in->d.type[in->d.ntype - 1]) / 8, n = v->kind == SO_VEC ? v->n : 1;
    uint32_t bytes = (uint32_t)(width * n);
    TmaDests d;
    if (!x->c->cl->explicit_launch) {   /* the one such kernel run here (BENCHMARKS.md, 2026-11-29) did not run */
        tma_fail(x, "st.async in a launch without cluster dimensions is not modelled by the sim: the one kernel run so "
                 "on an H200 stopped with CUDA_ERROR_ILLEGAL_INSTRUCTION (launch it with a cluster, as tests/sim "
                 "st_async_own.ptx is)");
        return -1;
    }
    if (tma_load_dests(x, &in->o[0], &in->o[2], NULL, bytes, &d)) return -1;
    uint8_t *img = malloc(bytes);
    if (!img) {
        tma_fail(x, "out of host memory for st.async");
        return -1;
    }
    for (int k = 0; k < n; k++) {
        SimOpnd e = v->kind == SO_VEC ? sim_vec_elem(x->c->f, v, k) : *v;
        uint64_t val = sim_read(x->c, x->w, &e, x->lane);
        memcpy(img + width * k, &val, (size_t)width);   /* little-endian, as the registers' bytes */
    }
    return tma_load_push(x, &d, img, bytes, 0, "asynchronous store (st.async)");
}

/* ---- dispatch ---- */
int sim_tma(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    switch (in->d.op) {
    case I_BULK_TENSOR: case I_REDUCE_BULK_TENSOR: case I_BULK: case I_REDUCE_BULK: case I_BULK_COMMIT:
    case I_BULK_WAIT: case I_PREFETCH_TENSORMAP: case I_PREFETCH_TENSOR: case I_CLC_TRY_CANCEL: case I_ST_ASYNC: break;
    default: return 0;
    }
    /* each thread issues its own copy, as on the hardware */
    for (int l = 0; l < 32 && !c->failed; l++) {
        if (!(exec >> l & 1)) continue;
        TmaIssue x = {c, w, l, in};
        switch (in->d.op) {
        case I_BULK_TENSOR: case I_REDUCE_BULK_TENSOR: tma_tensor(&x); break;
        case I_BULK: case I_REDUCE_BULK: tma_bulk(&x); break;
        case I_BULK_COMMIT: commit(&x); break;
        case I_BULK_WAIT: wait_group(&x); break;
        case I_PREFETCH_TENSOR: tma_prefetch_tensor(&x); break;
        case I_CLC_TRY_CANCEL: clc_try_cancel(&x); break;
        case I_ST_ASYNC: st_async(&x); break;
        default: tma_prefetch_map(&x); break;
        }
    }
    return 1;
}
