/* Judging a kernel output against the float64 reference (KERNELS.md "Judging a result"). */
#include "verify.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* One view over both output kinds so the judging rules live in one place. */
typedef struct {
    const uint16_t *u16;
    const float *f32;
    DType t;
    int exact_zeros;
} OutView;

static int out_poisoned(const OutView *ov, size_t i)
{
    if (ov->u16)
        return ov->u16[i] == POISON_U16;
    uint32_t bits;
    memcpy(&bits, &ov->f32[i], sizeof bits);
    return bits == POISON_U32;
}

static double out_value(const OutView *ov, size_t i)
{
    return ov->u16 ? (double)dt_to_f32(ov->t, ov->u16[i]) : (double)ov->f32[i];
}

/* One ulp of the output's element type relative to the value (bf16 8
 * significant bits, fp16 11, fp32 24): rounding to it is no error. */
static double out_ulp(const OutView *ov)
{
    return !ov->u16 ? 0x1p-23 : ov->t == DT_FP16 ? 0x1p-10 : 0x1p-7;
}

/* rms over the finite non-zero refs sets the scale for the per-element
 * outlier test. Exact zeros (rows with no valid key, kv rows no slot selects)
 * would shrink it: in a mostly empty output, such as dkv for a few tokens
 * over many kv rows, correctly rounded large elements became outliers.
 * *finite: how many refs are finite (the elements rel_l2 sums over). */
static void ref_norms(const double *ref, size_t n, double *sumsq, double *rms, size_t *finite)
{
    double s = 0.0;
    size_t cnt = 0, fin = 0;
    for (size_t i = 0; i < n; i++) {
        fin += isfinite(ref[i]) != 0;
        if (isfinite(ref[i]) && ref[i] != 0.0) {
            s += ref[i] * ref[i];
            cnt++;
        }
    }
    *sumsq = s;
    *rms = cnt ? sqrt(s / (double)cnt) : 0.0;
    *finite = fin;
}

static void mark_bad(VerifyResult *r, size_t i, double out, double ref)
{
    if (r->first_bad >= 0)
        return;
    r->first_bad = (long)i;
    r->first_out = out;
    r->first_ref = ref;
}

/* Classifies element i; adds its squared error to *diff2. */
static void judge_one(VerifyResult *r, const OutView *ov, const double *ref, size_t i,
                      double limit, double *diff2)
{
    double out = out_value(ov, i);
    if (out_poisoned(ov, i)) {
        r->n_unwritten++;
        mark_bad(r, i, out, ref[i]);
        return;
    }
    if (!isfinite(ref[i])) {
        /* An infinite ref (empty LSE row) is only met by the same infinity;
         * a NaN ref can't be judged and so never passes. */
        if (!(out == ref[i])) {
            r->n_bad_nonfinite++;
            mark_bad(r, i, out, ref[i]);
        }
        return;
    }
    if (!isfinite(out)) {
        r->n_bad_nonfinite++;
        mark_bad(r, i, out, ref[i]);
        return;
    }
    double e = fabs(out - ref[i]);
    *diff2 += e * e;
    if (ov->exact_zeros && ref[i] == 0.0 && out != 0.0) {
        r->n_not_zero++;
        mark_bad(r, i, out, ref[i]);
    }
    if (e > r->max_abs)
        r->max_abs = e;
    /* a large element of a heavy-tailed output (a dkv row that many slots
     * select) may be off by its own rounding, however small the rms */
    if (e > limit + fabs(ref[i]) * out_ulp(ov))
        mark_bad(r, i, out, ref[i]);
}

double verify_term_floor(double term_norm2)
{
    return VERIFY_TERM_KAPPA * sqrt(term_norm2);
}

static VerifyResult verify_view(const OutView *ov, const double *ref, size_t n, double tol, double norm_floor)
{
    VerifyResult r = { .first_bad = -1, .norm_floor = norm_floor };
    double refsq, rms, diff2 = 0.0;
    size_t finite;
    ref_norms(ref, n, &refsq, &rms, &finite);
    r.ref_norm = sqrt(refsq);
    /* A cancelling output is judged against its terms' size (verify.h): the
     * floor spread evenly is the least rms an element is measured by. */
    double floor_rms = finite ? norm_floor / sqrt((double)finite) : 0.0;
    double norm = fmax(r.ref_norm, norm_floor), scale = fmax(rms, floor_rms);
    /* A zero reference makes relative measures meaningless; fall back to absolute. */
    double limit = 50.0 * tol * (scale > 0.0 ? scale : 1.0);
    for (size_t i = 0; i < n; i++)
        judge_one(&r, ov, ref, i, limit, &diff2);
    r.rel_l2 = norm > 0.0 ? sqrt(diff2) / norm : sqrt(diff2);
    r.pass = r.n_unwritten == 0 && r.n_bad_nonfinite == 0 && r.n_not_zero == 0 && r.first_bad == -1 &&
             !isnan(r.rel_l2) && r.rel_l2 <= tol;
    return r;
}

VerifyResult verify_u16(const uint16_t *out, DType t, const double *ref, size_t n, double tol, int exact_zeros,
                        double norm_floor)
{
    OutView ov = { out, NULL, t, exact_zeros };
    return verify_view(&ov, ref, n, tol, norm_floor);
}

VerifyResult verify_f32(const float *out, const double *ref, size_t n, double tol, int exact_zeros,
                        double norm_floor)
{
    OutView ov = { NULL, out, DT_BF16, exact_zeros };
    return verify_view(&ov, ref, n, tol, norm_floor);
}

void verify_print(const char *name, const VerifyResult *r, double tol)
{
    printf("  %s: rel_l2=%.3e", name, r->rel_l2);
    if (r->norm_floor > r->ref_norm)   /* never silent: the sum cancelled and the terms' size judged it */
        printf(" (of the terms' norm floor %.3e; ||ref|| %.3e)", r->norm_floor, r->ref_norm);
    printf(" (tol %.1e) max_abs=%.3e", tol, r->max_abs);
    if (r->pass) {
        printf(" ok\n");
        return;
    }
    printf(" FAIL unwritten=%zu nonfinite=%zu", r->n_unwritten, r->n_bad_nonfinite);
    if (r->n_not_zero)
        printf(" not_zero=%zu (where the reference is exactly 0)", r->n_not_zero);
    if (r->first_bad >= 0)
        printf(" first bad index %ld: out %.9g ref %.9g", r->first_bad, r->first_out,
               r->first_ref);
    printf("\n");
}
