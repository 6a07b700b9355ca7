/* The resource plan of one kernel: shared-memory regions with offsets (the
 * emitted kernel uses exactly these), the TMEM column map, registers per
 * warp role, a register estimate, occupancy, and a verdict that names the
 * budget a config breaks. */
#ifndef PTXGEN_PLAN_H
#define PTXGEN_PLAN_H
#include <stddef.h>
#include "arch.h"
#include "buf.h"

#define MAX_REGIONS 16
typedef struct {
    const char *name;
    int offset, bytes;
    const char *note;
    int over;              /* a phase union: the region whose bytes this one reuses (-1: none) */
    char shape[32];        /* for the budget table (seed 000's form): "[16, 576] bf16" ("": none) */
    char formula[48];      /* its bytes in the tile's terms: "bm x d_qk x 2" */
} SmemRegion;

/* Columns [col, col + cols) of the CTA's TMEM allocation, all 128 lanes.
 * Regions of one alias group share their columns in different phases. */
#define MAX_TMEM_REGIONS 16
typedef struct {
    const char *name;
    int col, cols;
    const char *dtype;     /* what the columns hold: "fp32", "bf16" (two per 32-bit column) */
    const char *shape;     /* the logical tile: "[64, 512]" */
    int alias;             /* 0: columns of its own; n > 0: alias group n */
    const char *phase;     /* when it is live, for the table (may be NULL) */
} TmemRegion;

/* A warp role (warp specialisation) and the registers it asks for with
 * setmaxnreg (0: whatever ptxas allocates). */
#define MAX_ROLES 8
typedef struct {
    const char *name;
    int warps;
    int regs;
} RoleRegs;

typedef struct {
    SmemRegion region[MAX_REGIONS];
    int nregions;
    TmemRegion tmem[MAX_TMEM_REGIONS];
    int ntmem;
    int tmem_cols;         /* columns the map spans (the highest end) */
    RoleRegs role[MAX_ROLES];
    int nroles;
    int smem_bytes;        /* dynamic shared memory per CTA */
    int regs_est;          /* registers per thread, estimated from live tiles */
    int threads;
    int ctas_per_sm;
    const char *occ_limiter;
    int ok;
    char what[256];        /* the kernel and tile the plan is for */
    char verdict[400];     /* "fits" or the broken budget with the numbers */
    char aside[640];       /* what another way of doing the same problem would need, for comparison ("": none) */
} Plan;

int  plan_add_region(Plan *p, const char *name, int bytes, int align, const char *note);  /* returns offset */
void plan_union_region(Plan *p, const char *name, int over, int bytes, const char *note); /* reuses region `over` */
/* The shape and byte formula of region `name`: --plan then adds the budget table (buffer, shape, formula, bytes,
 * total, headroom) */
void plan_region_formula(Plan *p, const char *name, const char *shape, const char *formula);
/* The offset of the region called name (an internal error if none is). */
int  plan_region(const Plan *p, const char *name);
/* Two-stage buffers are regions named "X.0" and "X.1": the one distance from
 * every stage-0 region to its stage-1 copy (an internal error if they differ). */
int  plan_stage_stride(const Plan *p);
/* The next free TMEM columns (past every region so far); returns the start column. */
int  plan_add_tmem(Plan *p, const char *name, int cols, const char *dtype, const char *shape, const char *phase);
/* Columns starting where region `over` starts, in another phase (both join one alias group). */
void plan_alias_tmem(Plan *p, const char *name, int over, int cols, const char *dtype, const char *shape,
                     const char *phase);
/* The columns tcgen05.alloc takes for the map: a power of two, at least 32 (0 for no map). */
int  plan_tmem_alloc(const Plan *p);
void plan_add_role(Plan *p, const char *name, int warps, int regs);
/* The setmaxnreg count the plan gave a role (0: none, or no such role). */
int  plan_role_regs(const Plan *p, const char *name);
/* Registers per thread a CTA of `threads` holds at launch (ptxas's most for one CTA per SM: an even share of
 * the register file, a multiple of 8, at most 255): setmaxnreg moves registers between its warps, it never
 * adds to that pool of threads x this. */
int  plan_launch_regs(const ArchInfo *a, int threads);
/* The setmaxnreg count of each of `groups` warpgroups that share what a producer of `producer_warps` warps
 * at `producer_regs` leaves of the pool of a CTA of `threads` (a multiple of 8, at most 256). */
int  plan_share_regs(const ArchInfo *a, int threads, int producer_warps, int producer_regs, int groups);

/* Checks smem, TMEM, registers and roles against the arch, computes CTAs/SM; sets ok/verdict. */
void plan_finish(Plan *p, const ArchInfo *a, const char *what);
void plan_print(const Plan *p, const ArchInfo *a, Buf *out);

/* The TMEM map's and the roles' parts of plan_finish and plan_print
 * (plan_tmem.c, plan_roles.c): a check returns 0 or writes the refusal. */
int  plan_tmem_check(const Plan *p, const ArchInfo *a, char *verdict, size_t len);
void plan_tmem_print(const Plan *p, const ArchInfo *a, Buf *out);
int  plan_roles_check(const Plan *p, const ArchInfo *a, char *verdict, size_t len);
void plan_roles_print(const Plan *p, const ArchInfo *a, Buf *out);
/* The registers a CTA holds when every role sets its count with setmaxnreg (0: some role does not). */
int  plan_roles_setmaxnreg(const Plan *p);
#endif
