/* What a generated kernel set is: the PTX module, and for each kernel its
 * launch ABI (parameters, grid/block expressions, shared memory). The same
 * KernelSpec emits the .param list, writes the manifest and drives the runner,
 * so none of them can drift from the others. */
#ifndef PTXGEN_KERNEL_H
#define PTXGEN_KERNEL_H
#include <stddef.h>
#include "arch.h"
#include "plan.h"

typedef enum { PT_PTR, PT_U32, PT_U64, PT_F32 } ParamType;
typedef enum { PR_IN, PR_OUT, PR_SIZE, PR_STRIDE, PR_SCALE, PR_WORKSPACE } ParamRole;

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

#define MAX_PARAMS 40
typedef struct {
    char entry[128];
    ParamSpec params[MAX_PARAMS];
    int nparams;
    char grid[3][96];      /* expressions over problem sizes (see expr.h) */
    unsigned block[3];
    unsigned dyn_smem;
    unsigned min_ctas;     /* .minnctapersm: CTAs per SM the plan counts on, which caps
                              ptxas's registers at what they leave (0: ptxas chooses) */
} KernelSpec;

/* Scratch memory a kernel set needs between its kernels (the host allocates
 * it; the manifest says how much and whether it must start zeroed). */
typedef struct {
    const char *name;
    char bytes[128];       /* expression over problem sizes */
    int zero;              /* must be zero-filled before the first kernel */
    const char *meaning;
} WorkspaceSpec;

#define MAX_KERNELS 4
#define MAX_WORKSPACES 4
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
    const char *ptx_min;   /* a later PTX ISA than the arch's lowest, when an instruction needs it (NULL: none) */
} KernelSet;

const char *param_type_ptx(ParamType t);   /* ".u64" ... */
const ParamSpec *spec_param(const KernelSpec *k, const char *name);   /* NULL if absent */
void kernel_set_free(KernelSet *s);
#endif
