/* A launch record on the sim: check the record against the PTX entry,
 * place the matrices at their recorded addresses, fill fresh inputs, poison
 * the output, write the sim's tensor maps over the tags, launch with the
 * recorded geometry, and compare with the float64 reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hostdata.h"
#include "record_run.h"
#include "ref.h"
#include "sim_tmap.h"

enum { DT_TMAP_F16 = 6, DT_TMAP_F32 = 7, DT_TMAP_BF16 = 9 };   /* CUtensorMapDataType */
static const double kTol = 1e-3;   /* f32 outputs: per element (relative to 1 + |want|) and relative L2 */

/* ---- the record against the PTX ---- */
static int check_params(const SimFunc *f, const LaunchRecord *r, char *err, size_t errlen)
{
    for (int i = 0; i < r->nparams; i++) {
        const RecParam *q = &r->param[i];
        if (q->offset + q->size > f->param_bytes)
            return snprintf(err, errlen, "record params[%d] (index %d): offset %d + size %d runs past the end of the entry's "
                            "%d-byte parameter space", i, q->index, q->offset, q->size, f->param_bytes), 2;
        if (q->index >= f->nparams)
            return snprintf(err, errlen, "record params[%d] has index %d; the entry has %d parameters", i, q->index, f->nparams), 2;
        const SimParam *p = &f->params[q->index];
        if (p->offset != q->offset || p->bytes != q->size)
            return snprintf(err, errlen, "record params[%d] (index %d) is %d bytes at offset %d; the entry declares %s as %d bytes "
                            "at offset %d", i, q->index, q->size, q->offset, p->name, p->bytes, p->offset), 2;
    }
    if (r->nparams != f->nparams)
        return snprintf(err, errlen, "the record gives %d parameters; the entry takes %d", r->nparams, f->nparams), 2;
    return 0;
}

static int check_types(const RecGemm *g, char *err, size_t errlen)
{
    const RecMatrix *in[] = {&g->a, &g->b};
    for (int i = 0; i < 2; i++)
        if (in[i]->dtype == DT_TMAP_F32)
            return snprintf(err, errlen, "%c is f32; the GEMM runner takes f16 or bf16 A and B", in[i]->name), 2;
    if (g->d.dtype == DT_TMAP_BF16)
        return snprintf(err, errlen, "D is bf16: neither exact (integer inputs) nor judged at f32 tolerance"), 2;
    return 0;
}

/* ---- matrices ---- */
static long elem_index(const RecMatrix *m, long r, long c) { return m->col_major ? r + c * m->rows : r * m->cols + c; }

static void put_elem(const RecMatrix *m, uint8_t *base, long r, long c, float v)
{
    uint8_t *p = base + elem_index(m, r, c) * m->elem_bytes;
    uint32_t u = m->dtype == DT_TMAP_F32 ? f32_bits(v) : m->dtype == DT_TMAP_F16 ? f32_to_fp16(v) : f32_to_bf16(v);
    memcpy(p, &u, (size_t)m->elem_bytes);   /* little-endian host: the low bytes */
}

static float get_elem(const RecMatrix *m, const uint8_t *base, long r, long c, uint32_t *bits)
{
    uint32_t u = 0;
    memcpy(&u, base + elem_index(m, r, c) * m->elem_bytes, (size_t)m->elem_bytes);
    if (bits) *bits = u;
    return m->dtype == DT_TMAP_F32 ? bits_f32(u) : m->dtype == DT_TMAP_F16 ? fp16_to_f32((uint16_t)u) : bf16_to_f32((uint16_t)u);
}

int rr_exact(const RecGemm *g) { return g->d.dtype == DT_TMAP_F16; }

void rr_describe_inputs(const LaunchRecord *r, char *out, size_t cap)
{
    if (rr_exact(&r->gemm))
        snprintf(out, cap, "A, B in {-1, +1}; C odd integers in [-9, 9] (every sum exact in f16; beta*C is never an "
                 "integer, so every element must change)");
    else
        snprintf(out, cap, "A, B uniform in [-1, 1) rounded to their type; C uniform in [-1, 1)");
}

/* Fills m with fresh values (exact: odd integers for C, +-1 otherwise) and
 * keeps their rounded values dense row-major in host. */
static void fill(const RecMatrix *m, uint8_t *base, Rng *rng, int exact, float *host)
{
    for (long r = 0; r < m->rows; r++)
        for (long c = 0; c < m->cols; c++) {
            float v = !exact ? (float)(2 * rng_uniform(rng) - 1)
                      : m->name == 'C' ? (float)(2 * (int)rng_below(rng, 10) - 9) : rng_below(rng, 2) ? 1.0f : -1.0f;
            put_elem(m, base, r, c, v);
            host[r * m->cols + c] = get_elem(m, base, r, c, NULL);
        }
}

static uint8_t *place(Sim *sim, const RecMatrix *m, char *err, size_t errlen)
{
    char why[256];
    SimBuf *b = sim_heap_place(&sim->heap, m->addr, rec_matrix_bytes(m), why, sizeof why);
    if (!b) snprintf(err, errlen, "%c (%zu bytes at 0x%llx): %s", m->name, rec_matrix_bytes(m), (unsigned long long)m->addr, why);
    return b ? b->data : NULL;
}

/* The sim's encoding of each tag's tensor map, over the tag. The matrices
 * sit at the recorded addresses, so the encode's global address stays. */
static int write_tmaps(const LaunchRecord *r, uint8_t *params, char *err, size_t errlen)
{
    for (int i = 0; i < r->ntags; i++) {
        const RecEncode *e = &r->encodes[r->tags[i].encode];
        const DevTmapDesc *d = &e->desc;
        char why[256];
        if (sim_tmap_encode(d->dtype, d->rank, d->gaddr, d->dim, d->stride, d->box, d->estride, d->interleave, d->swizzle,
                            d->l2promo, d->oobfill, params + r->tags[i].offset, why, sizeof why))
            return snprintf(err, errlen, "tensor-map encode %d: %s", e->id, why), 2;
    }
    return 0;
}

/* ---- judging ---- */
static void judge(const RecGemm *g, const uint8_t *out, const double *want, RecResult *res)
{
    const RecMatrix *d = &g->d;
    uint32_t poison = d->elem_bytes == 4 ? 0xFFFFFFFFu : 0xFFFFu;
    double se = 0, sr = 0;
    res->exact = rr_exact(g), res->total = (long)g->M * g->N, res->first_bad = -1;
    for (long m = 0; m < g->M; m++)
        for (long n = 0; n < g->N; n++) {
            uint32_t bits;
            double got = get_elem(d, out, m, n, &bits), w = want[m * g->N + n], e = fabs(got - w);
            int unwritten = !d->in_place && bits == poison, wrong = !unwritten && (res->exact ? got != w : !(e <= kTol * (1 + fabs(w))));
            if ((unwritten || wrong) && res->first_bad < 0) res->first_bad = m * g->N + n, res->got = got, res->want = w;
            res->unwritten += unwritten, res->wrong += wrong;
            if (unwritten) continue;
            if (!(e <= res->max_abs)) res->max_abs = e;   /* NaN sticks */
            se += e * e, sr += w * w;
        }
    res->rel_l2 = sqrt(se / (sr > 0 ? sr : 1));
    res->pass = !res->wrong && !res->unwritten && (res->exact || res->rel_l2 <= kTol);
}

/* In exact mode the reference itself must be an f16 value, or alpha and
 * beta broke the exactness the inputs were chosen for. */
static int check_exact_ref(const RecGemm *g, const double *want, char *err, size_t errlen)
{
    for (long i = 0; i < (long)g->M * g->N; i++)
        if ((double)fp16_to_f32(f32_to_fp16((float)want[i])) != want[i])
            return snprintf(err, errlen, "alpha %g and beta %g make D[%ld] = %.17g inexact in f16; the exact check needs "
                            "results that f16 holds", g->alpha, g->beta, i, want[i]), 2;
    return 0;
}

typedef struct { float *a, *b, *c; double *want; uint8_t *params; } Host;

static int prepare(Sim *sim, const LaunchRecord *r, uint64_t seed, Host *h, char *err, size_t errlen)
{
    const RecGemm *g = &r->gemm;
    uint8_t *pa, *pb, *pc, *pd = NULL;
    if (!(pa = place(sim, &g->a, err, errlen)) || !(pb = place(sim, &g->b, err, errlen)) || !(pc = place(sim, &g->c, err, errlen)) ||
        (!g->d.in_place && !(pd = place(sim, &g->d, err, errlen))))
        return 2;
    Rng rng;
    rng_seed(&rng, seed);
    int exact = rr_exact(g);
    fill(&g->a, pa, &rng, exact, h->a);
    fill(&g->b, pb, &rng, exact, h->b);
    fill(&g->c, pc, &rng, exact, h->c);
    if (pd) memset(pd, 0xFF, rec_matrix_bytes(&g->d));   /* poison: all-ones is NaN in every float type */
    if (ref_gemm_abt(g->M, g->N, g->K, g->alpha, g->beta, h->a, h->b, h->c, h->want, 0))
        return snprintf(err, errlen, "out of host memory for the GEMM reference"), 2;
    return exact ? check_exact_ref(g, h->want, err, errlen) : 0;
}

int record_run(Sim *sim, const SimModule *m, const LaunchRecord *r, uint64_t seed, RecResult *res, char *err, size_t errlen)
{
    const RecGemm *g = &r->gemm;
    const SimFunc *f = sim_find(m, r->entry);
    memset(res, 0, sizeof *res);
    if (!f) return snprintf(err, errlen, "the PTX has no .entry named %s", r->entry), 2;
    int rc = check_params(f, r, err, errlen);
    if (!rc) rc = check_types(g, err, errlen);
    if (rc) return rc;
    Host h = {malloc((size_t)g->M * g->K * sizeof(float)), malloc((size_t)g->N * g->K * sizeof(float)),
              malloc((size_t)g->M * g->N * sizeof(float)), malloc((size_t)g->M * g->N * sizeof(double)),
              calloc(1, (size_t)f->param_bytes + 8)};
    if (!h.a || !h.b || !h.c || !h.want || !h.params) rc = 2, snprintf(err, errlen, "out of host memory for the GEMM");
    else memcpy(h.params, r->params, r->param_bytes);
    if (!rc) rc = prepare(sim, r, seed, &h, err, errlen);
    if (!rc) rc = write_tmaps(r, h.params, err, errlen);
    sim->err = err, sim->errlen = errlen;
    if (!rc && sim_launch_raw(sim, m, f, r->grid, r->block, r->cluster, r->dyn_smem, h.params, (size_t)f->param_bytes)) rc = 1;
    const SimBuf *out = rc ? NULL : sim_heap_find(&sim->heap, g->d.addr, rec_matrix_bytes(&g->d));
    if (out) {
        judge(g, out->data, h.want, res);
        if ((res->out = malloc(rec_matrix_bytes(&g->d)))) {
            res->out_bytes = rec_matrix_bytes(&g->d);
            memcpy(res->out, out->data, res->out_bytes);
        } else {
            rc = 2, snprintf(err, errlen, "out of host memory for a copy of the output");
        }
    }
    sim_heap_release(&sim->heap);
    free(h.a), free(h.b), free(h.c), free(h.want), free(h.params);
    return rc;
}

void rec_result_free(RecResult *res)
{
    free(res->out);
    res->out = NULL;
}
