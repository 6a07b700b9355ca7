/* The kind table: one row per (kernel, family) that has a generator, with
 * its tiles, plans and emitter. A set of several kernels goes through
 * plan/build, a single kernel through plan1/spec1/emit1. The build, the
 * family choice and --list all read this one table. */
#ifndef PTXGEN_KINDS_H
#define PTXGEN_KINDS_H
#include "attn.h"
#include "attn_sparse.h"

enum { PAGED_KV = 1, PAGED_SPLIT = 2 };

typedef struct {
    const char *name, *what;
    Family family;         /* the instruction family of this row's generator */
    const TileKey *keys;
    const int *nkeys;
    AttnTile (*default_tile)(const ArchInfo *a, int d, int dv);
    int (*check_tile)(const AttnDesc *d, char *err, size_t errlen);
    int (*plan)(const AttnDesc *d, Plan *plans);       /* returns the number of kernels */
    void (*build)(const AttnDesc *d, KernelSet *ks, Buf *module);
    void (*plan1)(const AttnDesc *d, Plan *p);
    void (*spec1)(const AttnDesc *d, const Plan *p, KernelSpec *ks);
    void (*emit1)(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
    const int *hdims;
    int nhdims;
    int default_hdim;
    int dv;                /* d_v when fixed by the kind (MLA); 0: d_v = d unless dv_free */
    int causal_ok;
    int (*warps_of)(const AttnTile *t);   /* where warps follow other keys of the tile: the count (else NULL) */
    int dv_free;           /* d_v may differ from d (any of hdims; the kind's check_tile and plan judge the pair) */
    int varlen_ok;         /* takes variable lengths (ptxgen_request.varlen) */
    /* takes a block mask (ptxgen_request.block_m): the lists its kernels walk, at their tiles (NULL: dense only) */
    void (*sparse)(const AttnDesc *d, SparseLists *l);
    unsigned paged;        /* the decode options it takes: PAGED_KV (ptxgen_request.page_size), PAGED_SPLIT (.splitkv) */
    /* sizes the default tile for a decode shape (d->decode_sq, after the pack is chosen; NULL: the default stays) */
    void (*decode_tile)(AttnDesc *d);
    /* sets the default tile's keys that follow the request's features (causal, mask, lengths, pages), those the
     * request's tile string `asked` (NULL: none) leaves unset (NULL: no key does); now the wgmma attn_fwd's persist */
    void (*refine_tile)(AttnDesc *d, const char *asked);
} KernelKind;


int kind_count(void);
const KernelKind *kind_at(int i);
/* The families with a generator for kernel (0: no such kernel). */
unsigned kind_families(const char *kernel);
/* The row for kernel on arch with the asked family (FAM_AUTO: the arch's
 * newest family the kernel has). 0 with *kind, and note set to one line when
 * auto fell back from the arch's newest family (else ""); 2 with err when the
 * kernel is unknown, the arch lacks the family or the kernel has none for it. */
int kind_pick(const char *kernel, const ArchInfo *a, unsigned asked, const KernelKind **kind, char *note, size_t notelen,
              char *err, size_t errlen);
int kind_has_hdim(const KernelKind *k, int d);
/* The kind's tile key of that name (e.g. "pack", "bn"), or NULL. */
const TileKey *kind_key(const KernelKind *k, const char *key);
/* --mma auto when the picked row lacks head dim d: the newest other row of kernel on arch that has it (NULL: none). */
const KernelKind *kind_for_hdim(const char *kernel, const ArchInfo *a, int d, int varlen, int sparse,
                                const KernelKind *tried);
#endif
