/* Variable lengths (KERNELS.md): the offsets check every launch goes
 * through (ptxgen_varlen_check, public), and the runner's packed problems:
 * lengths from the command line, packed layouts, the float64 reference
 * sequence by sequence, FLOPs. */
#include "varlen.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ref.h"
#include "blockmask.h"

PTXGEN_API int ptxgen_varlen_check(const int *cu_seqlens_q, const int *cu_seqlens_k, int b, long long total_q,
                                   long long total_k, long long max_q, long long max_k, char *err, size_t errlen) {
    errlen = err ? errlen : 0;   /* a NULL err takes no message */
    if (b < 1 || !cu_seqlens_q || !cu_seqlens_k) {
        snprintf(err, errlen, "variable lengths need b >= 1 sequences and both offset arrays (b + 1 entries each)");
        return 2;
    }
    const int *cu[2] = {cu_seqlens_q, cu_seqlens_k};
    const long long total[2] = {total_q, total_k}, most[2] = {max_q, max_k};
    const char *name[2] = {"cu_seqlens_q", "cu_seqlens_k"}, *size[2] = {"s_q", "s_k"};
    for (int t = 0; t < 2; t++) {
        if (cu[t][0] != 0) {
            snprintf(err, errlen, "%s[0] is %d: the offsets start at 0", name[t], cu[t][0]);
            return 2;
        }
        for (int i = 0; i < b; i++) {
            long long len = (long long)cu[t][i + 1] - cu[t][i];
            if (len < 0) {
                snprintf(err, errlen, "%s decreases at %d (%d then %d): offsets never decrease", name[t], i + 1, cu[t][i],
                         cu[t][i + 1]);
                return 2;
            }
            if (len > most[t]) {
                snprintf(err, errlen, "sequence %d has %lld rows by %s, more than %s = %lld the launch is sized by", i,
                         len, name[t], size[t], most[t]);
                return 2;
            }
        }
        if (cu[t][b] != total[t]) {
            snprintf(err, errlen, "%s[%d] is %d, but the packed tensor has %lld rows: past the tensor or short of it",
                     name[t], b, cu[t][b], total[t]);
            return 2;
        }
    }
    return 0;
}

int varlen_parse(const char *list, const char *flag, int **lens, int *n, char *err, size_t errlen) {
    *lens = NULL, *n = 0;
    int cap = 0;
    for (const char *s = list; s && *s;) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > (1 << 24) || (*end && *end != ',')) {
            snprintf(err, errlen, "%s needs lengths 0 .. %d separated by commas, got '%s'", flag, 1 << 24, list);
            free(*lens), *lens = NULL;
            return 2;
        }
        if (*n == cap) {
            int *grown = realloc(*lens, sizeof **lens * (size_t)(cap = cap ? 2 * cap : 16));
            if (!grown) { free(*lens), *lens = NULL; snprintf(err, errlen, "out of host memory for %s", flag); return 2; }
            *lens = grown;
        }
        (*lens)[(*n)++] = (int)v;
        if (*end && !end[1]) {   /* a trailing comma: a length left out, not the list's end */
            snprintf(err, errlen, "%s needs lengths 0 .. %d separated by commas, got '%s' (a trailing ',')", flag, 1 << 24, list);
            free(*lens), *lens = NULL;
            return 2;
        }
        s = *end ? end + 1 : end;
    }
    if (!*n || *n > 65535) {
        snprintf(err, errlen, "%s needs 1 .. 65535 lengths, got %d", flag, *n);
        free(*lens), *lens = NULL;
        return 2;
    }
    return 0;
}

int varlen_setup(Problem *p, const int *len_q, const int *len_k, int b, char *err, size_t errlen) {
    Tensor *cu[2] = {&p->cu_q, &p->cu_k};
    const int *len[2] = {len_q, len_k};
    long long total[2] = {0, 0};
    int most[2] = {1, 1};   /* a grid of at least one row block, even when every sequence is empty */
    for (int t = 0; t < 2; t++) {
        *cu[t] = (Tensor){.name = t ? "cu_seqlens_k" : "cu_seqlens_q", .rows = b + 1, .heads = 1, .width = 1,
                          .stride_h = 1, .stride_s = 1, .stride_b = (uint64_t)b + 1, .elems = (size_t)b + 1,
                          .count = (size_t)b + 1, .esize = 4};
        if (!(cu[t]->ints = malloc(sizeof(int32_t) * ((size_t)b + 1)))) {
            snprintf(err, errlen, "out of host memory for the offsets");
            return 1;
        }
        cu[t]->ints[0] = 0;
        for (int i = 0; i < b; i++) {
            total[t] += len[t][i];
            if (total[t] > INT32_MAX / 2) {
                snprintf(err, errlen, "the sequences' lengths sum past %d rows", INT32_MAX / 2);
                return 1;
            }
            cu[t]->ints[i + 1] = (int32_t)total[t];
            if (len[t][i] > most[t]) most[t] = len[t][i];
        }
    }
    if (!total[0]) {   /* no output row at all: nothing to launch or judge (the API refuses a 0 size too) */
        snprintf(err, errlen, "the %d sequences have no query rows at all (every --varlen length is 0): nothing to run", b);
        return 1;
    }
    p->varlen = 1, p->b = b, p->s_q = most[0], p->s_k = most[1], p->total_q = total[0], p->total_k = total[1];
    return ptxgen_varlen_check(p->cu_q.ints, p->cu_k.ints, b, total[0], total[1], p->s_q, p->s_k, err, errlen) ? 1 : 0;
}

void varlen_layouts(Problem *p, int pad) {
    int tq = (int)p->total_q, tk = (int)p->total_k;
    problem_layout(&p->q, "q", 1, tq, p->h_q, p->d, pad, 2);
    problem_layout(&p->k, "k", 1, tk, p->h_kv, p->d, pad, 2);
    problem_layout(&p->v, "v", 1, tk, p->h_kv, p->d_v, pad, 2);
    problem_layout(&p->o, "o", 1, tq, p->h_q, p->d_v, pad, 2);
    problem_layout(&p->dout, "do", 1, tq, p->h_q, p->d_v, pad, 2);
    problem_layout(&p->dq, "dq", 1, tq, p->h_q, p->d, pad, 2);
    problem_layout(&p->dk, "dk", 1, tk, p->h_kv, p->d, pad, 2);
    problem_layout(&p->dv, "dv", 1, tk, p->h_kv, p->d_v, pad, 2);
    problem_layout(&p->lse, "lse", 1, p->h_q, 1, tq, 0, 4);
}

/* Sequence by sequence: its rows of the packed host views as a batch of one, its LSE rows scattered into
 * [h_q, total_q]. An empty sequence has nothing to compute; one with no keys has rows of output 0 and LSE
 * +inf (the reference's rows with no valid key). */
int varlen_ref_fwd(const Problem *p, double *const ref[]) {
    const int *cq = p->cu_q.ints, *ck = p->cu_k.ints;
    double *lse = malloc(sizeof *lse * (size_t)p->h_q * (size_t)(p->s_q > 0 ? p->s_q : 1));
    if (!lse) return 1;
    int rc = 0;
    for (int i = 0; !rc && i < p->b; i++) {
        int lq = cq[i + 1] - cq[i], lk = ck[i + 1] - ck[i];
        if (!lq) continue;
        RefAttn ra = {1, lq, lk, p->h_q, p->h_kv, p->d, p->d_v, p->causal, p->scale, blockmask_ref(p, i)};
        rc = ref_attn_fwd(&ra, p->q.host + (size_t)cq[i] * p->h_q * p->d, p->k.host + (size_t)ck[i] * p->h_kv * p->d,
                          p->v.host + (size_t)ck[i] * p->h_kv * p->d_v, ref[0] + (size_t)cq[i] * p->h_q * p->d_v, lse, 0);
        for (int h = 0; !rc && h < p->h_q; h++)
            memcpy(ref[1] + (size_t)h * p->total_q + cq[i], lse + (size_t)h * lq, sizeof *lse * (size_t)lq);
    }
    free(lse);
    return rc;
}

/* Sequence by sequence: its gradients, from its rows of the packed inputs; a sequence with no queries leaves its
 * keys' dk and dv 0 (nothing attends to them), one with no keys has no dk, dv rows and dq 0. The squared term
 * norms add up over the sequences, in their order. */
int varlen_ref_bwd(const Problem *p, double *const ref[], double *term_norm2) {
    const int *cq = p->cu_q.ints, *ck = p->cu_k.ints;
    double seq_t2[3];   /* one sequence's, as ref_attn_bwd gives them: dq, dk, dv */
    for (int o = 0; term_norm2 && o < 3; o++) term_norm2[o] = 0;
    for (size_t i = 0; i < p->dk.count; i++) ref[1][i] = 0;
    for (size_t i = 0; i < p->dv.count; i++) ref[2][i] = 0;
    for (size_t i = 0; i < p->dq.count; i++) ref[0][i] = 0;
    for (int i = 0; i < p->b; i++) {
        int lq = cq[i + 1] - cq[i], lk = ck[i + 1] - ck[i];
        if (!lq || !lk) continue;
        RefAttn ra = {1, lq, lk, p->h_q, p->h_kv, p->d, p->d_v, p->causal, p->scale, blockmask_ref(p, i)};
        size_t q0 = (size_t)cq[i], k0 = (size_t)ck[i];
        if (ref_attn_bwd(&ra, p->q.host + q0 * p->h_q * p->d, p->k.host + k0 * p->h_kv * p->d,
                         p->v.host + k0 * p->h_kv * p->d_v, p->o.host + q0 * p->h_q * p->d_v,
                         p->dout.host + q0 * p->h_q * p->d_v, ref[0] + q0 * p->h_q * p->d,
                         ref[1] + k0 * p->h_kv * p->d, ref[2] + k0 * p->h_kv * p->d_v, term_norm2 ? seq_t2 : NULL, 0))
            return 1;
        for (int o = 0; term_norm2 && o < 3; o++) term_norm2[o] += seq_t2[o];
    }
    return 0;
}

double varlen_fwd_flops(const Problem *p) {
    double f = 0;
    for (int i = 0; i < p->b; i++) {
        double lq = p->cu_q.ints[i + 1] - p->cu_q.ints[i], lk = p->cu_k.ints[i + 1] - p->cu_k.ints[i];
        f += 2.0 * p->h_q * lq * lk * (p->d + p->d_v);
    }
    return p->causal ? f / 2 : f;
}

void varlen_describe(const Problem *p, char *buf, size_t len) {
    int n = snprintf(buf, len, "varlen b=%d (s_q", p->b);
    for (int i = 0; i < p->b && n > 0 && (size_t)n < len; i++) {
        if (i == 8 && p->b > 10) { n += snprintf(buf + n, len - (size_t)n, " ... %d more", p->b - 8); break; }
        n += snprintf(buf + n, len - (size_t)n, "%s%d/%d", i ? "," : " ", p->cu_q.ints[i + 1] - p->cu_q.ints[i],
                      p->cu_k.ints[i + 1] - p->cu_k.ints[i]);
    }
    if (n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " q/k rows; total %lld/%lld, longest %d/%d) h_q=%d h_kv=%d d=%d%s", p->total_q,
                 p->total_k, p->s_q, p->s_k, p->h_q, p->h_kv, p->d, p->causal ? " causal" : "");
}
