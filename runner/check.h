/* check and bench: generate a kernel, load it on a device, run it on fresh
 * random data, and judge it against the float64 reference or time it. */
#ifndef PTXGEN_CHECK_H
#define PTXGEN_CHECK_H
#include <stdint.h>
#include "device.h"
#include "ptxgen.h"

/* --ref: which reference judges check and xcheck. Not given acts as auto: the
 * GPU reference (gpu_ref.h) on a CUDA device when the float64 CPU reference
 * would be large (run_check's AUTO_GPU_REF_GFLOP), else the CPU one. */
typedef enum { RUN_REF_UNSET, RUN_REF_AUTO, RUN_REF_CPU, RUN_REF_GPU } RunRef;

typedef struct {
    ptxgen_request req;     /* arch may be NULL: taken from the device */
    /* Shape; 0: the kind's default for the mode. Attention: b s_q s_k h_q h_kv (and req.causal);
     * sparse MLA: s_q s_kv h_q topk, and topk_length 1 to pass a topk_length buffer. */
    int b, s_q, s_k, h_q, h_kv;
    int s_kv, topk, topk_length;
    double scale;           /* 0: 1/sqrt(d), d = d_qk for MLA */
    uint64_t seed;
    int pad;                /* extra elements per head row: exercises runtime strides */
    int iters, warmup;      /* bench */
    const char *device_kind;   /* "cuda" (NULL) or "sim" */
    int device;             /* CUDA ordinal */
    int stats;              /* print the sim's counters after check; bench: every timed run, in launch order */
    const char *ptx_file;   /* run this PTX instead of the generated text (same entry and parameters) */
    RunRef ref;             /* check and xcheck; bench refuses it */
    /* req.varlen: the sequences' query lengths "L1,L2,..." (b of them), and key lengths (NULL: the same) */
    const char *varlen_q, *varlen_k;
    /* req.block_m: the mask, "random:D" (NULL: random:0.5), "local:W" or a file, and its mask heads (0: 2) */
    const char *block_mask;
    int mask_heads;
    int num_splits;         /* req.splitkv: the CTAs per row block that share its keys */
    int full_kv;            /* req.page_size: every sequence holds s_k keys (else lengths drawn per seed) */
} RunOpts;

/* Exit codes: 0 pass, 1 failure (wrong result, device or driver error), 2 bad input. */
int run_check(const RunOpts *o);
int run_bench(const RunOpts *o);
/* The same kernel and inputs on the GPU and on the sim, compared with each other. */
int run_xcheck(const RunOpts *o);
/* One variant measured for compare: checked against the reference once, then (sim) the counters of one
 * more run of the set, or (GPU) the median time of o->iters runs. */
typedef struct {
    int ok;                 /* the outputs matched the reference */
    int nk;
    struct { char entry[128]; int regs, local_bytes; ptxgen_kernel_plan plan; } k[6];   /* regs: the driver's (0 on the sim) */
    double ms, tflops;      /* GPU; ms < 0: not timed */
    int have_stats;         /* sim */
    DevStats stats;
    char cls[32], shape[160];   /* the resolved problem: its shape class (ptxgen_shape_class) and sizes */
    int d;                  /* the set's head dim (d_qk) */
} Measure;
int run_measure(const RunOpts *o, Measure *m);
/* ptxgen compare: run_measure for each variant ("tile=...;mma=...;ptx=FILE;dtype=..."), a table, an SVG. */
int run_compare(const RunOpts *o, const char *const *variants, int nvariants, const char *svg_path);

/* ptxgen tune: every tile of the kernel's keys for o->req.arch on o's problem and device; CSV, JSON, SVG. */
int run_tune(const RunOpts *o, const char *csv, const char *json, const char *svg_path, int save);

/* gpu_ref_selfcheck on the CUDA device o->device: 0 when every GPU reference
 * matches the float64 CPU one at small shapes, 1 otherwise, 2 for the sim. */
int run_selfcheck(const RunOpts *o);
#endif
