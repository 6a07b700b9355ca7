/* The resource plan of one kernel: shared-memory regions with offsets (the
 * emitted kernel uses exactly these), a register estimate, occupancy, and a
 * verdict that names the budget a config breaks. */
#ifndef PTXGEN_PLAN_H
#define PTXGEN_PLAN_H
#include "arch.h"
#include "buf.h"

#define MAX_REGIONS 16
typedef struct {
    const char *name;
    int offset, bytes;
    const char *note;
    int over;              /* a phase union: the region whose bytes this one reuses (-1: none) */
} SmemRegion;

typedef struct {
    SmemRegion region[MAX_REGIONS];
    int nregions;
    int smem_bytes;        /* dynamic shared memory per CTA */
    int regs_est;          /* registers per thread, estimated from live tiles */
    int threads;
    int ctas_per_sm;
    const char *occ_limiter;
    int ok;
    char what[96];         /* the kernel and tile the plan is for */
    char verdict[320];     /* "fits" or the broken budget with the numbers */
} Plan;

int  plan_add_region(Plan *p, const char *name, int bytes, int align, const char *note);  /* returns offset */
void plan_union_region(Plan *p, const char *name, int over, int bytes, const char *note); /* reuses region `over` */
/* The offset of the region called name (an internal error if none is). */
int  plan_region(const Plan *p, const char *name);
/* Two-stage buffers are regions named "X.0" and "X.1": the one distance from
 * every stage-0 region to its stage-1 copy (an internal error if they differ). */
int  plan_stage_stride(const Plan *p);
/* Checks smem and registers against the arch, computes CTAs/SM; sets ok/verdict. */
void plan_finish(Plan *p, const ArchInfo *a, const char *what);
void plan_print(const Plan *p, const ArchInfo *a, Buf *out);
#endif
