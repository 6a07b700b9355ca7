/* Inside the TMA unit: what its three files share. sim_tma.c owns dispatch,
 * bulk groups and the two ways an op lands (an image delivered into shared
 * memory of one or more CTAs, signalling mbarriers; shared bytes written or
 * reduced into global memory); sim_tma_tensor.c turns tensor-map boxes into
 * those, sim_tma_bulk.c plain byte ranges. Semantics: PTX ISA "Data Movement
 * and Conversion Instructions: Bulk copy / Tensor copy / Bulk and Tensor
 * copy completion instructions". */
#ifndef PTXGEN_SIM_TMA_H
#define PTXGEN_SIM_TMA_H
#include "sim.h"

/* Who issues an op: one lane of a warp executing one instruction. */
typedef struct { SimCta *c; SimWarp *w; int lane; const SimInsn *in; } TmaIssue;

/* sim_fail for the issuing thread. */
void tma_fail(const TmaIssue *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A 32-bit shared address operand ([addr] with a .shared::cta or
 * .shared::cluster address) resolved to its CTA and local offset; NULL after
 * tma_fail. what names the operand in messages. */
SimCta *tma_shared_opnd(const TmaIssue *x, const SimOpnd *o, int cluster_ok, const char *what, uint32_t *lo);
/* A 64-bit global address range, bounds-checked with the PTX line and marked as the grid's (kind: SIM_ACC_R a
 * load, SIM_ACC_W a store, both a reduce; sim_pdl_access). The cache keeps the last buffer found, so walks over a
 * box stay cheap. */
typedef struct { SimBuf *buf; } TmaGcache;
uint8_t *tma_gptr(const TmaIssue *x, TmaGcache *gc, uint64_t ga, uint32_t len, int kind);

/* Counts one TMA request in the global-memory counters: bytes it moves and
 * the 32-byte sectors it touches (sectors_of: those of a byte range). */
void tma_count_gmem(const TmaIssue *x, uint64_t bytes, uint64_t sectors);
static inline uint64_t sectors_of(uint64_t ga, uint64_t len) { return len ? (ga + len - 1) / 32 - ga / 32 + 1 : 0; }

/* The bulk group an op issued now joins and who waits for it (sim.h's key
 * and group of a SimAsync). */
uint64_t tma_key(const TmaIssue *x);
uint32_t tma_open_group(const TmaIssue *x);

/* ---- into shared memory ---- */
enum { TMA_MAX_DESTS = 16 };
/* Where a load lands: the same local offset lo in each destination CTA, and
 * the mbarrier (at local offset bar_lo) each destination's bytes signal. */
typedef struct {
    int n;
    SimCta *dst[TMA_MAX_DESTS], *bar[TMA_MAX_DESTS];
    uint32_t lo, bar_lo;
    SimRange hold;          /* source bytes held until it lands (a shared -> shared copy); cta NULL: none */
} TmaDests;
/* Resolves [dst], [mbar] and the optional ctaMask (NULL without
 * .multicast::cluster) by the ISA's rules for .cta_group::1 and ::2; align:
 * the destination alignment the op requires. 0, or -1 after tma_fail. */
int tma_load_dests(const TmaIssue *x, const SimOpnd *dst, const SimOpnd *mbar, const SimOpnd *mask, uint32_t align,
                   TmaDests *d);
/* Queues one op per destination: image (bytes in the box's order, owned by
 * the call) lands at lo, swizzled on the absolute address; each landing does
 * complete_tx of bytes on its mbarrier. 0, or -1 after tma_fail. */
int tma_load_push(const TmaIssue *x, const TmaDests *d, uint8_t *image, uint32_t bytes, int swizzle, const char *what);

/* ---- out of shared memory into global memory ---- */
/* One contiguous stretch: len bytes from the image offset off to gaddr. */
typedef struct { uint64_t gaddr; uint32_t off, len; } TmaRun;
typedef struct {
    TmaRun *runs;
    int n, cap;
    int redop, type;        /* IsaRedOp (RO_NONE: plain store) and IsaType of the elements */
    int ftz;                /* f32 subnormal inputs and results flush to sign-preserving zero */
} TmaStore;
/* Appends a run (merging it with the last when both sides continue); 0 or -1 (out of memory: tma_fail). */
int tma_store_add(const TmaIssue *x, TmaStore *st, uint64_t gaddr, uint32_t off, uint32_t len);
/* Queues the store of the image at shared offset lo (own CTA) of bytes,
 * swizzled by mode: its source bytes are checked and held until it lands at
 * its bulk group's wait. Takes the runs. 0, or -1 after tma_fail. */
int tma_store_push(const TmaIssue *x, TmaStore *st, uint32_t lo, uint32_t bytes, int swizzle, const char *what);
/* Whether redop on type is one the ISA allows for this instruction (global
 * destination); else a tma_fail naming both. */
int tma_reduce_ok(const TmaIssue *x, int redop, int type);

/* ---- the instructions ---- */
int tma_tensor(const TmaIssue *x);          /* cp.async.bulk.tensor, cp.reduce.async.bulk.tensor */
int tma_bulk(const TmaIssue *x);            /* cp.async.bulk, cp.reduce.async.bulk */
int tma_prefetch_map(const TmaIssue *x);    /* prefetch.tensormap */
int tma_prefetch_tensor(const TmaIssue *x); /* cp.async.bulk.prefetch.tensor */
#endif
