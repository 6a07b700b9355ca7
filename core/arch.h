/* Per-arch facts: the single place any hardware limit is written down. */
#ifndef PTXGEN_ARCH_H
#define PTXGEN_ARCH_H

#include "family.h"

typedef struct {
    const char *name;        /* "sm_90a": the .target and ptxas -arch */
    int sm;                  /* 90 */
    const char *ptx_version; /* lowest ISA accepting this .target (PTX_FACTS 1.2) */
    int smem_block_optin;    /* bytes of shared memory one block may opt into */
    int smem_sm;             /* bytes of shared memory per SM */
    int smem_reserved;       /* bytes the system reserves per block */
    int regs_sm;             /* 32-bit registers per SM */
    int regs_thread;         /* most registers one thread may use */
    int threads_sm;          /* resident threads per SM */
    int ctas_sm;             /* resident blocks per SM */
    int tmem_cols;           /* TMEM columns per CTA (0: no TMEM) */
    unsigned families;       /* FAM_* instruction families this target has */
    int vec_red;             /* red.global.add.v2/.v4.f32 exist (sm_90+, PTX 8.1) */
    int cluster_max;         /* most CTAs in a cluster (1: no clusters) */
} ArchInfo;

/* griddepcontrol, so programmatic dependent launch (KernelSpec.pdl): sm_90 and later */
static inline int arch_has_pdl(const ArchInfo *a) { return a->sm >= 90; }

const ArchInfo *arch_find(const char *name);   /* NULL if unknown */
int arch_count(void);
const ArchInfo *arch_at(int i);
/* The archs that have every family in fams, from the table: "sm_100a or sm_103a". */
void arch_names_with(unsigned fams, Buf *out);
#endif
