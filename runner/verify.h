/* Judging a result against the float64 reference (KERNELS.md "Judging a result"). */
#ifndef PTXGEN_VERIFY_H
#define PTXGEN_VERIFY_H
#include <stddef.h>
#include <stdint.h>
#include "hostdata.h"

typedef struct {
    double max_abs;       /* max |out - ref| over finite pairs */
    double rel_l2;        /* ||out - ref|| / max(||ref||, norm_floor) over elements whose ref is finite */
    size_t n_bad_nonfinite; /* out NaN/inf where ref is finite, or mismatched infinities */
    size_t n_unwritten;   /* elements still holding the poison pattern */
    size_t n_not_zero;    /* with exact_zeros: out not exactly 0 where ref is exactly 0 */
    long   first_bad;     /* first index that is non-finite/unwritten/mismatched/not zero or
                             off by more than 50 x tol x rms of ref's non-zero elements plus
                             one ulp of the element type times |ref|; -1 if none */
    double first_out, first_ref;   /* values at first_bad */
    int    pass;
    double ref_norm;      /* ||ref|| over finite elements */
    double norm_floor;    /* the floor the caller gave (0: none); it took effect where above ref_norm */
} VerifyResult;

#define POISON_U16 0xFFFFu        /* negative NaN with full payload: no kernel computes it */
#define POISON_U32 0xFFFFFFFFu

/* A gradient that sums signed terms (dq = scale sum_j dS_j K_j with dS_j =
 * P_j (dP_j - delta), which sum to 0 over j; attn_bwd's dk likewise over the
 * queries) cancels to (mathematically) exactly 0 when dP_j = delta for every
 * term: a query row that sees one key, a token whose valid slots all hold one
 * kv row. The float64 reference then holds ~1e-16 of noise (or 0), a right
 * kernel the fp32 rounding of dP - delta, and ||out - ref|| / ||ref|| is 1e8.
 * So such an output is judged against the size of the terms that make it:
 * rel_l2 divides by max(||ref||, floor), floor = VERIFY_TERM_KAPPA x ||T||,
 * T[c] = |scale| sum_j P_j (|dP_j| + |delta|) |K_j[c]| (ref.h ref_grad_term).
 * Why 2^-10: a cancelled kernel output measured 4e-9..5e-8 of ||T|| on the sim
 * (mla_bwd s_kv 1, attn_bwd s_k 1), and the floor lets tol x 2^-10, ~1e-5 of
 * ||T||, through: room for the residue, not for a wrong result. Random
 * inputs give ||ref|| / ||T|| of 0.04-0.30, 40-300x above 2^-10 (mla_bwd s_q
 * 16, s_kv 300, h_q 64, top-k 128: 0.20; top-k 2048: 0.039; attn_bwd s 1024
 * d 128: 0.077, causal 0.10-0.15; s_q 64, s_k 4096: dq 0.039, dk 0.30),
 * falling like 1 / sqrt(the keys a row spreads over), so the floor acts
 * only under near-total cancellation: the degenerate shapes measured
 * 1e-16..3e-16 (mla_bwd) and exactly 0 (attn_bwd). */
#define VERIFY_TERM_KAPPA 0x1p-10
/* The norm floor of an output whose term magnitudes have squared norm term_norm2. */
double verify_term_floor(double term_norm2);

/* out: 16-bit elements of type t. tol: max rel_l2. exact_zeros: where ref is
 * exactly 0 (a row with no valid key, KERNELS.md), out must be exactly 0 (+-0).
 * norm_floor: the least ||ref|| that rel_l2 divides by (verify_term_floor; 0:
 * none), and its share per element the least scale of the outlier test. */
VerifyResult verify_u16(const uint16_t *out, DType t, const double *ref, size_t n, double tol, int exact_zeros,
                        double norm_floor);
/* out: fp32. Same rules; infinities must match exactly (e.g. LSE = +inf). */
VerifyResult verify_f32(const float *out, const double *ref, size_t n, double tol, int exact_zeros,
                        double norm_floor);
/* One line: "name: rel_l2=... max_abs=... [FAIL: first bad index N (out X, ref Y)]" on stdout; where the
 * norm floor took effect, rel_l2 says so: "rel_l2=... (of the terms' norm floor F; ||ref|| R)". */
void verify_print(const char *name, const VerifyResult *r, double tol);
#endif
