/* ptxgen public C API: generate a kernel set (PTX text + launch ABI) from a
 * request, read its plan and manifest, and compute launch dimensions for a
 * problem. Generation needs no GPU and no CUDA driver. */
#ifndef PTXGEN_H
#define PTXGEN_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library exports these names only (it is built with -fvisibility=hidden). */
#if defined(__GNUC__)
#define PTXGEN_API __attribute__((visibility("default")))
#else
#define PTXGEN_API
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
    const char *shape_class;   /* ptxgen_shape_class of the problem, or NULL: with it and no tile, a tile `ptxgen tune`
                                  saved for this arch, kernel, family, dtype, head dim, causal and class is used
                                  (ptxgen_tile_note says so) */
    int hdim_v;           /* d_v, the value/output head dim: 0 = the kind's (d for attention, 512 for MLA); another
                             value only where a generator takes d_v != d (tcgen05 attn_fwd: 192/128, MLA prefill) */
    int varlen;           /* 1: variable lengths (KERNELS.md): packed [total, h, d] tensors, sequence i's rows
                             [cu_seqlens_q[i], cu_seqlens_q[i + 1]) (keys: cu_seqlens_k), s_q and s_k the longest
                             sequence's lengths, LSE [h_q, total_q]; the kinds that take it say so (--list) */
    int block_m, block_n; /* > 0 (both): block-sparse (KERNELS.md): a block mask at block_m query rows x block_n keys,
                             multiples of the kernels' tiles, and head_mask_type; 0: dense */
    int page_size;        /* > 0: attn_fwd over a paged KV cache (KERNELS.md "Paged KV"): k, v [num_pages, page_size,
                             h_kv, d], block_table [b, max_pages], seqlens_k [b]; a power of two 16 .. 256, a multiple
                             of the tile's key rows; 0: contiguous k, v */
    int splitkv;          /* 1: attn_fwd split-KV: num_splits (a runtime size) CTAs per row block share its keys, and a
                             combine kernel merges their fp32 partials (long contexts at small batch) */
} ptxgen_request;

/* Variable lengths: 0 when cu_seqlens_q/k (b + 1 host copies) start at 0, never decrease, end at total_q/total_k
 * (the packed tensors' rows) and no sequence is longer than max_q/max_k (the s_q, s_k the launch is sized by);
 * else 2 with err naming the first bad entry. The kernels trust these offsets: check them before a launch. */
PTXGEN_API int ptxgen_varlen_check(const int *cu_seqlens_q, const int *cu_seqlens_k, int b, long long total_q,
                                   long long total_k, long long max_q, long long max_k, char *err, size_t errlen);

/* Block-sparse: 0 when every head_mask_type[h] (h_q host copies) is 0 (dense) or a mask head 1 .. n_mask_heads;
 * else 2 with err naming the first bad one. The list kernels give a head of another type no blocks. */
PTXGEN_API int ptxgen_head_mask_check(const int *head_mask_type, int h_q, int n_mask_heads, char *err, size_t errlen);

/* Paged KV: 0 when every sequence i has 0 <= seqlens_k[i] <= max_pages * page_size and the pages it uses,
 * block_table[i][0 .. cdiv(seqlens_k[i], page_size)), are ids in [0, num_pages) (entries past them are never read);
 * else 2 with err naming the first bad entry. Host copies; the kernels trust these. */
PTXGEN_API int ptxgen_paged_check(const int *block_table, const int *seqlens_k, int b, int max_pages, int num_pages,
                                  int page_size, char *err, size_t errlen);

typedef struct ptxgen_set ptxgen_set;

/* The family a request gets, without building: *family ("mma.sync", ...)
 * and, when auto fell back from the arch's newest family because the kernel
 * has no generator for it yet, a one-line note (else note = ""). 2 with err
 * for an unknown arch, kernel or family, a family the arch lacks ("sm_120 has
 * mma.sync only; tcgen05 needs sm_100a or sm_103a") or one the kernel lacks
 * ("attn_fwd has no tcgen05 generator yet (families: mma.sync)"). */
PTXGEN_API int ptxgen_pick_family(const ptxgen_request *req, const char **family, char *note, size_t notelen, char *err,
                       size_t errlen);

/* Return codes: 0 ok; 2 the request is invalid or its plan is refused (err
 * names the constraint and the numbers); PTXGEN_ENOMEM (6) memory ran out. */
PTXGEN_API int  ptxgen_build(const ptxgen_request *req, ptxgen_set **out, char *err, size_t errlen);
PTXGEN_API void ptxgen_free(ptxgen_set *s);

/* The plan table for any well-formed request, including one whose plan is
 * refused (then *fits = 0 and err holds the verdict). NULL if the request is
 * malformed (err says why). Caller frees. */
PTXGEN_API char *ptxgen_plan_request(const ptxgen_request *req, int *fits, char *err, size_t errlen);

PTXGEN_API const char *ptxgen_ptx(const ptxgen_set *s);          /* the PTX module */
PTXGEN_API char *ptxgen_plan_text(const ptxgen_set *s);          /* malloc'd table; caller frees; NULL: out of memory */
PTXGEN_API char *ptxgen_manifest_json(const ptxgen_set *s);      /* malloc'd JSON; caller frees; NULL: out of memory */
PTXGEN_API const char *ptxgen_family(const ptxgen_set *s);       /* "mma.sync", "wgmma" or "tcgen05" */
PTXGEN_API const char *ptxgen_family_note(const ptxgen_set *s);  /* auto's fallback note (see ptxgen_pick_family), or NULL */
PTXGEN_API const char *ptxgen_tile_note(const ptxgen_set *s);    /* where a tuned tile came from (or why it was not used), or NULL */

/* What exists: one kind per (kernel, family) with a generator, from the same
 * table the build reads. ptxgen_kind_on_arch: 1 when the arch has the kind's
 * family (the kind builds there; a tile's plan may still be refused). */
typedef struct {
    const char *kernel;   /* "attn_fwd" */
    const char *family;   /* "mma.sync" */
    const char *what;     /* one line */
} ptxgen_kind;
PTXGEN_API int ptxgen_num_kinds(void);
PTXGEN_API int ptxgen_kind_info(int i, ptxgen_kind *out);
PTXGEN_API int ptxgen_kind_on_arch(int i, const char *arch);

/* 1 when the set gives bit-identical outputs on every run with the same
 * inputs (no floating-point atomics); attn_bwd is only with deterministic=1. */
PTXGEN_API int  ptxgen_deterministic(const ptxgen_set *s);
/* Block-sparse: 1 with the mask's blocks (block_m query rows x block_n keys), 0 for a dense set. */
PTXGEN_API int  ptxgen_block_sparse(const ptxgen_set *s, int *block_m, int *block_n);
/* Paged KV: the rows per page the set was built for; 0 for contiguous k, v. */
PTXGEN_API int  ptxgen_page_size(const ptxgen_set *s);
/* The set's head dims: d (d_qk for MLA) and dv (d_v). */
PTXGEN_API void ptxgen_head_dims(const ptxgen_set *s, int *d, int *dv);

/* Kernels in launch order. */
PTXGEN_API int  ptxgen_num_kernels(const ptxgen_set *s);
PTXGEN_API const char *ptxgen_entry(const ptxgen_set *s, int k);
/* Kernel k's plan in numbers (the --plan table has the rest). */
typedef struct {
    int threads;          /* per CTA */
    int smem_bytes;       /* dynamic shared memory per CTA */
    int regs_est;         /* the plan's register estimate per thread (the driver or ptxas has the real count) */
    int ctas_per_sm;      /* what shared memory, registers and threads allow */
    int tmem_cols;        /* TMEM columns allocated (tcgen05), else 0 */
} ptxgen_kernel_plan;
PTXGEN_API int  ptxgen_kernel_plan_info(const ptxgen_set *s, int k, ptxgen_kernel_plan *out);

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
PTXGEN_API int ptxgen_num_params(const ptxgen_set *s, int k);
PTXGEN_API int ptxgen_param_info(const ptxgen_set *s, int k, int i, ptxgen_param *out);

/* Problem sizes by name: the names ptxgen_problem_size lists. */
typedef struct { const char *name; long long value; } ptxgen_size;
/* The class of a problem that a tuned tile is kept for: attention by its longer sequence (s<=1k, s<=4k,
 * s<=16k, s<=inf), sparse MLA by h_q (h<=16 ... h<=128, beyond). sizes: the set's size names. */
PTXGEN_API int ptxgen_shape_class(const char *kernel, const ptxgen_size *sizes, int nsizes, char *out, size_t outlen);
/* Kernel k's grid, block and dynamic shared memory for the sizes; 2 with err set when a size is missing, a grid
 * dimension is outside CUDA's limits, or the grid holds 2^32 CTAs or more (the kernels number CTAs in 32 bits). */
PTXGEN_API int ptxgen_launch_dims(const ptxgen_set *s, int k, const ptxgen_size *sizes, int nsizes,
                       unsigned grid[3], unsigned block[3], unsigned *dyn_smem, char *err, size_t errlen);
/* Split-KV sets: a num_splits for the problem (sizes, num_splits among them or not) on a GPU of sm_count SMs: enough
 * that the forward has 4 CTAs per SM (on the H200, b 1, s_k 128k, GQA 64/8: 66 splits, 91-94 % of the copy bandwidth,
 * BENCHMARKS.md), at most one per key block; 0 for a set without split-KV or sizes it cannot evaluate. */
PTXGEN_API int  ptxgen_num_splits(const ptxgen_set *s, const ptxgen_size *sizes, int nsizes, int sm_count);

/* The size names the set's expressions use (grid, cluster, workspaces, tensor
 * maps), derived from its kernels' descriptions: attention b, s_q, s_k, h_q,
 * h_kv; sparse MLA s_q, s_kv, h_q, topk. */
PTXGEN_API int  ptxgen_num_problem_sizes(const ptxgen_set *s);
PTXGEN_API const char *ptxgen_problem_size(const ptxgen_set *s, int i);   /* NULL past the end */
/* CTAs per cluster of kernel k for a problem (1, 1, 1 without clusters). */
PTXGEN_API int ptxgen_cluster_dims(const ptxgen_set *s, int k, const ptxgen_size *sizes, int nsizes, unsigned cluster[3],
                        char *err, size_t errlen);

/* Whether kernel k may be launched as a programmatic dependent of the kernel before it (1; 0: not, or no kernel k):
 * its threads wait for that kernel (griddepcontrol.wait) before touching what it writes, so the launch may carry
 * CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION; ptxgen_launch does. Without it the kernel runs as well. */
PTXGEN_API int ptxgen_programmatic_dependent(const ptxgen_set *s, int k);

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
PTXGEN_API int ptxgen_num_tensor_maps(const ptxgen_set *s, int k);
PTXGEN_API int ptxgen_tensor_map_info(const ptxgen_set *s, int k, int i, ptxgen_tensor_map *out);

/* Workspaces: device scratch the host allocates once per problem and passes to
 * every kernel parameter with role WORKSPACE and that name. */
typedef struct {
    const char *name;
    const char *bytes;    /* size expression over the problem sizes */
    int zero_init;        /* fill with zeros before launching the set */
    const char *meaning;
    int kept_zero;        /* with zero_init: the set leaves it zeroed, so zeroing it once after allocation is enough */
} ptxgen_workspace;
PTXGEN_API int ptxgen_num_workspaces(const ptxgen_set *s);
PTXGEN_API int ptxgen_workspace_info(const ptxgen_set *s, int i, ptxgen_workspace *out);
PTXGEN_API int ptxgen_workspace_bytes(const ptxgen_set *s, int i, const ptxgen_size *sizes, int nsizes, unsigned long long *bytes,
                           char *err, size_t errlen);

/* ---- Running a set -------------------------------------------------------
 * A device is the CUDA driver (loaded with dlopen at run time: no link-time
 * dependency on libcuda) or "sim", ptxgen's CPU PTX interpreter. A set loaded
 * on it runs with named tensors: the library derives the problem sizes from
 * their shapes, checks them against each other and the set, computes every
 * kernel's grid, cluster, parameters and tensor maps, allocates the
 * workspaces (zeroing those that must start zeroed) and launches the kernels
 * in order on the given stream. Every call returns PTXGEN_OK (0) or one of
 * the codes below with a one-line message in err (the driver's JIT log
 * included for a load failure); none exits or aborts on bad input. */
enum {
    PTXGEN_OK = 0,
    PTXGEN_EINVAL = 2,    /* a bad request, tensor, size or argument: err names it */
    PTXGEN_EDEVICE = 3,   /* no such device, no CUDA driver, or a driver call failed */
    PTXGEN_ELOAD = 4,     /* the driver (or the sim) refused the PTX: err has the JIT log and a dump path */
    PTXGEN_ELAUNCH = 5,   /* a launch failed, or the device reported a fault */
    PTXGEN_ENOMEM = 6     /* host or device memory ran out */
};

typedef struct ptxgen_device ptxgen_device;
/* name: "cuda" (GPU 0), "cuda:N", or "sim". Launches use the device's primary context (the one the CUDA
 * runtime and PyTorch use). */
PTXGEN_API int  ptxgen_device_open(const char *name, ptxgen_device **out, char *err, size_t errlen);
PTXGEN_API void ptxgen_device_close(ptxgen_device *d);
/* "This GPU" as a request's arch: sm_XY, with the "a" suffix (sm_90a, sm_100a, sm_103a, sm_120a) where the
 * GPU has arch-specific instructions, so the newest family is available. The sim: sm_100a. */
PTXGEN_API int  ptxgen_device_arch(ptxgen_device *d, char *arch, size_t archlen, char *err, size_t errlen);
/* Device memory, for hosts without an allocator of their own and for the sim. */
PTXGEN_API int  ptxgen_device_alloc(ptxgen_device *d, size_t bytes, unsigned long long *ptr, char *err, size_t errlen);
PTXGEN_API int  ptxgen_device_free(ptxgen_device *d, unsigned long long ptr, char *err, size_t errlen);
PTXGEN_API int  ptxgen_device_upload(ptxgen_device *d, unsigned long long dst, const void *src, size_t bytes, char *err, size_t errlen);
PTXGEN_API int  ptxgen_device_download(ptxgen_device *d, void *dst, unsigned long long src, size_t bytes, char *err, size_t errlen);
PTXGEN_API int  ptxgen_device_sync(ptxgen_device *d, char *err, size_t errlen);

/* A set loaded on a device. Its PTX is assembled whole-program: by a ptxas (PTXGEN_PTXAS names one,
 * "driver" refuses them; unset, the first of $CUDA_HOME/bin, $CUDA_PATH/bin, PATH, /usr/local/cuda/bin),
 * whose cubin ptxgen's cache keeps, else by the driver's JIT (cuModuleLoadDataEx; the driver's own
 * cache keeps it). Not through the driver's linker, which assembles relocatable code and there ignores
 * setmaxnreg and serializes wgmma. ptxgen_loaded_how says which made this set's cubin. Loading and launching are thread-safe
 * (launches on one device are serialised while they are enqueued; the kernels run asynchronously). A loaded
 * set's workspaces are shared by its launches, so launches of one set on different streams must not overlap
 * on the GPU: use one stream per loaded set, or one loaded set per stream. Lifetimes: the set must outlive its
 * loaded copies (ptxgen_free after ptxgen_unload), and every loaded set is unloaded before its device is closed. */
typedef struct ptxgen_loaded ptxgen_loaded;
PTXGEN_API int  ptxgen_load(ptxgen_device *d, const ptxgen_set *s, ptxgen_loaded **out, char *err, size_t errlen);
PTXGEN_API void ptxgen_unload(ptxgen_loaded *l);
/* One line: how the set's cubin was made ("cubin from ptxgen's cache (assembled by ...)", "<ptxas>, whole
 * program; ...", "the driver's JIT, whole program ..."); "" on the sim. Lives as long as l. */
PTXGEN_API const char *ptxgen_loaded_how(const ptxgen_loaded *l);
/* What the driver made of kernel k: registers per thread, local (spill and stack) bytes per thread. */
PTXGEN_API int  ptxgen_kernel_resources(const ptxgen_loaded *l, int k, int *regs, int *local_bytes);

/* A tensor argument: one of the set's tensor parameters by name (ptxgen_param_info: role IN or OUT), its
 * device address, and its shape and strides in elements along the axes of the parameter's shape
 * ("[b, s_q, h_q, d]": rank 4). The innermost stride must be 1; axes the set has no stride parameter for
 * must be dense; 2-byte tensors need 16-byte aligned addresses and row strides; an output's elements each
 * need an address of their own (no overlapping strides). A parameter whose meaning
 * starts with "optional" may be left out (the kernels get a null pointer). */
#define PTXGEN_MAX_RANK 5
typedef struct {
    const char *name;
    unsigned long long ptr;
    int rank;
    long long shape[PTXGEN_MAX_RANK];
    long long strides[PTXGEN_MAX_RANK];
} ptxgen_tensor;

/* Runs the set on stream (a CUstream; NULL: the default stream; ignored by the sim). sizes may add or
 * confirm problem sizes (NULL, 0: every size comes from the tensors' shapes). softmax_scale: the scale of
 * S, for sets that take one (finite). Refused before anything runs (PTXGEN_EINVAL, naming it): tensors that
 * break the rules above or disagree on a size, h_q no multiple of h_kv, a varlen s_q / s_k past total_q /
 * total_k, a paged s_k past max_pages x page_size, a grid past the launch limits. Asynchronous on a GPU:
 * faults surface at the next synchronizing call. */
PTXGEN_API int  ptxgen_launch(ptxgen_loaded *l, void *stream, const ptxgen_tensor *tensors, int ntensors, const ptxgen_size *sizes,
                   int nsizes, float softmax_scale, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
