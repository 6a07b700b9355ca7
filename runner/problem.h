/* One attention problem on a device: host inputs (rounded to the element
 * type), device buffers in a strided layout, and the kernel's argument list
 * built from its parameter specs. */
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
    int esize;                   /* bytes per element */
    DevPtr dev;
    float *host;                 /* contiguous [b, rows, heads, width] values (inputs) */
} Tensor;

typedef struct {
    int b, s_q, s_k, h_q, h_kv, d, dv;
    DType dt;
    float scale;
    Tensor q, k, v, o, lse;
    uint64_t argv[4][64];        /* per kernel of the set: parameter values, 8-byte slots */
    void *args[4][64];
    struct { const char *name; DevPtr dev; size_t bytes; int zero; } ws[4];   /* the set's workspaces */
    int nws;
} Problem;

/* Allocates and fills Q, K, V with N(0,1) values; O and LSE allocated. */
int  problem_init(Problem *p, Device *dev, uint64_t seed, int pad, char *err, size_t errlen);
int  problem_poison_outputs(Problem *p, Device *dev, char *err, size_t errlen);
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
