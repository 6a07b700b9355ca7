/* The runner's variable-length problems (varlen.c): packed [total, h, d]
 * tensors with cu_seqlens_q/k, as the kinds with KernelKind.varlen_ok take. */
#ifndef PTXGEN_VARLEN_H
#define PTXGEN_VARLEN_H
#include "problem.h"

/* "L1,L2,..." (each 0 .. 2^24) into a malloc'd array of n lengths; 2 with err naming flag otherwise. */
int varlen_parse(const char *list, const char *flag, int **lens, int *n, char *err, size_t errlen);
/* p's offsets from the lengths (b sequences), its b, s_q and s_k (the longest, at least 1: the grid's),
 * totals; checked by ptxgen_varlen_check as every launch's offsets must be. */
int varlen_setup(Problem *p, const int *len_q, const int *len_k, int b, char *err, size_t errlen);
void varlen_layouts(Problem *p, int pad);
int varlen_ref_fwd(const Problem *p, double *const ref[]);
/* term_norm2 (NULL: not wanted): ref_attn_bwd's, over every sequence. */
int varlen_ref_bwd(const Problem *p, double *const ref[], double *term_norm2);
double varlen_fwd_flops(const Problem *p);
void varlen_describe(const Problem *p, char *buf, size_t len);
#endif
