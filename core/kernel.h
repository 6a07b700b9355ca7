/* What a generated kernel set is: the PTX module, and for each kernel its
 * launch ABI (parameters, grid/block expressions, shared memory). The same
 * KernelSpec emits the .param list, writes the manifest and drives the runner,
 * so none of them can drift from the others. */
#ifndef PTXGEN_KERNEL_H
#define PTXGEN_KERNEL_H
#include <stddef.h>
#include "arch.h"
#include "plan.h"

/* PT_TMAP: a 128-byte TMA tensor map passed by value (.param .align 64 .b8 name[128]); its role is
 * PR_TMAP, `of` the tensor it maps, and the KernelSpec's tmaps row of the same param says how to encode it. */
typedef enum { PT_PTR, PT_U32, PT_U64, PT_F32, PT_TMAP } ParamType;
typedef enum { PR_IN, PR_OUT, PR_SIZE, PR_STRIDE, PR_SCALE, PR_WORKSPACE, PR_TMAP } ParamRole;

typedef struct {
    const char *name;      /* "q", "s_q", "q_stride_s", "softmax_scale" */
    ParamType type;
    ParamRole role;
    const char *meaning;
    const char *shape;     /* tensors: "[b, s_q, h_q, d]" */
    const char *dtype;     /* tensors: "bf16" / "fp16" / "fp32" */
    const char *of;        /* strides: the tensor; sizes: the problem size name; workspaces: the workspace */
    const char *dim;       /* strides: the dimension ("b", "s", "h") */
} ParamSpec;

/* A TMA tensor map the kernel takes by value in a parameter: what the host
 * passes to cuTensorMapEncodeTiled. Dimensions run innermost first. */
#define MAX_TMAP_RANK 5
typedef struct {
    const char *param;     /* the kernel parameter that carries it */
    const char *tensor;    /* the tensor it reads or writes: "q" */
    const char *dtype;     /* "bf16" / "fp16" / "fp32" */
    int rank;
    const char *dims[MAX_TMAP_RANK];      /* elements, expressions over problem sizes */
    const char *strides[MAX_TMAP_RANK - 1];   /* strides[i]: bytes from one index of dim i + 1 to the next,
                                                 expressions (cuTensorMapEncodeTiled's globalStrides) */
    int box[MAX_TMAP_RANK];               /* the box one copy moves, elements */
    int elem_strides[MAX_TMAP_RANK];      /* traversal strides inside the box (1: dense) */
    const char *swizzle;   /* "none", "32B", "64B", "128B" */
    const char *interleave;   /* "none", "16B", "32B" */
    const char *oob_fill;  /* out-of-bounds elements read as "zero" or "nan" */
} TensorMapSpec;

#define MAX_PARAMS 48
#define MAX_TMAPS 8
typedef struct {
    char entry[128];
    ParamSpec params[MAX_PARAMS];
    int nparams;
    char grid[3][96];      /* expressions over problem sizes (see expr.h) */
    char cluster[3][32];   /* CTAs per cluster, expressions ("": 1) */
    TensorMapSpec tmaps[MAX_TMAPS];
    int ntmaps;
    unsigned block[3];
    unsigned dyn_smem;
    unsigned min_ctas;     /* .minnctapersm: CTAs per SM the plan counts on, which caps
                              ptxas's registers at what they leave (0: ptxas chooses) */
    unsigned max_regs;     /* .maxnreg: registers per thread ptxas may use (0: from .maxntid and .minnctapersm;
                              ptxas counts a wgmma kernel's threads in whole warpgroups there) */
    int pdl;               /* a programmatic dependent of the kernel launched before it (sm_90+): its threads run
                              griddepcontrol.wait as they start (kctx_begin), before any memory access, so a launcher
                              may start it while that kernel still runs (programmatic stream serialization); one that
                              does not launches it after, as any kernel, and the wait returns at once */
} KernelSpec;

/* Scratch memory a kernel set needs between its kernels (the host allocates
 * it; the manifest says how much and whether it must start zeroed). */
typedef struct {
    const char *name;
    char bytes[128];       /* expression over problem sizes */
    int zero;              /* must be zero-filled before the first kernel (WS_ZERO_KEPT: once; the set leaves it so) */
    const char *meaning;
} WorkspaceSpec;
enum { WS_ZERO_KEPT = 2 };   /* WorkspaceSpec.zero: 1 before every launch, this once */

#define MAX_KERNELS 6
#define MAX_WORKSPACES 6
typedef struct {
    char kernel[32];       /* "attn_fwd" */
    const ArchInfo *arch;
    Family family;         /* the instruction family its generator uses */
    char summary[160];     /* one line: kernel, dtype, dims, tile */
    char *ptx;             /* the module text */
    KernelSpec k[MAX_KERNELS];
    int nk;
    WorkspaceSpec ws[MAX_WORKSPACES];
    int nws;
    Plan plan[MAX_KERNELS];   /* one per kernel, in launch order */
    int deterministic;     /* bit-identical outputs across runs (no float atomics) */
} KernelSet;

const char *param_type_ptx(ParamType t);   /* ".u64" ... */
const ParamSpec *spec_param(const KernelSpec *k, const char *name);   /* NULL if absent */
const char *spec_cluster(const KernelSpec *k, int i);   /* cluster dim i's expression ("1" when unset) */
/* The problem sizes a set's expressions use, each once in order of first
 * use: the size parameters of each kernel, then the names in its grid,
 * cluster and tensor-map expressions, then in the workspaces'. */
#define MAX_SIZES 16
typedef struct {
    char name[MAX_SIZES][24];
    int n;
} SizeList;
void set_problem_sizes(const KernelSet *s, SizeList *out);
void kernel_set_free(KernelSet *s);
#endif
