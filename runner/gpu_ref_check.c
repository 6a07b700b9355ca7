/* gpu_ref_selfcheck (gpu_ref.h): every GPU reference at small ragged shapes
 * against the float64 CPU references of ref.h, from the same rounded inputs.
 * The GPU side reads them strided with NaN padding, so a stride or index bug
 * shows as NaN or as a large error rather than as luck. */
#include "gpu_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"   /* dev_errf */
#include "hostdata.h"
#include "ref.h"
#include "verify.h"

/* Tolerances on rel L2. The forward and the MLA lse see the inputs exactly as
 * the CPU does, so only fp32 output rounding and summation order remain. The
 * backward takes o rounded to the input dtype (as a kernel under test gets it)
 * where ref.h recomputes o in float64: delta = dO . o differs by that rounding. */
#define TOL_FWD 1e-5
#define TOL_LSE 1e-6
#define TOL_BWD 2e-3

enum { POOL_CAP = 32, GPU_REF_SELFCHECK_SEED = 20240607 };

/* Everything one case allocates, freed together. */
typedef struct {
    Device *dev;
    DevPtr dptr[POOL_CAP];
    void *hptr[POOL_CAP];
    int nd, nh;
    int oom;   /* a host() since the last pool_free got NULL */
} Pool;

typedef struct {
    GpuRef *g;
    Rng rng;
    int n_out, n_fail;
    char failed[512];   /* names of failed outputs */
} Run;

/* NULL (and pl->oom set) when out of host memory: a case allocates what it
 * needs, then checks host_ok once before it writes any of it. */
static void *host(Pool *pl, size_t bytes)
{
    void *p = pl->nh == POOL_CAP ? NULL : calloc(1, bytes ? bytes : 1);
    if (!p) {
        pl->oom = 1;
        return NULL;
    }
    return pl->hptr[pl->nh++] = p;
}

static int host_ok(const Pool *pl, char *err, size_t errlen)
{
    return pl->oom ? dev_errf(err, errlen, "gpu_ref_selfcheck: out of host memory (or more than %d buffers)", POOL_CAP)
                   : 0;
}

static int device(Pool *pl, DevPtr *p, size_t bytes, char *err, size_t errlen)
{
    if (pl->nd == POOL_CAP) return dev_errf(err, errlen, "gpu_ref_selfcheck: more than %d buffers", POOL_CAP);
    if (dev_alloc(pl->dev, p, bytes, err, errlen)) return -1;
    pl->dptr[pl->nd++] = *p;
    return 0;
}

static void pool_free(Pool *pl)
{
    for (int i = 0; i < pl->nd; i++) (void)dev_free(pl->dev, pl->dptr[i], NULL, 0);   /* after a reported failure */
    for (int i = 0; i < pl->nh; i++) free(pl->hptr[i]);
    pl->nd = pl->nh = pl->oom = 0;
}

static int host_oom(char *err, size_t errlen)
{
    return dev_errf(err, errlen, "gpu_ref_selfcheck: out of host memory for a CPU reference");
}

/* A [b, s, h, d] input: val holds the rounded values contiguous (what the CPU
 * reads); dev the same strided, with `pad` NaN elements after every row, head
 * block and batch (what the GPU reads). src NULL: fresh N(0, 1) values. */
typedef struct { float *val; DevPtr dev; GpuRefStride st; } Input;

static int input(Pool *pl, Run *run, Input *x, DType t, int b, int s, int h, int d, int pad, const double *src,
                 char *err, size_t errlen)
{
    size_t n = (size_t)b * s * h * d, e = 0, total;
    uint16_t *raw;
    x->st.h = d + pad, x->st.s = (long long)h * x->st.h + pad, x->st.b = (long long)s * x->st.s + pad;
    total = (size_t)b * (size_t)x->st.b;
    raw = host(pl, total * sizeof *raw);
    x->val = host(pl, n * sizeof *x->val);
    if (host_ok(pl, err, errlen)) return -1;
    for (size_t i = 0; i < total; i++) raw[i] = POISON_U16;
    for (int bi = 0; bi < b; bi++)
        for (int si = 0; si < s; si++)
            for (int hi = 0; hi < h; hi++)
                for (int di = 0; di < d; di++, e++) {
                    uint16_t u = f32_to_dt(t, (float)(src ? src[e] : rng_normal(&run->rng)));
                    raw[bi * x->st.b + si * x->st.s + hi * x->st.h + di] = u;
                    x->val[e] = dt_to_f32(t, u);
                }
    return (device(pl, &x->dev, total * sizeof *raw, err, errlen) ||
            dev_upload(pl->dev, x->dev, raw, total * sizeof *raw, err, errlen)) ? -1 : 0;
}

/* An fp32 output of n elements, poisoned so that an unwritten one is caught. */
static int output(Pool *pl, DevPtr *p, size_t n, char *err, size_t errlen)
{
    return (device(pl, p, n * sizeof(float), err, errlen) ||
            dev_fill_u8(pl->dev, *p, 0xFF, n * sizeof(float), err, errlen)) ? -1 : 0;
}

static int upload(Pool *pl, DevPtr *p, const void *src, size_t bytes, char *err, size_t errlen)
{
    return (device(pl, p, bytes, err, errlen) || dev_upload(pl->dev, *p, src, bytes, err, errlen)) ? -1 : 0;
}

/* lse as the backward's fp32 input (+inf stays +inf). */
static int lse_input(Pool *pl, DevPtr *p, const double *lse, size_t n, char *err, size_t errlen)
{
    float *f = host(pl, n * sizeof *f);
    if (host_ok(pl, err, errlen)) return -1;
    for (size_t i = 0; i < n; i++) f[i] = (float)lse[i];
    return upload(pl, p, f, n * sizeof *f, err, errlen);
}

/* Downloads one output and prints its line; a failure is counted, not returned. term_norm2: the
 * CPU reference's squared term norm of the output (verify.h's norm floor; 0: none). */
static int judge(Pool *pl, Run *run, const char *name, DevPtr out, const double *ref, size_t n, double tol,
                 double term_norm2, char *err, size_t errlen)
{
    float *got = host(pl, n * sizeof *got);
    VerifyResult r;
    if (host_ok(pl, err, errlen) || dev_download(pl->dev, got, out, n * sizeof *got, err, errlen)) return -1;
    r = verify_f32(got, ref, n, tol, 1, verify_term_floor(term_norm2));
    verify_print(name, &r, tol);
    run->n_out++;
    if (!r.pass) {
        size_t used = strlen(run->failed);
        run->n_fail++;
        snprintf(run->failed + used, sizeof run->failed - used, "%s%s", used ? ", " : "", name);
    }
    return 0;
}

/* ---- attention ---- */

static int attn_case(Run *run, Pool *pl, const GpuRefAttn *shape, int pad, char *err, size_t errlen)
{
    GpuRefAttn p = *shape;
    RefAttn ra = { p.b, p.s_q, p.s_k, p.h_q, p.h_kv, p.d, p.dv, p.causal, p.scale, {0} };
    size_t nq = (size_t)p.b * p.s_q * p.h_q, nk = (size_t)p.b * p.s_k * p.h_kv;
    double *o = host(pl, nq * p.dv * sizeof *o), *lse = host(pl, nq * sizeof *lse);
    double *dq = host(pl, nq * p.d * sizeof *dq), *dk = host(pl, nk * p.d * sizeof *dk);
    double *dv = host(pl, nk * p.dv * sizeof *dv);
    Input q, k, v, go, gdo;
    DevPtr o_d, lse_d, lse_in, dq_d, dk_d, dv_d;
    double t2[3];   /* the CPU reference's squared term norms of dq, dk, dv */

    printf("gpu_ref selfcheck: attention b=%d s_q=%d s_k=%d h_q=%d h_kv=%d d=%d dv=%d %s %s pad=%d\n", p.b, p.s_q,
           p.s_k, p.h_q, p.h_kv, p.d, p.dv, p.dtype == DT_BF16 ? "bf16" : "fp16", p.causal ? "causal" : "noncausal",
           pad);
    if (host_ok(pl, err, errlen) || input(pl, run, &q, p.dtype, p.b, p.s_q, p.h_q, p.d, pad, NULL, err, errlen) ||
        input(pl, run, &k, p.dtype, p.b, p.s_k, p.h_kv, p.d, pad, NULL, err, errlen) ||
        input(pl, run, &v, p.dtype, p.b, p.s_k, p.h_kv, p.dv, pad, NULL, err, errlen) ||
        output(pl, &o_d, nq * p.dv, err, errlen) || output(pl, &lse_d, nq, err, errlen))
        return -1;
    p.q = q.st, p.k = k.st, p.v = v.st;
    if (ref_attn_fwd(&ra, q.val, k.val, v.val, o, lse, 0)) return host_oom(err, errlen);
    if (gpu_ref_attn_fwd(run->g, &p, q.dev, k.dev, v.dev, o_d, lse_d, err, errlen) ||
        judge(pl, run, "attn_fwd o", o_d, o, nq * p.dv, TOL_FWD, 0, err, errlen) ||
        judge(pl, run, "attn_fwd lse", lse_d, lse, nq, TOL_LSE, 0, err, errlen))
        return -1;

    /* The backward from the forward's o (rounded) and lse (fp32) and a fresh dO. */
    if (input(pl, run, &go, p.dtype, p.b, p.s_q, p.h_q, p.dv, pad, o, err, errlen) ||
        input(pl, run, &gdo, p.dtype, p.b, p.s_q, p.h_q, p.dv, pad, NULL, err, errlen) ||
        lse_input(pl, &lse_in, lse, nq, err, errlen) ||
        output(pl, &dq_d, nq * p.d, err, errlen) || output(pl, &dk_d, nk * p.d, err, errlen) ||
        output(pl, &dv_d, nk * p.dv, err, errlen))
        return -1;
    p.o = go.st, p.dout = gdo.st;
    if (ref_attn_bwd(&ra, q.val, k.val, v.val, go.val, gdo.val, dq, dk, dv, t2, 0)) return host_oom(err, errlen);
    if (gpu_ref_attn_bwd(run->g, &p, q.dev, k.dev, v.dev, go.dev, gdo.dev, lse_in, dq_d, dk_d, dv_d, err, errlen))
        return -1;
    return (judge(pl, run, "attn_bwd dq", dq_d, dq, nq * p.d, TOL_BWD, t2[0], err, errlen) ||
            judge(pl, run, "attn_bwd dk", dk_d, dk, nk * p.d, TOL_BWD, t2[1], err, errlen) ||
            judge(pl, run, "attn_bwd dv", dv_d, dv, nk * p.dv, TOL_BWD, t2[2], err, errlen)) ? -1 : 0;
}

/* ---- MLA ---- */

/* indices [s_q, topk] on the device with its rows topk + 3 apart; the gaps
 * hold 0, a valid row, so reading one would change the result. */
static int indices(Pool *pl, const int32_t *idx, int s_q, int topk, DevPtr *out, char *err, size_t errlen)
{
    int32_t *raw = host(pl, (size_t)s_q * (topk + 3) * sizeof *raw);
    if (host_ok(pl, err, errlen)) return -1;
    for (int t = 0; t < s_q; t++) memcpy(raw + (size_t)t * (topk + 3), idx + (size_t)t * topk, topk * sizeof *idx);
    return upload(pl, out, raw, (size_t)s_q * (topk + 3) * sizeof *raw, err, errlen);
}

static int mla_case(Run *run, Pool *pl, const GpuRefMla *shape, int with_length, char *err, size_t errlen)
{
    GpuRefMla p = *shape;
    int32_t *idx = host(pl, (size_t)p.s_q * p.topk * sizeof *idx), *len = host(pl, (size_t)p.s_q * sizeof *len);
    RefMla rm = { p.s_q, p.s_kv, p.h_q, p.topk, p.d_qk, p.d_v, p.scale, idx, with_length ? len : NULL };
    size_t nq = (size_t)p.s_q * p.h_q, nkv = (size_t)p.s_kv * p.d_qk;
    double *o = host(pl, nq * p.d_v * sizeof *o), *lse = host(pl, nq * sizeof *lse);
    double *dq = host(pl, nq * p.d_qk * sizeof *dq), *dkv = host(pl, nkv * sizeof *dkv);
    Input q, kv, go, gdo;
    DevPtr idx_d, len_d = 0, o_d, lse_d, lse_in, dq_d, dkv_d;
    double t2[2];   /* the CPU reference's squared term norms of dq, dkv */

    printf("gpu_ref selfcheck: mla s_q=%d s_kv=%d h_q=%d topk=%d d_qk=%d d_v=%d %s%s\n", p.s_q, p.s_kv, p.h_q, p.topk,
           p.d_qk, p.d_v, p.dtype == DT_BF16 ? "bf16" : "fp16", with_length ? " topk_length" : "");
    if (host_ok(pl, err, errlen)) return -1;
    mla_draw_indices(&run->rng, p.s_q, p.s_kv, p.topk, idx);
    mla_draw_topk_length(&run->rng, idx, p.s_q, p.s_kv, p.topk, len);
    if (input(pl, run, &q, p.dtype, 1, p.s_q, p.h_q, p.d_qk, 8, NULL, err, errlen) ||
        input(pl, run, &kv, p.dtype, 1, p.s_kv, 1, p.d_qk, 8, NULL, err, errlen) ||
        indices(pl, idx, p.s_q, p.topk, &idx_d, err, errlen) ||
        (with_length && upload(pl, &len_d, len, (size_t)p.s_q * sizeof *len, err, errlen)) ||
        output(pl, &o_d, nq * p.d_v, err, errlen) || output(pl, &lse_d, nq, err, errlen))
        return -1;
    p.q_stride_s = q.st.s, p.q_stride_h = q.st.h, p.kv_stride_s = kv.st.s, p.indices_stride_s = p.topk + 3;
    if (ref_mla_fwd(&rm, q.val, kv.val, o, lse, 0)) return host_oom(err, errlen);
    if (gpu_ref_mla_fwd(run->g, &p, q.dev, kv.dev, idx_d, len_d, o_d, lse_d, err, errlen) ||
        judge(pl, run, "mla_fwd o", o_d, o, nq * p.d_v, TOL_FWD, 0, err, errlen) ||
        judge(pl, run, "mla_fwd lse", lse_d, lse, nq, TOL_LSE, 0, err, errlen))
        return -1;

    if (input(pl, run, &go, p.dtype, 1, p.s_q, p.h_q, p.d_v, 8, o, err, errlen) ||
        input(pl, run, &gdo, p.dtype, 1, p.s_q, p.h_q, p.d_v, 8, NULL, err, errlen) ||
        lse_input(pl, &lse_in, lse, nq, err, errlen) ||
        output(pl, &dq_d, nq * p.d_qk, err, errlen) || output(pl, &dkv_d, nkv, err, errlen))
        return -1;
    p.o_stride_s = go.st.s, p.o_stride_h = go.st.h, p.do_stride_s = gdo.st.s, p.do_stride_h = gdo.st.h;
    if (ref_mla_bwd(&rm, q.val, kv.val, go.val, gdo.val, dq, dkv, t2, 0)) return host_oom(err, errlen);
    if (gpu_ref_mla_bwd(run->g, &p, q.dev, kv.dev, go.dev, gdo.dev, lse_in, idx_d, len_d, dq_d, dkv_d, err, errlen))
        return -1;
    return (judge(pl, run, "mla_bwd dq", dq_d, dq, nq * p.d_qk, TOL_BWD, t2[0], err, errlen) ||
            judge(pl, run, "mla_bwd dkv", dkv_d, dkv, nkv, TOL_BWD, t2[1], err, errlen)) ? -1 : 0;
}

/* ---- the cases ---- */

static GpuRefAttn attn_shape(DType t, int b, int s_q, int s_k, int h_q, int h_kv, int d, int dv, int causal)
{
    GpuRefAttn p;
    memset(&p, 0, sizeof p);
    p.dtype = t, p.b = b, p.s_q = s_q, p.s_k = s_k, p.h_q = h_q, p.h_kv = h_kv, p.d = d, p.dv = dv;
    p.causal = causal, p.scale = (float)(1.0 / sqrt((double)d));
    return p;
}

static GpuRefMla mla_shape(DType t, int s_q, int s_kv, int h_q, int topk)
{
    GpuRefMla p;
    memset(&p, 0, sizeof p);
    p.dtype = t, p.s_q = s_q, p.s_kv = s_kv, p.h_q = h_q, p.topk = topk, p.d_qk = 576, p.d_v = 512;
    p.scale = (float)(1.0 / sqrt(576.0));
    return p;
}

/* More slots or keys than one chunk of the kernels (256) everywhere but the
 * last MLA case, which leaves most kv rows unselected (their dkv must be 0). */
static int all_cases(Run *run, Pool *pl, char *err, size_t errlen)
{
    const GpuRefAttn attn[] = {
        attn_shape(DT_BF16, 2, 77, 300, 4, 2, 64, 64, 0),
        attn_shape(DT_FP16, 1, 300, 77, 3, 1, 128, 64, 1),    /* the first 223 rows see no key */
        attn_shape(DT_BF16, 1, 260, 290, 2, 2, 256, 256, 1),
    };
    const GpuRefMla mla[] = {
        mla_shape(DT_BF16, 24, 300, 16, 320),
        mla_shape(DT_FP16, 20, 700, 16, 64),
    };
    for (size_t i = 0; i < sizeof attn / sizeof attn[0]; i++) {
        int rc = attn_case(run, pl, &attn[i], (int)(8 * (i + 1)), err, errlen);
        pool_free(pl);
        if (rc) return -1;
    }
    for (size_t i = 0; i < sizeof mla / sizeof mla[0]; i++) {
        int rc = mla_case(run, pl, &mla[i], (int)i, err, errlen);
        pool_free(pl);
        if (rc) return -1;
    }
    return 0;
}

int gpu_ref_selfcheck(Device *dev, char *err, size_t errlen)
{
    Run run;
    Pool pool;
    int rc;
    memset(&run, 0, sizeof run);
    memset(&pool, 0, sizeof pool);
    pool.dev = dev;
    rng_seed(&run.rng, GPU_REF_SELFCHECK_SEED);
    printf("gpu_ref selfcheck: seed %d\n", GPU_REF_SELFCHECK_SEED);
    if (gpu_ref_open(&run.g, dev, err, errlen)) return -1;
    rc = all_cases(&run, &pool, err, errlen);
    gpu_ref_close(run.g);
    if (rc) return -1;
    printf("gpu_ref selfcheck: %d of %d outputs within tolerance\n", run.n_out - run.n_fail, run.n_out);
    if (run.n_fail)
        return dev_errf(err, errlen, "gpu_ref selfcheck: %d of %d outputs failed: %s", run.n_fail, run.n_out,
                        run.failed);
    return 0;
}
