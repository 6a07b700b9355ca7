/* One attention problem on a device: host inputs (rounded to the element
 * type), device buffers in a strided layout, and the kernel's argument list
 * built from its parameter specs. Which tensors a kernel kind reads and
 * writes, how its outputs are judged and its reference computed live in one
 * table in problem.c. */
#ifndef PTXGEN_PROBLEM_H
#define PTXGEN_PROBLEM_H
#include <stddef.h>
#include <stdint.h>
#include "device.h"
#include "hostdata.h"
#include "ptxgen.h"

typedef struct {
    const char *name;
    int rows, heads, width;      /* [b, rows, heads, width] */
    uint64_t stride_b, stride_s, stride_h;
    size_t elems;                /* elements of the strided allocation */
    size_t count;                /* elements of the contiguous [b, rows, heads, width] view */
    int esize;                   /* bytes per element: 2 (bf16/fp16) or 4 (fp32 LSE) */
    DevPtr dev;                  /* 0: the kernel kind does not use this tensor */
    float *host;                 /* contiguous [b, rows, heads, width] values (inputs) */
} Tensor;

#define PROBLEM_MAX_OUTPUTS 3

typedef struct {
    int b, s_q, s_k, h_q, h_kv, d, d_v;          /* head dims of q/k and of v/o */
    DType dt;
    float scale;
    int causal;
    int bwd;                     /* attn_bwd: reads q, k, v, o, do, lse; writes dq, dk, dv */
    Tensor q, k, v, o, dout, dq, dk, dv, lse;   /* dout is "do" (a C keyword) */
    uint64_t argv[4][64];        /* per kernel of the set: parameter values, 8-byte slots */
    void *args[4][64];
    struct { const char *name; DevPtr dev; size_t bytes; int zero; } ws[4];   /* the set's workspaces */
    int nws;
} Problem;

/* An output the kernel kind writes, with its KERNELS.md tolerance (max relative L2). */
typedef struct { const Tensor *t; double tol; } ProblemOutput;

/* Allocates the kind's tensors: random N(0,1) inputs, for attn_bwd O and LSE
 * from the float64 forward of the rounded Q, K, V; outputs allocated. */
int  problem_init(Problem *p, Device *dev, uint64_t seed, int pad, char *err, size_t errlen);
/* The outputs, in a fixed order per kind; returns their count. */
int  problem_outputs(Problem *p, ProblemOutput out[PROBLEM_MAX_OUTPUTS]);
/* The float64 reference of every output, in problem_outputs order (each ref[i] holds t->count values). */
void problem_reference(const Problem *p, double *const ref[PROBLEM_MAX_OUTPUTS]);
/* Floating-point operations of one run of the set (KERNELS.md "Judging a result"). */
double problem_flops(const Problem *p);
int  problem_poison_outputs(Problem *p, Device *dev, char *err, size_t errlen);
/* Downloads t into dst, contiguous [b, rows, heads, width] (t->count elements of t->esize bytes). */
int  problem_download(Device *dev, const Tensor *t, void *dst, char *err, size_t errlen);
/* Allocates the set's workspaces at this problem's sizes. */
int  problem_workspaces(Problem *p, Device *dev, const ptxgen_set *s, char *err, size_t errlen);
/* Zero-fills the workspaces the manifest marks zero_init: before every launch of the set. */
int  problem_zero_workspaces(Problem *p, Device *dev, char *err, size_t errlen);
/* Fills args[kernel] in the kernel's parameter order; checks strides fit the kernel's 32-bit row math. */
int  problem_args(Problem *p, const ptxgen_set *s, int kernel, char *err, size_t errlen);
/* The problem sizes by name, for launch dimensions and workspace sizes. */
int  problem_sizes(const Problem *p, ptxgen_size out[5]);
void problem_free(Problem *p, Device *dev);
#endif
