/* Tensor copies (PTX ISA cp.async.bulk.tensor, cp.reduce.async.bulk.tensor,
 * prefetch.tensormap): the tensor-map operand is decoded (the sim's own
 * encoding, sim_tmap.h), the box walked, and the result handed to the unit's
 * landings (sim_tma.c): a load's image into shared memory, a store's or
 * reduction's runs into global memory. Out-of-bound elements are filled
 * (zero, or NaN per the map's oobFill) on a load and skipped on a store. */
#include <stdlib.h>
#include <string.h>
#include "sim_tma.h"
#include "sim_tmap.h"

/* The 128-byte map at the operand's address: a .param symbol, a generic
 * address in the parameter window (cvta.param) or global memory. */
static int fetch_map(const TmaIssue *x, const SimOpnd *o, SimTmap *t)
{
    SimCta *c = x->c;
    uint64_t a = sim_addr(c, x->w, o, x->lane);
    const uint8_t *p = NULL;
    const char *where = "global";
    int param = o->space == SPACE_PARAM && o->reg < 0;
    if (!param && a - SIM_PARAM_WINDOW < (1ull << 32)) a -= SIM_PARAM_WINDOW, param = 1;
    if (param) {
        where = "parameter offset";
        if (a % 64 || a + TMAP_BYTES > (uint64_t)c->f->param_bytes) {
            tma_fail(x, "the tensor map at parameter offset %llu is %s (the kernel has %d bytes of parameters)",
                     (unsigned long long)a, a % 64 ? "not 64-byte aligned" : "outside the parameters", c->f->param_bytes);
            return -1;
        }
        p = c->params + a;
    } else if (a - SIM_SHARED_WINDOW < (1ull << 32)) {
        tma_fail(x, "the tensor map operand 0x%llx is not a generic address of .param or .global memory (the ISA "
                 "takes the map from .param, .const or .global)", (unsigned long long)a);
        return -1;
    } else {
        TmaGcache gc = {0};
        if (a % 64) {
            tma_fail(x, "the tensor map at global 0x%llx is not 64-byte aligned", (unsigned long long)a);
            return -1;
        }
        if (!(p = tma_gptr(x, &gc, a, TMAP_BYTES, SIM_ACC_R))) return -1;
    }
    char err[320];
    if (sim_tmap_decode(p, t, err, sizeof err)) {
        tma_fail(x, "the tensor map at %s 0x%llx is not one the sim encoded (dev_tmap_encode): %s", where,
                 (unsigned long long)a, err);
        return -1;
    }
    return 0;
}

/* The signed 32-bit coordinates of [map, {c0, ...}]: .dim of them, or 5 for .tile::gather4 (sim_form.c). */
static void coords(const TmaIssue *x, const SimOpnd *o, int32_t *out)
{
    SimOpnd v = {.kind = SO_VEC, .reg = o->reg2};
    for (int k = 0; k < o->n; k++) {
        SimOpnd e = sim_vec_elem(x->c->f, &v, k);
        out[k] = (int32_t)sim_read(x->c, x->w, &e, x->lane);
    }
}

/* The box's start along the innermost dimension must sit on 16 bytes: an
 * H200 raises an illegal-instruction fault for a load or store starting
 * 4, 8 or 12 bytes off (in bounds or not), which the ISA does not spell out. */
static int inner_aligned(const TmaIssue *x, const SimTmap *t, int32_t c0)
{
    int64_t bytes = (int64_t)c0 * t->elem_bytes;
    if (t->interleave != TMAP_IL_NONE || bytes % 16 == 0) return 0;
    tma_fail(x, "the innermost coordinate %d of %d-byte elements starts the box %lld bytes off a 16-byte boundary: "
             "the hardware faults (illegal instruction) unless coordinate 0 times the element size is a multiple of 16",
             c0, t->elem_bytes, (long long)(bytes % 16 + 16) % 16);
    return -1;
}

/* The map's rank and coordinates against .dim and .tile::gather4. */
static int box_coords(const TmaIssue *x, const SimTmap *t, const SimOpnd *o, int32_t *c)
{
    int gather = (x->in->d.flags & F_GATHER4) != 0;
    if (x->in->d.dim != t->rank) {
        tma_fail(x, ".%dd copy with a rank-%d tensor map", x->in->d.dim, t->rank);
        return -1;
    }
    if (gather) {
        char err[200];
        if (sim_tmap_gather4_check(t, err, sizeof err)) {
            tma_fail(x, "%s", err);
            return -1;
        }
    }
    coords(x, o, c);
    return inner_aligned(x, t, c[0]);
}

static uint32_t image_bytes(const TmaIssue *x, const SimTmap *t)
{
    return (x->in->d.flags & F_GATHER4) ? sim_tmap_gather4_bytes(t) : sim_tmap_box_bytes(t);
}

static int walk(const TmaIssue *x, const SimTmap *t, const int32_t *c, SimTmapVisit fn, void *ctx)
{
    return (x->in->d.flags & F_GATHER4) ? sim_tmap_gather4_walk(t, c[0], c + 1, fn, ctx) : sim_tmap_box_walk(t, c, fn, ctx);
}

/* A box starts on 128 bytes in shared memory (an H200 faults with a
 * misaligned address otherwise). A swizzled box may start inside its
 * pattern's repeat (256, 512, 1024 bytes for 32B, 64B, 128B): an H200 then
 * swizzles the absolute address, as the sim does, so its rows land permuted
 * relative to the box's start. Legal, but a kernel that takes the start for
 * the pattern's origin reads the box scrambled: a note. A tile::gather4
 * writes four rows, less than a 128B pattern, so a tile of gathered rows is
 * built from gathers that start every four rows inside it: no note then. */
enum { BOX_ALIGN = 128 };
static int swizzle_start_note(const TmaIssue *x, const SimTmap *t, uint32_t lo)
{
    uint32_t rep = 128u << t->swizzle, four_rows = 4u * t->box[0] * (uint32_t)t->elem_bytes;
    if (!t->swizzle || lo % rep == 0) return 0;
    if ((x->in->d.flags & F_GATHER4) && (lo % rep) % four_rows == 0) return 0;
    sim_note(x->c, sim_warp_id(x->c, x->w), x->in, "tma swizzle origin",
             "a %uB-swizzled box starts at shared 0x%x, %u bytes into its %u-byte swizzle pattern: the hardware "
             "swizzles the absolute address, so the box's rows land permuted relative to its start (descriptors "
             "and ld.shared must follow the absolute pattern)", 16u << t->swizzle, lo, lo % rep, rep);
    return x->c->failed ? -1 : 0;
}

/* ---- global -> shared ---- */
typedef struct { const TmaIssue *x; TmaGcache gc; uint8_t *img; int eb, nan; uint64_t bytes, sectors, last; } LoadWalk;

static int load_elem(void *ctx, int in_bounds, uint64_t ga, uint32_t off)
{
    LoadWalk *k = ctx;
    if (!in_bounds) {
        /* OOB fill: zero, or NaN, which an H200 writes as 0x7FF7 in every 16 bits of the element (f16,
         * bf16: 0x7FF7; f32: 0x7FF77FF7; f64: 0x7FF77FF77FF77FF7), a NaN in each float type */
        for (int i = 0; i < k->eb; i++) k->img[off + (uint32_t)i] = k->nan ? (i & 1 ? 0x7F : 0xF7) : 0;
        return 0;
    }
    const uint8_t *p = tma_gptr(k->x, &k->gc, ga, (uint32_t)k->eb, SIM_ACC_R);
    if (!p) return -1;
    memcpy(k->img + off, p, (size_t)k->eb);
    k->bytes += (uint64_t)k->eb;
    if (ga / 32 + 1 != k->last) k->sectors++, k->last = ga / 32 + 1;   /* elements walk rows in order */
    return 0;
}

static int tensor_load(const TmaIssue *x)
{
    const SimInsn *in = x->in;
    const SimOpnd *mask = (in->d.flags & F_MULTICAST) ? &in->o[3] : NULL;   /* the form: sim_form.c */
    SimTmap t;
    int32_t c[TMAP_MAX_RANK];
    TmaDests d;
    if (fetch_map(x, &in->o[1], &t) || box_coords(x, &t, &in->o[1], c) ||
        tma_load_dests(x, &in->o[0], &in->o[2], mask, BOX_ALIGN, &d) || swizzle_start_note(x, &t, d.lo))
        return -1;
    uint32_t bytes = image_bytes(x, &t);
    if ((uint64_t)d.lo + bytes > d.dst[0]->smem_size) {   /* before the image is built: a box may be huge */
        tma_fail(x, "the %u-byte box at shared 0x%x runs past the CTA's %u bytes of shared memory", bytes, d.lo,
                 d.dst[0]->smem_size);
        return -1;
    }
    LoadWalk k = {x, {0}, malloc(bytes), t.elem_bytes, t.oobfill == 1, 0, 0, 0};
    if (!k.img) {
        tma_fail(x, "out of host memory for a %u-byte box", bytes);
        return -1;
    }
    if (walk(x, &t, c, load_elem, &k)) {
        free(k.img);
        return -1;
    }
    tma_count_gmem(x, k.bytes, k.sectors);
    return tma_load_push(x, &d, k.img, bytes, t.swizzle, "TMA load (cp.async.bulk.tensor)");
}

/* ---- shared -> global ---- */
enum { TMAP_DT_F32_FTZ = 10 };   /* CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ */

/* The map's data type as the element type of a reduction (T_NONE: none). */
static int elem_type(const SimTmap *t)
{
    static const uint8_t kType[] = {T_U8, T_U16, T_U32, T_S32, T_U64, T_S64, T_F16, T_F32, T_F64, T_BF16, T_F32, T_TF32, T_TF32};
    return t->dtype >= 0 && t->dtype < (int)sizeof kType ? kType[t->dtype] : T_NONE;
}

typedef struct { const TmaIssue *x; TmaGcache gc; TmaStore *st; int eb; } StoreWalk;

static int store_elem(void *ctx, int in_bounds, uint64_t ga, uint32_t off)
{
    StoreWalk *k = ctx;
    if (!in_bounds) return 0;
    if (!tma_gptr(k->x, &k->gc, ga, (uint32_t)k->eb, k->st->redop != RO_NONE ? SIM_ACC_RW : SIM_ACC_W)) return -1;
    return tma_store_add(k->x, k->st, ga, off, (uint32_t)k->eb);
}

static int tensor_store(const TmaIssue *x, int reduce)
{
    const SimInsn *in = x->in;
    if (in->d.flags & F_GATHER4) {
        tma_fail(x, "only .tile tensor stores and reductions are modelled by the sim");
        return -1;
    }
    SimTmap t;
    int32_t c[TMAP_MAX_RANK];
    uint32_t lo;
    if (fetch_map(x, &in->o[0], &t) || box_coords(x, &t, &in->o[0], c) ||
        !tma_shared_opnd(x, &in->o[1], 0, "the source", &lo))
        return -1;
    for (int i = 0; i < t.rank; i++)
        if (c[i] < 0) {
            tma_fail(x, "coordinate %d is %d: the ISA requires a store's box to start at non-negative coordinates", i, c[i]);
            return -1;
        }
    if (lo % BOX_ALIGN) {
        tma_fail(x, "the source shared 0x%x is not %d-byte aligned (a tensor copy's box starts on 128 bytes in shared "
                 "memory; an H200 faults with a misaligned address otherwise)", lo, BOX_ALIGN);
        return -1;
    }
    if (swizzle_start_note(x, &t, lo)) return -1;
    TmaStore st = {.redop = reduce ? in->d.redop : RO_NONE, .type = elem_type(&t), .ftz = t.dtype == TMAP_DT_F32_FTZ};
    if (reduce && !tma_reduce_ok(x, st.redop, st.type)) return -1;
    uint32_t bytes = image_bytes(x, &t);
    if ((uint64_t)lo + bytes > x->c->smem_size) {
        tma_fail(x, "the %u-byte box at shared 0x%x runs past the CTA's %u bytes of shared memory", bytes, lo,
                 x->c->smem_size);
        return -1;
    }
    StoreWalk k = {x, {0}, &st, t.elem_bytes};
    if (walk(x, &t, c, store_elem, &k)) {
        free(st.runs);
        return -1;
    }
    return tma_store_push(x, &st, lo, bytes, t.swizzle,
                          reduce ? "TMA reduce (cp.reduce.async.bulk.tensor)" : "TMA store (cp.async.bulk.tensor)");
}

/* The direction, its completion mechanism and the operands were checked at parse (sim_form.c), but for .im2col's,
 * whose copies are refused here. */
int tma_tensor(const TmaIssue *x)
{
    const IsaInsn *d = &x->in->d;
    if (d->flags & F_IM2COL) {
        tma_fail(x, ".im2col tensor copies are not modelled by the sim");
        return -1;
    }
    if (d->space[0] == SP_GLOBAL) return tensor_store(x, d->op == I_REDUCE_BULK_TENSOR);
    return tensor_load(x);
}

/* A hint to the hardware; here it checks that a map the sim encoded is there. */
int tma_prefetch_map(const TmaIssue *x)
{
    SimTmap t;
    return fetch_map(x, &x->in->o[0], &t);
}

/* cp.async.bulk.prefetch.tensor: a tile into L2, which changes no result; here the map and its rank are checked
 * (a box's coordinates may lie anywhere, as a load's may). */
int tma_prefetch_tensor(const TmaIssue *x)
{
    SimTmap t;
    if (fetch_map(x, &x->in->o[0], &t)) return -1;
    if (x->in->d.dim == t.rank) return 0;
    tma_fail(x, ".%dd prefetch with a rank-%d tensor map", x->in->d.dim, t.rank);
    return -1;
}
