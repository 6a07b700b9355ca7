/* Judging a result against the float64 reference (KERNELS.md "Judging a result"). */
#ifndef PTXGEN_VERIFY_H
#define PTXGEN_VERIFY_H
#include <stddef.h>
#include <stdint.h>
#include "hostdata.h"

typedef struct {
    double max_abs;       /* max |out - ref| over finite pairs */
    double rel_l2;        /* ||out - ref|| / ||ref|| over elements whose ref is finite */
    size_t n_bad_nonfinite; /* out NaN/inf where ref is finite, or mismatched infinities */
    size_t n_unwritten;   /* elements still holding the poison pattern */
    size_t n_not_zero;    /* with exact_zeros: out not exactly 0 where ref is exactly 0 */
    long   first_bad;     /* first index that is non-finite/unwritten/mismatched/not zero or
                             off by more than 50 x tol x rms of ref's non-zero elements plus
                             one ulp of the element type times |ref|; -1 if none */
    double first_out, first_ref;   /* values at first_bad */
    int    pass;
} VerifyResult;

#define POISON_U16 0xFFFFu        /* negative NaN with full payload: no kernel computes it */
#define POISON_U32 0xFFFFFFFFu

/* out: 16-bit elements of type t. tol: max rel_l2. exact_zeros: where ref is
 * exactly 0 (a row with no valid key, KERNELS.md), out must be exactly 0 (+-0). */
VerifyResult verify_u16(const uint16_t *out, DType t, const double *ref, size_t n, double tol, int exact_zeros);
/* out: fp32. Same rules; infinities must match exactly (e.g. LSE = +inf). */
VerifyResult verify_f32(const float *out, const double *ref, size_t n, double tol, int exact_zeros);
/* One line: "name: rel_l2=... max_abs=... [FAIL: first bad index N (out X, ref Y)]" on stdout */
void verify_print(const char *name, const VerifyResult *r, double tol);
#endif
