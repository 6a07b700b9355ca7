/* One attention or sparse MLA problem on a device: host inputs (rounded to
 * the element type), device buffers in a strided layout, and the kernel's
 * argument list built from its parameter specs. Which tensors a kernel kind
 * reads and writes, how its outputs are judged and its reference computed
 * live in one table in problem.c. */
#ifndef PTXGEN_PROBLEM_H
#define PTXGEN_PROBLEM_H
#include <stddef.h>
#include <stdint.h>
#include "bind.h"
#include "device.h"
#include "gpu_ref.h"
#include "hostdata.h"
#include "ptxgen.h"

typedef struct {
    const char *name;
    int rows, heads, width;      /* [b, rows, heads, width] */
    uint64_t stride_b, stride_s, stride_h;
    size_t elems;                /* elements of the strided allocation */
    size_t count;                /* elements of the contiguous [b, rows, heads, width] view */
    int esize;                   /* bytes per element: 2 (bf16/fp16) or 4 (fp32 LSE, int32 indices) */
    int optional;                /* an input the kernel takes as a null pointer when the problem has none */
    int guarded;                 /* an output: dev sits between canary zones (guard.h), freed with guard_free */
    DevPtr dev;                  /* 0: the kernel kind does not use this tensor (or an optional one is absent) */
    float *host;                 /* contiguous [b, rows, heads, width] values (float inputs) */
    int32_t *ints;               /* the same for int32 inputs */
} Tensor;

#define PROBLEM_MAX_OUTPUTS 3
#define PROBLEM_NSIZES 15

/* The kernel kinds the runner sets up problems for (kKinds in problem.c). */
typedef enum { PK_ATTN_FWD, PK_ATTN_BWD, PK_MLA_FWD, PK_MLA_BWD, PK_COUNT } ProblemKind;
/* The kind of a kernel name; -1 when the runner has no problem for it. */
int problem_kind(const char *kernel);
/* 1 for sparse MLA kinds (s_kv, topk, indices; no batch, one kv head), 0 for dense attention. */
int problem_kind_sparse(ProblemKind k);
/* "attn_fwd, attn_bwd, mla_fwd, mla_bwd": the names problem_kind knows. */
void problem_kind_names(char *buf, size_t len);

typedef struct {
    ProblemKind kind;
    int b, s_q, s_k, h_q, h_kv, d, d_v;          /* head dims of q/k and of v/o; MLA: s_k is s_kv, b = h_kv = 1 */
    int topk;                    /* MLA: slots per token */
    int with_topk_length;        /* MLA: draw topk_length and pass it (else the kernel gets a null pointer) */
    DType dt;
    float scale;
    int causal;
    Tensor q, k, v, o, dout, dq, dk, dv, lse;   /* dout is "do" (a C keyword) */
    Tensor kv, indices, topk_length, dkv;       /* MLA: the latent kv, the top-k selection, kv's gradient */
    BoundArgs bound[6];          /* per kernel of the set: its launch arguments (bind.h) */
    struct { const char *name; DevPtr dev; size_t bytes; int zero, kept; } ws[6];   /* the set's workspaces (kept: the
                                                                                 * set leaves it zeroed) */
    int nws;
    GpuRef *fwd_gpu;             /* set before problem_init: a backward's O and LSE come from this GPU reference's forward */
    /* variable lengths (varlen.h): b sequences packed, offsets cu_q/cu_k (int32 [b + 1]); s_q, s_k the longest */
    int varlen;
    Tensor cu_q, cu_k;
    long long total_q, total_k;
    /* block-sparse (blockmask.h): mask blocks (0: dense), the mask's heads and blocks, how it is drawn */
    int block_m, block_n, n_mask_heads, mask_rows, mask_cols;
    const char *mask_mode;       /* "random:D", "local:W" or a file's path */
    double mask_density;         /* random:D */
    int mask_width;              /* local:W */
    int32_t *mask_file;          /* a file's integers: the mask, then the head types */
    Tensor block_mask, head_mask_type;
    /* paged KV (paged.h): rows per page (0: contiguous k, v), pages in the cache, block-table columns; the tables */
    int page_size, num_pages, max_pages;
    int num_splits;              /* split-KV sets: CTAs per row block sharing its keys (a size the set takes) */
    Tensor block_table, seqlens;
} Problem;

/* t laid out [b, rows, heads, width] with pad elements after each head row (esize bytes an element). */
void problem_layout(Tensor *t, const char *name, int b, int rows, int heads, int width, int pad, int esize);

/* An output the kernel kind writes, with its KERNELS.md tolerance (max relative L2) and
 * whether it must be exactly 0 where the reference is (rows with no valid key, kv rows
 * no valid slot selects; problem_reference leaves no other exact zero in such an output). */
typedef struct { const Tensor *t; double tol; int exact_zero; } ProblemOutput;

/* Allocates the kind's tensors: random N(0,1) inputs, for MLA the indices
 * (and topk_length when asked) from mla_draw_indices, for the backward kinds
 * O and LSE from the float64 forward of those rounded inputs; outputs
 * allocated between armed canary zones (guard.h). */
int  problem_init(Problem *p, Device *dev, uint64_t seed, int pad, char *err, size_t errlen);
/* The outputs, in a fixed order per kind; returns their count. */
int  problem_outputs(Problem *p, ProblemOutput out[PROBLEM_MAX_OUTPUTS]);
/* The float64 reference of every output, in problem_outputs order (each ref[i] holds t->count values);
 * in an exact_zero output, zeros by cancellation become DBL_TRUE_MIN (problem.c mark_cancellations).
 * norm_floor[i]: output i's norm floor for verify.h (verify_term_floor of its terms' norm: dq, and
 * attn_bwd's dk, sum signed terms that may cancel; 0 for every other output).
 * 1 with a message when the host runs out of memory. */
int problem_reference(const Problem *p, double *const ref[PROBLEM_MAX_OUTPUTS], double norm_floor[PROBLEM_MAX_OUTPUTS],
                      char *err, size_t errlen);
/* The same from the GPU reference g on dev (gpu_ref.h: float64 sums, fp32
 * outputs widened to double): it reads the problem's device inputs (for
 * the backward kinds O and LSE as problem_init derived them), never its outputs.
 * Its norm floors are 0 (problem.c says why). */
int  problem_gpu_reference(Problem *p, GpuRef *g, Device *dev, double *const ref[PROBLEM_MAX_OUTPUTS],
                           double norm_floor[PROBLEM_MAX_OUTPUTS], char *err, size_t errlen);
/* Floating-point operations of one run of the set (KERNELS.md "Judging a result", MLA "FLOPs for reports"). */
double problem_flops(const Problem *p);
/* The shape in words ("b=1 s_q=... d=128 causal", "s_q=4 s_kv=300 ... topk_length"), and for MLA
 * the drawn selection ("valid slots 412/512, 1 token with none"), after problem_init. */
void problem_describe(const Problem *p, char *buf, size_t len);
/* Before a run: the NaN pattern in every output, the canary in its guards. */
int  problem_poison_outputs(Problem *p, Device *dev, char *err, size_t errlen);
/* After a run: 0 when every output's canary zones are intact, else non-zero
 * with err naming the first overwritten one ("canary after dkv overwritten at
 * byte +12 (...)"). */
int  problem_check_guards(Problem *p, Device *dev, char *err, size_t errlen);
/* Downloads t into dst, contiguous [b, rows, heads, width] (t->count elements of t->esize bytes). */
int  problem_download(Device *dev, const Tensor *t, void *dst, char *err, size_t errlen);
/* Allocates the set's workspaces at this problem's sizes. */
int  problem_workspaces(Problem *p, Device *dev, const ptxgen_set *s, char *err, size_t errlen);
/* Zero-fills the workspaces the manifest marks zero_init: before every launch of the set (those it also marks
 * kept_zero, once: problem_workspaces zeroes them after allocating). */
int  problem_zero_workspaces(Problem *p, Device *dev, char *err, size_t errlen);
/* The workspaces the set promises to leave zeroed (kept_zero: counters, semaphores), checked after a run. */
int  problem_check_kept_zero(const Problem *p, Device *dev, char *err, size_t errlen);
/* Prints workspace `name` as u32 words, one line ("workspace NAME u32[N]: ..."); an unknown name is an error that
 * lists the set's. */
int  problem_print_workspace(const Problem *p, Device *dev, const char *name, FILE *f, char *err, size_t errlen);
/* Fills args[kernel] in the kernel's parameter order; checks strides fit the kernel's 32-bit row math. */
/* Tensor-map parameters are encoded on dev over the bound tensor (its dims and strides from the
 * set's expressions, over the problem sizes and the kernel's stride parameters). */
int  problem_args(Problem *p, const ptxgen_set *s, int kernel, Device *dev, char *err, size_t errlen);
/* The problem sizes by name (b s_q s_k h_q h_kv s_kv topk total_q), for launch dimensions and workspace sizes. */
int  problem_sizes(const Problem *p, ptxgen_size out[PROBLEM_NSIZES]);
void problem_free(Problem *p, Device *dev);
#endif
