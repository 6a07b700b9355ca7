/* ptxgen public C API: generate a kernel set (PTX text + launch ABI) from a
 * request, read its plan and manifest, and compute launch dimensions for a
 * problem. Generation needs no GPU and no CUDA driver. */
#ifndef PTXGEN_H
#define PTXGEN_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *arch;     /* "sm_90", "sm_100a", ... (required) */
    const char *kernel;   /* "attn_fwd" (required) */
    const char *dtype;    /* "bf16" (default) or "fp16" */
    int hdim;             /* head dim d; 0 = 128 */
    int causal;           /* bottom-right aligned causal mask */
    const char *tile;     /* "bm=128,bn=64,warps=4"; NULL or "" = defaults for (arch, d) */
    const char *family;   /* MMA instruction family: "sync" (or "mma.sync"), "wgmma", "tcgen05", or NULL /
                             "auto": the arch's newest family (tcgen05 on sm_100a/sm_103a, wgmma on sm_90a,
                             mma.sync elsewhere) among those the kernel has a generator for */
} ptxgen_request;

typedef struct ptxgen_set ptxgen_set;

/* The family a request gets, without building: *family ("mma.sync", ...)
 * and, when auto fell back from the arch's newest family because the kernel
 * has no generator for it yet, a one-line note (else note = ""). 2 with err
 * for an unknown arch, kernel or family, a family the arch lacks ("sm_120 has
 * mma.sync only; tcgen05 needs sm_100a or sm_103a") or one the kernel lacks
 * ("attn_fwd has no tcgen05 generator yet (families: mma.sync)"). */
int ptxgen_pick_family(const ptxgen_request *req, const char **family, char *note, size_t notelen, char *err,
                       size_t errlen);

/* Return codes: 0 ok; 2 the request is invalid or its plan is refused (err
 * names the constraint and the numbers). */
int  ptxgen_build(const ptxgen_request *req, ptxgen_set **out, char *err, size_t errlen);
void ptxgen_free(ptxgen_set *s);

/* The plan table for any well-formed request, including one whose plan is
 * refused (then *fits = 0 and err holds the verdict). NULL if the request is
 * malformed (err says why). Caller frees. */
char *ptxgen_plan_request(const ptxgen_request *req, int *fits, char *err, size_t errlen);

const char *ptxgen_ptx(const ptxgen_set *s);          /* the PTX module */
char *ptxgen_plan_text(const ptxgen_set *s);          /* malloc'd table; caller frees */
char *ptxgen_manifest_json(const ptxgen_set *s);      /* malloc'd JSON; caller frees */
const char *ptxgen_family(const ptxgen_set *s);       /* "mma.sync", "wgmma" or "tcgen05" */
const char *ptxgen_family_note(const ptxgen_set *s);  /* auto's fallback note (see ptxgen_pick_family), or NULL */

/* What exists: one kind per (kernel, family) with a generator, from the same
 * table the build reads. ptxgen_kind_on_arch: 1 when the arch has the kind's
 * family (the kind builds there; a tile's plan may still be refused). */
typedef struct {
    const char *kernel;   /* "attn_fwd" */
    const char *family;   /* "mma.sync" */
    const char *what;     /* one line */
} ptxgen_kind;
int ptxgen_num_kinds(void);
int ptxgen_kind_info(int i, ptxgen_kind *out);
int ptxgen_kind_on_arch(int i, const char *arch);

/* 1 when the set gives bit-identical outputs on every run with the same
 * inputs (no floating-point atomics); attn_bwd is only with deterministic=1. */
int  ptxgen_deterministic(const ptxgen_set *s);
/* The set's head dims: d (d_qk for MLA) and dv (d_v). */
void ptxgen_head_dims(const ptxgen_set *s, int *d, int *dv);

/* Kernels in launch order. */
int  ptxgen_num_kernels(const ptxgen_set *s);
const char *ptxgen_entry(const ptxgen_set *s, int k);

/* PTXGEN_PARAM_TMAP: 128 bytes (64-aligned) passed by value, role TENSOR_MAP: the host encodes the
 * kernel's tensor map of that parameter (ptxgen_tensor_map_info) over the tensor `of` names. */
typedef enum { PTXGEN_PARAM_PTR, PTXGEN_PARAM_U32, PTXGEN_PARAM_U64, PTXGEN_PARAM_F32, PTXGEN_PARAM_TMAP } ptxgen_param_type;
typedef enum { PTXGEN_ROLE_IN, PTXGEN_ROLE_OUT, PTXGEN_ROLE_SIZE, PTXGEN_ROLE_STRIDE, PTXGEN_ROLE_SCALE,
               PTXGEN_ROLE_WORKSPACE, PTXGEN_ROLE_TENSOR_MAP } ptxgen_param_role;
typedef struct {
    const char *name;
    ptxgen_param_type type;
    ptxgen_param_role role;
    const char *meaning, *shape, *dtype;
    const char *of;       /* strides: the tensor; sizes: the size name; workspaces: the workspace */
    const char *dim;      /* strides: "b", "s" or "h" */
} ptxgen_param;
int ptxgen_num_params(const ptxgen_set *s, int k);
int ptxgen_param_info(const ptxgen_set *s, int k, int i, ptxgen_param *out);

/* Problem sizes by name: the names ptxgen_problem_size lists. */
typedef struct { const char *name; long long value; } ptxgen_size;
int ptxgen_launch_dims(const ptxgen_set *s, int k, const ptxgen_size *sizes, int nsizes,
                       unsigned grid[3], unsigned block[3], unsigned *dyn_smem, char *err, size_t errlen);

/* The size names the set's expressions use (grid, cluster, workspaces, tensor
 * maps), derived from its kernels' descriptions: attention b, s_q, s_k, h_q,
 * h_kv; sparse MLA s_q, s_kv, h_q, topk. */
int  ptxgen_num_problem_sizes(const ptxgen_set *s);
const char *ptxgen_problem_size(const ptxgen_set *s, int i);   /* NULL past the end */
/* CTAs per cluster of kernel k for a problem (1, 1, 1 without clusters). */
int ptxgen_cluster_dims(const ptxgen_set *s, int k, const ptxgen_size *sizes, int nsizes, unsigned cluster[3],
                        char *err, size_t errlen);

/* TMA tensor maps kernel k takes by value in parameters: the host encodes each
 * with cuTensorMapEncodeTiled from these fields (none for mma.sync kernels). */
typedef struct {
    const char *param;                 /* the kernel parameter that carries it */
    const char *tensor, *dtype;        /* "q", "bf16" */
    int rank;
    const char *const *dims;           /* rank expressions, innermost first */
    const char *const *strides_bytes;  /* rank - 1 expressions: bytes per index of dims 1 .. rank-1 */
    const int *box;                    /* rank elements */
    const int *element_strides;        /* rank */
    const char *swizzle;               /* "none", "32B", "64B", "128B" */
    const char *interleave;            /* "none", "16B", "32B" */
    const char *oob_fill;              /* "zero" or "nan" */
} ptxgen_tensor_map;
int ptxgen_num_tensor_maps(const ptxgen_set *s, int k);
int ptxgen_tensor_map_info(const ptxgen_set *s, int k, int i, ptxgen_tensor_map *out);

/* Workspaces: device scratch the host allocates once per problem and passes to
 * every kernel parameter with role WORKSPACE and that name. */
typedef struct {
    const char *name;
    const char *bytes;    /* size expression over the problem sizes */
    int zero_init;        /* fill with zeros before launching the set */
    const char *meaning;
} ptxgen_workspace;
int ptxgen_num_workspaces(const ptxgen_set *s);
int ptxgen_workspace_info(const ptxgen_set *s, int i, ptxgen_workspace *out);
int ptxgen_workspace_bytes(const ptxgen_set *s, int i, const ptxgen_size *sizes, int nsizes, unsigned long long *bytes,
                           char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
