/* GPU references (gpu_ref.h): the CUDA C source of the kernels, and the host
 * side that compiles it once per device with NVRTC, loads it through the
 * device layer, checks shapes and launches. */
#include "gpu_ref.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"   /* dev_errf */
#include "nvrtc.h"

#define REF_NT 256     /* threads per block */
#define REF_MAXC 4     /* output columns per thread: head dims up to REF_NT * REF_MAXC */
#define REF_CH 256     /* slots per chunk held in shared memory */
_Static_assert(REF_NT * REF_MAXC == GPU_REF_MAX_DIM, "head dims the kernels take");

/* The one parameter of every kernel, passed by value. Its CUDA twin in the
 * source is generated from this table with every field 8 bytes wide, so both
 * layouts are the same field list without padding (asserted on both sides).
 * in16: bf16/fp16 input, in32: int32 input, inf32: fp32 input, outf32: fp32
 * output, outf64: fp64 workspace, i64: a size or a stride in elements, f64. */
#define REF_ARGS(X)                                                                                             \
    X(in16, q) X(in16, k) X(in16, v) X(in16, o) X(in16, dout) X(in32, idx) X(in32, tlen) X(inf32, lse_in)       \
    X(outf32, out_o) X(outf32, out_lse) X(outf32, out_dq) X(outf32, out_dk) X(outf32, out_dv) X(outf64, delta) \
    X(i64, q_sb) X(i64, q_ss) X(i64, q_sh) X(i64, k_sb) X(i64, k_ss) X(i64, k_sh) X(i64, v_sb) X(i64, v_ss)     \
    X(i64, v_sh) X(i64, o_sb) X(i64, o_ss) X(i64, o_sh) X(i64, do_sb) X(i64, do_ss) X(i64, do_sh)              \
    X(i64, idx_ss) X(i64, lse_sb) X(i64, lse_ss) X(i64, lse_sh) X(i64, b) X(i64, s_q) X(i64, s_k) X(i64, h_q)  \
    X(i64, h_kv) X(i64, d) X(i64, dv) X(i64, causal) X(i64, topk) X(i64, dt) X(f64, scale)

#define HOST_in16 DevPtr
#define HOST_in32 DevPtr
#define HOST_inf32 DevPtr
#define HOST_outf32 DevPtr
#define HOST_outf64 DevPtr
#define HOST_i64 int64_t
#define HOST_f64 double
#define CUDA_in16 "const u16 *"
#define CUDA_in32 "const int *"
#define CUDA_inf32 "const float *"
#define CUDA_outf32 "float *"
#define CUDA_outf64 "double *"
#define CUDA_i64 "long long "
#define CUDA_f64 "double "
#define AS_HOST(type, name) HOST_##type name;
#define AS_CUDA(type, name) "    " CUDA_##type #name ";\n"
#define AS_ONE(type, name) +1
#define STR_(x) #x
#define STR(x) STR_(x)

typedef struct { REF_ARGS(AS_HOST) } RefArgs;
_Static_assert(sizeof(RefArgs) == 8 * (0 REF_ARGS(AS_ONE)), "RefArgs has padding");

/* The entry points of gpu_ref_source; each call below launches its own sequence. */
#define REF_KERNELS(X)                                                                                          \
    X(K_FWD, "ref_fwd") X(K_DELTA, "ref_delta") X(K_DQ, "ref_bwd_dq") X(K_ATTN_DKV, "ref_attn_bwd_dkv")         \
    X(K_MLA_DKV, "ref_mla_bwd_dkv")
#define AS_ENUM(id, name) id,
#define AS_NAME(id, name) name,
enum { REF_KERNELS(AS_ENUM) K_COUNT };
const char *const gpu_ref_entries[] = { REF_KERNELS(AS_NAME) NULL };

const char gpu_ref_source[] =
    "/* ptxgen GPU reference kernels (runner/gpu_ref.c), compiled at run time by NVRTC. */\n"
    "#define NT " STR(REF_NT) "\n"
    "#define MAXC " STR(REF_MAXC) "\n"
    "#define CH " STR(REF_CH) "\n"
    "typedef unsigned short u16;\n"
    "struct RefArgs {\n" REF_ARGS(AS_CUDA) "};\n"
    "static_assert(sizeof(RefArgs) == 8 * (" STR(0 REF_ARGS(AS_ONE)) "), \"RefArgs has padding\");\n"
    "#define NW (NT / 32)\n"
    "#define MAXD (NT * MAXC)\n"
    "#define INF __longlong_as_double(0x7ff0000000000000LL)\n"
    "\n"
    "/* One element of a bf16 (dt 0) or fp16 (dt 1) tensor as float: exact. */\n"
    "__device__ float elem(const u16 *p, long long dt)\n"
    "{\n"
    "    u16 h = *p;\n"
    "    float f;\n"
    "    if (dt == 0) return __uint_as_float((unsigned)h << 16);\n"
    "    asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n"
    "    return f;\n"
    "}\n"
    "__device__ float elem(const float *p, long long) { return *p; }\n"
    "\n"
    "/* Sum (or max) over the 32 lanes of a warp; every lane gets it. */\n"
    "__device__ double warp_reduce(double v, bool is_max)\n"
    "{\n"
    "    for (int o = 16; o > 0; o >>= 1) {\n"
    "        double w = __shfl_xor_sync(0xffffffffu, v, o);\n"
    "        v = is_max ? fmax(v, w) : v + w;\n"
    "    }\n"
    "    return v;\n"
    "}\n"
    "\n"
    "/* Sum (or max) of one value per thread over the block, in a fixed order;\n"
    "   every thread gets the same result. */\n"
    "__device__ double block_reduce(double v, bool is_max)\n"
    "{\n"
    "    __shared__ double part[NW];\n"
    "    v = warp_reduce(v, is_max);\n"
    "    __syncthreads();   /* the previous call's readers of part[] are done */\n"
    "    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;\n"
    "    __syncthreads();\n"
    "    v = part[0];\n"
    "    for (int w = 1; w < NW; w++) v = is_max ? fmax(v, part[w]) : v + part[w];\n"
    "    return v;\n"
    "}\n"
    "\n"
    "/* x[0, n) . y[0, n) by one warp in double (each product is exact); every lane gets it. */\n"
    "template <class X> __device__ double warp_dot(const X *x, const u16 *y, int n, long long dt)\n"
    "{\n"
    "    double s = 0;\n"
    "    for (int c = threadIdx.x % 32; c < n; c += 32) s += (double)elem(x + c, dt) * elem(y + c, dt);\n"
    "    return warp_reduce(s, false);\n"
    "}\n"
    "\n"
    "/* dst[0, n) = src[0, n) as float, by the block; the caller syncs before reading. */\n"
    "__device__ void load_vec(float *dst, const u16 *src, int n, long long dt)\n"
    "{\n"
    "    for (int c = threadIdx.x; c < n; c += NT) dst[c] = elem(src + c, dt);\n"
    "}\n"
    "\n"
    "/* dst[c] = f * acc[k] for this thread's columns c = threadIdx.x + k * NT < width. */\n"
    "__device__ void store_cols(float *dst, const double *acc, double f, int width)\n"
    "{\n"
    "    for (int k = 0; k < MAXC; k++)\n"
    "        if (threadIdx.x + k * NT < width) dst[threadIdx.x + k * NT] = (float)(f * acc[k]);\n"
    "}\n"
    "\n"
    "/* Row r of a matrix starts at p + r * step; a row's elements are contiguous. */\n"
    "struct Rows { const u16 *p; long long step; };\n"
    "\n"
    "/* The rows one query reads, slot by slot, for slots [0, n). Without idx slot j\n"
    "   reads row first + j while j < len. With idx, slot j reads row idx[j] when\n"
    "   j < len and 0 <= idx[j] < n_rows; any other slot is invalid and reads nothing. */\n"
    "struct Gather { const int *idx; int n, len, first, n_rows; };\n"
    "\n"
    "__device__ int slot_row(const Gather &g, int j)\n"
    "{\n"
    "    if (j >= g.len) return -1;\n"
    "    if (!g.idx) return g.first + j;\n"
    "    int r = g.idx[j];\n"
    "    return r >= 0 && r < g.n_rows ? r : -1;\n"
    "}\n"
    "\n"
    "/* row[] = the rows of slots [j0, j0 + CH) (-1: invalid); returns how many slots. */\n"
    "__device__ int load_chunk(int *row, const Gather &g, int j0)\n"
    "{\n"
    "    int nc = min(CH, g.n - j0);\n"
    "    __syncthreads();   /* the previous chunk's readers are done */\n"
    "    for (int j = threadIdx.x; j < nc; j += NT) row[j] = slot_row(g, j0 + j);\n"
    "    __syncthreads();\n"
    "    return nc;\n"
    "}\n"
    "\n"
    "/* acc[k] += sum over the chunk's valid slots j of w[j] * M[row[j]][c], for this\n"
    "   thread's columns c = threadIdx.x + k * NT < width. */\n"
    "__device__ void gather_cols(double *acc, const double *w, const int *row, int nc, Rows m, int width, long long dt)\n"
    "{\n"
    "    for (int k = 0; k < MAXC; k++) {\n"
    "        int c = threadIdx.x + k * NT;\n"
    "        if (c >= width) continue;\n"
    "        for (int j = 0; j < nc; j++)\n"
    "            if (row[j] >= 0) acc[k] += w[j] * elem(m.p + row[j] * m.step + c, dt);\n"
    "    }\n"
    "}\n"
    "\n"
    "/* Forward of one query row q[d] (shared memory): S_j = scale * q . K_r over the\n"
    "   valid slots, P = softmax(S), o = P V, lse = logsumexp(S), online over chunks\n"
    "   of CH slots. No valid slot: lse = +inf and o = 0. */\n"
    "__device__ void attend(const Gather &g, Rows K, Rows V, const float *q, int d, int dv, double scale, long long dt,\n"
    "                       float *o, float *lse)\n"
    "{\n"
    "    __shared__ int row[CH];\n"
    "    __shared__ double w[CH];\n"
    "    double m = -INF, l = 0, acc[MAXC] = {0};\n"
    "    for (int j0 = 0; j0 < g.n; j0 += CH) {\n"
    "        int nc = load_chunk(row, g, j0);\n"
    "        for (int j = threadIdx.x / 32; j < nc; j += NW) {\n"
    "            double s = row[j] < 0 ? -INF : scale * warp_dot(q, K.p + row[j] * K.step, d, dt);\n"
    "            if (threadIdx.x % 32 == 0) w[j] = s;\n"
    "        }\n"
    "        __syncthreads();\n"
    "        double cmax = -INF;\n"
    "        for (int j = threadIdx.x; j < nc; j += NT) cmax = fmax(cmax, w[j]);\n"
    "        double m_new = fmax(m, block_reduce(cmax, true));\n"
    "        if (m_new == -INF) continue;   /* no valid slot yet: the same in every thread */\n"
    "        double alpha = exp(m - m_new), psum = 0;   /* alpha = 0 while m = -inf */\n"
    "        for (int j = threadIdx.x; j < nc; j += NT) {   /* the same j as the max loop: no race */\n"
    "            w[j] = exp(w[j] - m_new);   /* 0 for invalid slots */\n"
    "            psum += w[j];\n"
    "        }\n"
    "        l = l * alpha + block_reduce(psum, false);\n"
    "        __syncthreads();   /* w[] (already published by block_reduce's barriers) */\n"
    "        for (int k = 0; k < MAXC; k++) acc[k] *= alpha;\n"
    "        gather_cols(acc, w, row, nc, V, dv, dt);\n"
    "        m = m_new;\n"
    "    }\n"
    "    if (threadIdx.x == 0) *lse = m == -INF ? INF : m + log(l);\n"
    "    store_cols(o, acc, m == -INF ? 0.0 : 1.0 / l, dv);\n"
    "}\n"
    "\n"
    "/* lse and delta of row r: lse[r * lse_step], delta[r * delta_step] (step 0: one value for all rows). */\n"
    "struct Stat { const float *lse; long long lse_step; const double *delta; long long delta_step; };\n"
    "\n"
    "/* One backward pass over the valid slots of g, slot j reading row r of A and of B:\n"
    "       P = exp(scale * a . A_r - lse_r),   dS = P * (b . B_r - delta_r),\n"
    "       acc_a += dS * A_r[:na],   acc_b += P * B_r[:nb] (skipped when acc_b is 0).\n"
    "   a[na] and b[nb] are in shared memory. For dq: a = q, A = K, b = dO, B = V.\n"
    "   For dK/dV of one key row: a = k, A = Q, b = v, B = dO, slots over queries. */\n"
    "__device__ void grad_rows(const Gather &g, Rows A, Rows B, Stat st, const float *a, int na, const float *b, int nb,\n"
    "                          double scale, long long dt, double *acc_a, double *acc_b)\n"
    "{\n"
    "    __shared__ int row[CH];\n"
    "    __shared__ double p[CH], ds[CH];\n"
    "    for (int j0 = 0; j0 < g.n; j0 += CH) {\n"
    "        int nc = load_chunk(row, g, j0);\n"
    "        for (int j = threadIdx.x / 32; j < nc; j += NW) {\n"
    "            int r = row[j];\n"
    "            double pj = 0, dsj = 0;\n"
    "            if (r >= 0) {\n"
    "                pj = exp(scale * warp_dot(a, A.p + r * A.step, na, dt) - st.lse[r * st.lse_step]);\n"
    "                dsj = pj * (warp_dot(b, B.p + r * B.step, nb, dt) - st.delta[r * st.delta_step]);\n"
    "            }\n"
    "            if (threadIdx.x % 32 == 0) {\n"
    "                p[j] = pj;\n"
    "                ds[j] = dsj;\n"
    "            }\n"
    "        }\n"
    "        __syncthreads();\n"
    "        gather_cols(acc_a, ds, row, nc, A, na, dt);\n"
    "        if (acc_b) gather_cols(acc_b, p, row, nc, B, nb, dt);\n"
    "    }\n"
    "}\n"
    "\n"
    "/* ---- where things are ---- */\n"
    "\n"
    "/* A query row: batch b, head h, position i (MLA: b = 0, i = the token). */\n"
    "struct QRow { long long b, h, i; };\n"
    "\n"
    "/* Block blk's query row. Attention walks i fastest (neighbours share K/V rows),\n"
    "   MLA walks h fastest (a token's heads share its top-k rows). */\n"
    "__device__ QRow query_row(const RefArgs &a, long long blk)\n"
    "{\n"
    "    QRow r;\n"
    "    if (a.idx) {\n"
    "        r.h = blk % a.h_q;\n"
    "        r.i = blk / a.h_q % a.s_q;\n"
    "        r.b = blk / (a.h_q * a.s_q);\n"
    "    } else {\n"
    "        r.i = blk % a.s_q;\n"
    "        r.h = blk / a.s_q % a.h_q;\n"
    "        r.b = blk / (a.s_q * a.h_q);\n"
    "    }\n"
    "    return r;\n"
    "}\n"
    "\n"
    "/* Row of r in the [b, s_q, h_q] outputs (o, dq) and in delta. */\n"
    "__device__ long long out_row(const RefArgs &a, QRow r) { return (r.b * a.s_q + r.i) * a.h_q + r.h; }\n"
    "__device__ long long lse_at(const RefArgs &a, QRow r) { return r.b * a.lse_sb + r.h * a.lse_sh + r.i * a.lse_ss; }\n"
    "\n"
    "/* The slots of query row r: its top-k (MLA) or its visible key prefix (attention). */\n"
    "__device__ Gather query_keys(const RefArgs &a, QRow r)\n"
    "{\n"
    "    Gather g = {0, 0, 0, 0, (int)a.s_k};\n"
    "    if (a.idx) {\n"
    "        g.idx = a.idx + r.i * a.idx_ss;\n"
    "        g.n = (int)a.topk;\n"
    "        g.len = a.tlen ? a.tlen[r.i] : g.n;\n"
    "    } else {\n"
    "        long long n = a.causal ? r.i + a.s_k - a.s_q + 1 : a.s_k;\n"
    "        g.n = g.len = (int)max(0LL, min(n, a.s_k));\n"
    "    }\n"
    "    return g;\n"
    "}\n"
    "\n"
    "/* K and V rows of r's kv head (GQA: h / (h_q / h_kv); MLA: the one latent head). */\n"
    "__device__ void kv_rows(const RefArgs &a, QRow r, Rows *K, Rows *V)\n"
    "{\n"
    "    long long hk = r.h / (a.h_q / a.h_kv);\n"
    "    K->p = a.k + r.b * a.k_sb + hk * a.k_sh;\n"
    "    K->step = a.k_ss;\n"
    "    V->p = a.v + r.b * a.v_sb + hk * a.v_sh;\n"
    "    V->step = a.v_ss;\n"
    "}\n"
    "\n"
    "/* ---- kernels: one block of NT threads each, a 1-D grid ---- */\n"
    "\n"
    "/* o and lse of one query row. */\n"
    "extern \"C\" __global__ void __launch_bounds__(NT) ref_fwd(RefArgs a)\n"
    "{\n"
    "    __shared__ float q[MAXD];\n"
    "    QRow r = query_row(a, blockIdx.x);\n"
    "    Rows K, V;\n"
    "    kv_rows(a, r, &K, &V);\n"
    "    load_vec(q, a.q + r.b * a.q_sb + r.i * a.q_ss + r.h * a.q_sh, (int)a.d, a.dt);\n"
    "    __syncthreads();\n"
    "    attend(query_keys(a, r), K, V, q, (int)a.d, (int)a.dv, a.scale, a.dt, a.out_o + out_row(a, r) * a.dv,\n"
    "           a.out_lse + lse_at(a, r));\n"
    "}\n"
    "\n"
    "/* delta = dO . O of every query row, one warp a row, in [b, s_q, h_q] order. */\n"
    "extern \"C\" __global__ void __launch_bounds__(NT) ref_delta(RefArgs a)\n"
    "{\n"
    "    long long r = (long long)blockIdx.x * NW + threadIdx.x / 32;\n"
    "    if (r >= a.b * a.s_q * a.h_q) return;   /* whole warps; no barrier follows */\n"
    "    long long h = r % a.h_q, i = r / a.h_q % a.s_q, b = r / (a.h_q * a.s_q);\n"
    "    double s = warp_dot(a.o + b * a.o_sb + i * a.o_ss + h * a.o_sh, a.dout + b * a.do_sb + i * a.do_ss + h * a.do_sh,\n"
    "                        (int)a.dv, a.dt);\n"
    "    if (threadIdx.x % 32 == 0) a.delta[r] = s;\n"
    "}\n"
    "\n"
    "/* dq of one query row: scale * sum_j dS_j K_j. */\n"
    "extern \"C\" __global__ void __launch_bounds__(NT) ref_bwd_dq(RefArgs a)\n"
    "{\n"
    "    __shared__ float q[MAXD], dout[MAXD];\n"
    "    QRow r = query_row(a, blockIdx.x);\n"
    "    Rows K, V;\n"
    "    kv_rows(a, r, &K, &V);\n"
    "    load_vec(q, a.q + r.b * a.q_sb + r.i * a.q_ss + r.h * a.q_sh, (int)a.d, a.dt);\n"
    "    load_vec(dout, a.dout + r.b * a.do_sb + r.i * a.do_ss + r.h * a.do_sh, (int)a.dv, a.dt);\n"
    "    __syncthreads();\n"
    "    Stat st = {a.lse_in + lse_at(a, r), 0, a.delta + out_row(a, r), 0};\n"
    "    double acc[MAXC] = {0};\n"
    "    grad_rows(query_keys(a, r), K, V, st, q, (int)a.d, dout, (int)a.dv, a.scale, a.dt, acc, 0);\n"
    "    store_cols(a.out_dq + out_row(a, r) * a.d, acc, a.scale, (int)a.d);\n"
    "}\n"
    "\n"
    "/* Attention dK and dV of key j of kv head hk: sums over the group's query heads\n"
    "   and the queries that see key j. Deterministic: no atomics. */\n"
    "extern \"C\" __global__ void __launch_bounds__(NT) ref_attn_bwd_dkv(RefArgs a)\n"
    "{\n"
    "    __shared__ float k[MAXD], v[MAXD];\n"
    "    long long blk = blockIdx.x, j = blk % a.s_k, hk = blk / a.s_k % a.h_kv, b = blk / (a.s_k * a.h_kv);\n"
    "    long long group = a.h_q / a.h_kv, i0 = a.causal ? max(0LL, j - (a.s_k - a.s_q)) : 0;\n"
    "    int nq = (int)max(0LL, a.s_q - i0);\n"
    "    Gather g = {0, nq, nq, (int)i0, (int)a.s_q};\n"
    "    double acc_k[MAXC] = {0}, acc_v[MAXC] = {0};\n"
    "    load_vec(k, a.k + b * a.k_sb + j * a.k_ss + hk * a.k_sh, (int)a.d, a.dt);\n"
    "    load_vec(v, a.v + b * a.v_sb + j * a.v_ss + hk * a.v_sh, (int)a.dv, a.dt);\n"
    "    __syncthreads();\n"
    "    for (long long h = hk * group; h < (hk + 1) * group; h++) {\n"
    "        Rows Q = {a.q + b * a.q_sb + h * a.q_sh, a.q_ss}, dO = {a.dout + b * a.do_sb + h * a.do_sh, a.do_ss};\n"
    "        Stat st = {a.lse_in + b * a.lse_sb + h * a.lse_sh, a.lse_ss, a.delta + b * a.s_q * a.h_q + h, a.h_q};\n"
    "        grad_rows(g, Q, dO, st, k, (int)a.d, v, (int)a.dv, a.scale, a.dt, acc_k, acc_v);\n"
    "    }\n"
    "    long long row = (b * a.s_k + j) * a.h_kv + hk;\n"
    "    store_cols(a.out_dk + row * a.d, acc_k, a.scale, (int)a.d);\n"
    "    store_cols(a.out_dv + row * a.dv, acc_v, 1.0, (int)a.dv);\n"
    "}\n"
    "\n"
    "/* MLA dkv for slot j of token t reading kv row r, over the token's heads h:\n"
    "   dkv[r, :d_qk] += scale * sum_h dS_h q[t, h],  dkv[r, :d_v] += sum_h P_h dO[t, h],\n"
    "   by fp32 atomics into the zeroed out_dk (= dkv). An invalid slot touches nothing. */\n"
    "extern \"C\" __global__ void __launch_bounds__(NT) ref_mla_bwd_dkv(RefArgs a)\n"
    "{\n"
    "    __shared__ float kv[MAXD];\n"
    "    long long t = blockIdx.x / a.topk;\n"
    "    QRow tok = {0, 0, t};\n"
    "    int slot = (int)(blockIdx.x % a.topk), r = slot_row(query_keys(a, tok), slot);\n"
    "    if (r < 0) return;   /* the whole block, before any barrier */\n"
    "    Gather heads = {0, (int)a.h_q, (int)a.h_q, 0, (int)a.h_q};\n"
    "    Rows Q = {a.q + t * a.q_ss, a.q_sh}, dO = {a.dout + t * a.do_ss, a.do_sh};\n"
    "    Stat st = {a.lse_in + t * a.lse_ss, a.lse_sh, a.delta + t * a.h_q, 1};\n"
    "    double acc_q[MAXC] = {0}, acc_o[MAXC] = {0};\n"
    "    load_vec(kv, a.k + r * a.k_ss, (int)a.d, a.dt);\n"
    "    __syncthreads();\n"
    "    grad_rows(heads, Q, dO, st, kv, (int)a.d, kv, (int)a.dv, a.scale, a.dt, acc_q, acc_o);\n"
    "    for (int k = 0; k < MAXC; k++) {\n"
    "        int c = threadIdx.x + k * NT;\n"
    "        if (c < a.d) atomicAdd(a.out_dk + r * a.d + c, (float)(a.scale * acc_q[k] + (c < a.dv ? acc_o[k] : 0.0)));\n"
    "    }\n"
    "}\n"
    ;

struct GpuRef { Device *dev; DevModule *mod; DevFunc *fn[K_COUNT]; };

/* Puts "what: " in front of the message already in err. */
static int err_prefix(char *err, size_t errlen, const char *what)
{
    size_t n = strlen(what) + 2, used;
    if (!err || !errlen) return -1;
    used = strnlen(err, errlen - 1);
    if (n + 1 >= errlen) return -1;
    if (used + n >= errlen) used = errlen - n - 1;
    memmove(err + n, err, used);
    memcpy(err, what, n - 2);
    memcpy(err + n - 2, ": ", 2);
    err[n + used] = '\0';
    return -1;
}

/* NVRTC for dev's compute capability, then the driver's JIT; PTX newer than
 * the driver understands fails in the second step, naming both versions. */
static int build(GpuRef *g, char *err, size_t errlen)
{
    DevInfo info;
    Nvrtc *nv = NULL;
    char *ptx = NULL, dump[64], what[400];
    int major = 0, minor = 0, rc = -1;
    if (dev_info(g->dev, &info, err, errlen) || nvrtc_open(&nv, err, errlen)) return -1;
    nvrtc_version(nv, &major, &minor);
    snprintf(dump, sizeof dump, "gpu_ref_sm_%d%d", info.cc_major, info.cc_minor);
    snprintf(what, sizeof what, "gpu_ref: loading the PTX of NVRTC %d.%d on %s", major, minor, info.name);
    if (nvrtc_compile(nv, gpu_ref_source, "ptxgen_gpu_ref.cu", info.cc_major, info.cc_minor, &ptx, NULL, err,
                      errlen) == 0)
        rc = dev_load_ptx(g->dev, ptx, dump, &g->mod, err, errlen) ? err_prefix(err, errlen, what) : 0;
    for (int k = 0; rc == 0 && k < K_COUNT; k++) rc = dev_get_func(g->mod, gpu_ref_entries[k], &g->fn[k], err, errlen);
    free(ptx);
    nvrtc_close(nv);
    return rc;
}

int gpu_ref_open(GpuRef **out, Device *dev, char *err, size_t errlen)
{
    GpuRef *g;
    *out = NULL;
    if (strcmp(dev_kind(dev), "cuda") != 0)
        return dev_errf(err, errlen, "GPU references need the cuda device (the %s device cannot run NVRTC's PTX)",
                        dev_kind(dev));
    if (!(g = calloc(1, sizeof *g))) return dev_errf(err, errlen, "gpu_ref_open: out of memory");
    g->dev = dev;
    if (build(g, err, errlen)) {
        gpu_ref_close(g);
        return -1;
    }
    *out = g;
    return 0;
}

void gpu_ref_close(GpuRef *g)
{
    if (!g) return;
    dev_unload(g->mod);
    free(g);
}

/* ---- shapes ---- */

static int bad_dims(const char *what, int d, int dv, DType t, char *err, size_t errlen)
{
    if (t != DT_BF16 && t != DT_FP16) return dev_errf(err, errlen, "%s: dtype %d is neither bf16 nor fp16", what, (int)t);
    if (d < 1 || dv < 1 || d > GPU_REF_MAX_DIM || dv > GPU_REF_MAX_DIM)
        return dev_errf(err, errlen, "%s: head dims %d and %d must lie in [1, %d]", what, d, dv, GPU_REF_MAX_DIM);
    return 0;
}

/* Each block count must fit a 1-D grid (and every length an int in the kernels). */
static int bad_blocks(const char *what, long long blocks, char *err, size_t errlen)
{
    if (blocks > INT32_MAX) return dev_errf(err, errlen, "%s: %lld blocks exceed the grid's %d", what, blocks, INT32_MAX);
    return 0;
}

static int bad_attn(const GpuRefAttn *p, char *err, size_t errlen)
{
    if (p->b < 1 || p->s_q < 1 || p->s_k < 1 || p->h_q < 1 || p->h_kv < 1)
        return dev_errf(err, errlen, "gpu_ref attn: b %d, s_q %d, s_k %d, h_q %d, h_kv %d must all be >= 1", p->b,
                        p->s_q, p->s_k, p->h_q, p->h_kv);
    if (p->h_q % p->h_kv)
        return dev_errf(err, errlen, "gpu_ref attn: h_q %d is not a multiple of h_kv %d", p->h_q, p->h_kv);
    return bad_dims("gpu_ref attn", p->d, p->dv, p->dtype, err, errlen) ||
           bad_blocks("gpu_ref attn", (long long)p->b * p->h_q * p->s_q, err, errlen) ||
           bad_blocks("gpu_ref attn", (long long)p->b * p->h_kv * p->s_k, err, errlen);
}

static int bad_mla(const GpuRefMla *p, DevPtr indices, char *err, size_t errlen)
{
    if (p->s_q < 1 || p->s_kv < 1 || p->h_q < 1 || p->topk < 1)
        return dev_errf(err, errlen, "gpu_ref mla: s_q %d, s_kv %d, h_q %d, topk %d must all be >= 1", p->s_q,
                        p->s_kv, p->h_q, p->topk);
    if (!indices) return dev_errf(err, errlen, "gpu_ref mla: indices is required");
    if (p->d_v > p->d_qk)
        return dev_errf(err, errlen, "gpu_ref mla: d_v %d exceeds d_qk %d (V is the first d_v columns of kv)", p->d_v,
                        p->d_qk);
    return bad_dims("gpu_ref mla", p->d_qk, p->d_v, p->dtype, err, errlen) ||
           bad_blocks("gpu_ref mla", (long long)p->s_q * p->h_q, err, errlen) ||
           bad_blocks("gpu_ref mla", (long long)p->s_q * p->topk, err, errlen);
}

static void strides(int64_t *sb, int64_t *ss, int64_t *sh, GpuRefStride st)
{
    *sb = st.b;
    *ss = st.s;
    *sh = st.h;
}

/* Attention as the kernels see it: lse [b, h_q, s_q], no index list. */
static RefArgs attn_args(const GpuRefAttn *p)
{
    RefArgs a;
    memset(&a, 0, sizeof a);
    strides(&a.q_sb, &a.q_ss, &a.q_sh, p->q);
    strides(&a.k_sb, &a.k_ss, &a.k_sh, p->k);
    strides(&a.v_sb, &a.v_ss, &a.v_sh, p->v);
    strides(&a.o_sb, &a.o_ss, &a.o_sh, p->o);
    strides(&a.do_sb, &a.do_ss, &a.do_sh, p->dout);
    a.lse_sb = (int64_t)p->h_q * p->s_q, a.lse_sh = p->s_q, a.lse_ss = 1;
    a.b = p->b, a.s_q = p->s_q, a.s_k = p->s_k, a.h_q = p->h_q, a.h_kv = p->h_kv, a.d = p->d, a.dv = p->dv;
    a.causal = p->causal != 0, a.dt = p->dtype, a.scale = p->scale;
    return a;
}

/* MLA as attention with one batch, one kv head whose K and V are the same kv
 * rows, slots from the index list, and lse [s_q, h_q]. */
static RefArgs mla_args(const GpuRefMla *p, DevPtr kv, DevPtr indices, DevPtr topk_length)
{
    RefArgs a;
    memset(&a, 0, sizeof a);
    a.k = a.v = kv, a.idx = indices, a.tlen = topk_length;
    a.q_ss = p->q_stride_s, a.q_sh = p->q_stride_h, a.k_ss = a.v_ss = p->kv_stride_s;
    a.o_ss = p->o_stride_s, a.o_sh = p->o_stride_h, a.do_ss = p->do_stride_s, a.do_sh = p->do_stride_h;
    a.idx_ss = p->indices_stride_s, a.lse_ss = p->h_q, a.lse_sh = 1;
    a.b = 1, a.s_q = p->s_q, a.s_k = p->s_kv, a.h_q = p->h_q, a.h_kv = 1, a.d = p->d_qk, a.dv = p->d_v;
    a.topk = p->topk, a.dt = p->dtype, a.scale = p->scale;
    return a;
}

/* ---- launches ---- */

static int launch(GpuRef *g, int kern, long long blocks, RefArgs *a, char *err, size_t errlen)
{
    unsigned grid[3] = { (unsigned)blocks, 1, 1 }, block[3] = { REF_NT, 1, 1 };
    void *args[] = { a };
    if (dev_launch(g->fn[kern], grid, block, 0, args, err, errlen) == 0) return 0;
    return err_prefix(err, errlen, gpu_ref_entries[kern]);
}

/* Synchronizes, so that a fault inside a reference kernel is reported as one. */
static int finish(GpuRef *g, const char *what, char *err, size_t errlen)
{
    return dev_sync(g->dev, err, errlen) ? err_prefix(err, errlen, what) : 0;
}

static int run_fwd(GpuRef *g, RefArgs *a, const char *what, char *err, size_t errlen)
{
    return (launch(g, K_FWD, a->b * a->h_q * a->s_q, a, err, errlen) || finish(g, what, err, errlen)) ? -1 : 0;
}

/* delta, then dq, then the dkv kernel (attention per key row; MLA per slot,
 * into out_dk zeroed here when zero_bytes > 0). */
static int run_bwd(GpuRef *g, RefArgs *a, int dkv_kernel, long long dkv_blocks, size_t zero_bytes, const char *what,
                   char *err, size_t errlen)
{
    long long rows = a->b * a->s_q * a->h_q;
    int rc = dev_alloc(g->dev, &a->delta, (size_t)rows * sizeof(double), err, errlen);
    if (!rc && zero_bytes) rc = dev_fill_u8(g->dev, a->out_dk, 0, zero_bytes, err, errlen);
    if (!rc)
        rc = (launch(g, K_DELTA, (rows + REF_NT / 32 - 1) / (REF_NT / 32), a, err, errlen) ||
              launch(g, K_DQ, rows, a, err, errlen) || launch(g, dkv_kernel, dkv_blocks, a, err, errlen) ||
              finish(g, what, err, errlen)) ? -1 : 0;
    /* A failed free after a failure keeps the first message. */
    if (a->delta && dev_free(g->dev, a->delta, rc ? NULL : err, rc ? 0 : errlen)) rc = -1;
    return rc;
}

int gpu_ref_attn_fwd(GpuRef *g, const GpuRefAttn *p, DevPtr q, DevPtr k, DevPtr v, DevPtr o, DevPtr lse, char *err,
                     size_t errlen)
{
    RefArgs a;
    if (bad_attn(p, err, errlen)) return -1;
    a = attn_args(p);
    a.q = q, a.k = k, a.v = v, a.out_o = o, a.out_lse = lse;
    return run_fwd(g, &a, "gpu_ref attn_fwd", err, errlen);
}

int gpu_ref_attn_bwd(GpuRef *g, const GpuRefAttn *p, DevPtr q, DevPtr k, DevPtr v, DevPtr o, DevPtr dout, DevPtr lse,
                     DevPtr dq, DevPtr dk, DevPtr dv, char *err, size_t errlen)
{
    RefArgs a;
    if (bad_attn(p, err, errlen)) return -1;
    a = attn_args(p);
    a.q = q, a.k = k, a.v = v, a.o = o, a.dout = dout, a.lse_in = lse, a.out_dq = dq, a.out_dk = dk, a.out_dv = dv;
    return run_bwd(g, &a, K_ATTN_DKV, (long long)p->b * p->h_kv * p->s_k, 0, "gpu_ref attn_bwd", err, errlen);
}

int gpu_ref_mla_fwd(GpuRef *g, const GpuRefMla *p, DevPtr q, DevPtr kv, DevPtr indices, DevPtr topk_length, DevPtr o,
                    DevPtr lse, char *err, size_t errlen)
{
    RefArgs a;
    if (bad_mla(p, indices, err, errlen)) return -1;
    a = mla_args(p, kv, indices, topk_length);
    a.q = q, a.out_o = o, a.out_lse = lse;
    return run_fwd(g, &a, "gpu_ref mla_fwd", err, errlen);
}

int gpu_ref_mla_bwd(GpuRef *g, const GpuRefMla *p, DevPtr q, DevPtr kv, DevPtr o, DevPtr dout, DevPtr lse,
                    DevPtr indices, DevPtr topk_length, DevPtr dq, DevPtr dkv, char *err, size_t errlen)
{
    RefArgs a;
    if (bad_mla(p, indices, err, errlen)) return -1;
    a = mla_args(p, kv, indices, topk_length);
    a.q = q, a.o = o, a.dout = dout, a.lse_in = lse, a.out_dq = dq, a.out_dk = dkv;
    return run_bwd(g, &a, K_MLA_DKV, (long long)p->s_q * p->topk, (size_t)p->s_kv * p->d_qk * sizeof(float),
                   "gpu_ref mla_bwd", err, errlen);
}
