/* The sim device's core types: a PTX module parsed from text, the state of
 * one CTA while it runs, and the counters. The pipeline is
 *   sim_parse.c (text -> SimModule; each instruction's form: sim_form.c,
 *   its operands' and its own types: sim_types.c)
 *   -> sim_exec.c (schedule warps, control)
 *   -> sim_alu.c (per-lane arithmetic) / sim_mem.c (memory, shadows, cp.async)
 *   / sim_warp.c (warp collectives: ldmatrix, mma, shfl) -> sim_stats.c.
 * sim_device.c wires it behind device.h. */
#ifndef PTXGEN_SIM_H
#define PTXGEN_SIM_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "isa.h"
#include "arch.h"

/* ---- parsed module ---- */
typedef enum { SO_REG, SO_IMM, SO_SREG, SO_ADDR, SO_VEC, SO_LABEL, SO_SYM, SO_SINK } SimOpndKind;
typedef enum {
    SR_TID_X, SR_TID_Y, SR_TID_Z, SR_NTID_X, SR_NTID_Y, SR_NTID_Z, SR_CTAID_X, SR_CTAID_Y, SR_CTAID_Z,
    SR_NCTAID_X, SR_NCTAID_Y, SR_NCTAID_Z, SR_LANEID, SR_WARPID, SR_NWARPID,
    SR_CLUSTER_CTARANK, SR_CLUSTER_NCTARANK, SR_CLUSTER_CTAID_X, SR_CLUSTER_CTAID_Y, SR_CLUSTER_CTAID_Z,
    SR_CLUSTER_NCTAID_X, SR_CLUSTER_NCTAID_Y, SR_CLUSTER_NCTAID_Z, SR_CLUSTERID_X, SR_CLUSTERID_Y, SR_CLUSTERID_Z,
    SR_NCLUSTERID_X, SR_NCLUSTERID_Y, SR_NCLUSTERID_Z, SR_IS_EXPLICIT_CLUSTER,
    SR_LANEMASK_EQ, SR_LANEMASK_LT, SR_LANEMASK_LE, SR_LANEMASK_GT, SR_LANEMASK_GE,
    SR_DYNAMIC_SMEM_SIZE, SR_TOTAL_SMEM_SIZE, SR_CLOCK, SR_CLOCK64, SR_GLOBALTIMER, SR_NSMID, SR_COUNT
} SimSreg;
typedef enum { SPACE_NONE, SPACE_PARAM, SPACE_SHARED, SPACE_GLOBAL, SPACE_LOCAL } SimSpace;

/* Generic addresses of the windows that are not global memory: a generic
 * load or store, cvta and the TMA's tensor-map operand resolve through them. */
#define SIM_SHARED_WINDOW 0x00007E0000000000ull
#define SIM_PARAM_WINDOW  0x00007D0000000000ull
#define SIM_LOCAL_WINDOW  0x00007C0000000000ull   /* generic addresses of the thread's own local memory */

typedef struct {
    uint8_t kind;       /* SimOpndKind */
    uint8_t space;      /* SO_ADDR/SO_SYM with a symbol base: where the symbol lives */
    uint8_t n;          /* SO_VEC: element count; SO_ADDR: tensor coordinates after the base ([map, {x, y}]) */
    uint8_t neg;        /* SO_REG: a predicate source negated (!p), read as its complement */
    uint8_t lit;        /* SO_IMM: how the constant was written (SimLit), which sim_types.c converts by */
    uint8_t dyn;        /* SO_ADDR/SO_SYM: an extern .shared symbol's, whose window is placed once the module is read */
    uint8_t param_var;  /* SO_ADDR/SO_SYM: names a body's .param variable, which the parser places in the frame */
    int32_t reg;        /* SO_REG slot; SO_ADDR base slot or -1; SO_VEC first index into SimFunc.vec */
    int32_t reg2;       /* SO_REG: second register of a "p|q" pair or -1; SO_ADDR: first coordinate in SimFunc.vec */
    int64_t imm;        /* SO_IMM value (floats as bits); SO_ADDR offset (+ symbol address); SO_LABEL pc; SO_SREG id */
} SimOpnd;

/* A constant's written form: an integer, 0fXXXXXXXX (a float's bits), 0dXXXXXXXXXXXXXXXX (a double's) or a decimal
 * float (1.5, 2e-3; its double's bits until sim_types.c converts it to its operand's type). */
enum { LIT_INT, LIT_F32, LIT_F64, LIT_DEC };

enum { SIM_MAX_OPNDS = 10 };
typedef struct {
    IsaInsn d;          /* the mnemonic, decoded (emit/isa.h) */
    uint8_t nops;
    int32_t guard;      /* predicate slot, -1 for none */
    uint8_t guard_neg;
    int32_t line;       /* 1-based line in the module text */
    SimOpnd o[SIM_MAX_OPNDS];
} SimInsn;

typedef struct { char *name; int bytes, align, offset; } SimParam;
typedef struct { char *name; int align, size, offset, is_extern; } SimShared;

typedef struct {
    char *name;
    SimParam *params;
    int nparams, param_bytes;
    SimInsn *code;
    int ncode;
    int32_t *vec;       /* register slots of vector operands (-1: the sink "_"; -2 - i: velem[i]) */
    int nvec;
    SimOpnd *velem;     /* the elements of vector operands that are not registers: constants, special registers */
    int nvelem;
    int nslots;
    uint8_t *slot_bits; /* 1 (pred), 16, 32 or 64 per slot */
    uint8_t *slot_type; /* the IsaType each slot was declared with (.u32, .f16x2, ...) */
    char **slot_name;   /* for messages: the declared name of a slot's register family */
    int maxntid;        /* 0 when not declared */
    SimShared *locals;  /* .local variables: offsets in each thread's frame of local_bytes */
    int nlocals, local_bytes;
} SimFunc;

typedef struct {
    char *text;         /* the module text, one NUL-terminated string per line */
    char **lines;
    int nlines;
    char target[32];
    SimFunc *funcs;
    int nfuncs;
    SimShared *shared;
    int nshared;
    /* module-scope .global variables: one block of gvar_bytes (offsets in it), its initial bytes; each Sim places a
     * copy in its global memory at the module's first launch, which keeps its values across launches */
    SimShared *gvars;
    int ngvars, gvar_bytes;
    uint8_t *gvar_init;
    int static_smem;    /* bytes of non-extern .shared; the dynamic window starts here (aligned) */
    int dyn_align;
} SimModule;

/* Parses PTX text. Anything outside the subset is an error naming line and text. */
int  sim_parse(const char *ptx, SimModule **out, char *err, size_t errlen);
/* Whether an instruction's operands are the count and kinds its form takes (sim_form.c): 0, or -1 with why. */
int  sim_form_check(const SimFunc *f, const SimInsn *in, char *why, size_t n);
/* Whether each operand's register, constant or special register has a type the instruction takes there, as ptxas
 * takes it (sim_types.c); converts its float constants to the operand's type. 0, or -1 with why. */
int  sim_type_check(SimFunc *f, SimInsn *in, char *why, size_t n);
void sim_module_free(SimModule *m);
const SimFunc *sim_find(const SimModule *m, const char *entry);

/* ---- counters (classes: IsaClass in emit/isa.h) ---- */
typedef struct {
    uint64_t warp_insns[CL_COUNT], lane_insns[CL_COUNT];
    uint64_t smem_requests, smem_wavefronts, smem_ideal;   /* loads, stores, ldmatrix, cp.async writes */
    uint64_t gmem_requests, gmem_sectors, gmem_bytes;      /* bytes the active lanes asked for */
    uint64_t ctas, warps;
} SimStats;

void sim_stats_print(const SimStats *s, const char *entry, FILE *out);
/* Shared-memory wavefronts for one warp request: lanes_per_phase lanes of
 * width bytes go through the 32 banks together; a bank serves one 4-byte word
 * per wavefront, and lanes reading the same word share it. phases: the
 * conflict-free count (one wavefront per phase with an active lane). */
int  sim_smem_wavefronts(const uint32_t *addr, uint32_t mask, int width, int lanes_per_phase, int *phases);
int  sim_gmem_sectors(const uint64_t *addr, uint32_t mask, int width);

/* ---- global memory: the device's allocations ---- */
/* acc: per byte, which grids touched it (SIM_ACC_*), so that a programmatic dependent's accesses before its
 * griddepcontrol.wait are judged against what the grids that may still run beside it do (sim_pdl_access). */
typedef struct { uint64_t base; size_t size; uint8_t *data, *acc; int live; } SimBuf;
enum {
    SIM_ACC_R = 1, SIM_ACC_W = 2,     /* read, written by the grid in flight */
    SIM_ACC_PR = 4, SIM_ACC_PW = 8,   /* read, written by a grid that may still run beside a dependent in flight */
    SIM_ACC_RW = SIM_ACC_R | SIM_ACC_W
};
typedef struct {
    SimBuf *bufs;       /* sorted by base */
    int n, cap;
    uint64_t next;      /* next base address to hand out */
} SimHeap;

/* sim_heap.c */
SimBuf *sim_heap_find(const SimHeap *h, uint64_t addr, size_t bytes);   /* the buffer holding all of it, or NULL */
/* Describes where addr lies relative to the nearest buffer, for error messages. */
void sim_heap_describe(const SimHeap *h, uint64_t addr, char *out, size_t cap);
/* Registers a fresh buffer of bytes (filled with 0xFF, as garbage) at base:
 * the device's allocations and a launch record's buffers placed at their
 * recorded addresses. NULL with a message when it would overlap a buffer,
 * is empty or wraps. next is not moved. */
SimBuf *sim_heap_place(SimHeap *h, uint64_t base, size_t bytes, char *err, size_t errlen);
/* A fresh buffer at the next free address, with an unmapped gap after it (an overrun faults); *addr its base. */
SimBuf *sim_heap_alloc(SimHeap *h, size_t bytes, uint64_t *addr, char *err, size_t errlen);
int  sim_heap_remove(SimHeap *h, uint64_t base);   /* frees the buffer at base; -1 when none starts there */
void sim_heap_release(SimHeap *h);                 /* frees every buffer; the heap is empty again */
/* A grid starts: each byte's marks of the grid before become what may still run beside it (SIM_ACC_PW, and
 * SIM_ACC_PR where reads: that grid triggered its dependent early), with the older ones kept (keep: that grid was a
 * dependent that let this one launch before its own wait) or dropped; none at all after another stream operation
 * (fresh: an upload, a copy...), which no grid overlaps. */
void sim_heap_next_grid(SimHeap *h, int keep, int fresh, int reads);

/* ---- one CTA in flight ---- */
/* WS_CLUSTER: waiting in barrier.cluster.wait; WS_UNIT: parked by a unit
 * (e.g. tcgen05.alloc with no free columns) until that unit wakes it. */
enum { WS_RUN, WS_BAR, WS_MBAR, WS_CLUSTER, WS_UNIT, WS_DONE };
/* Per shared byte: written at least once; in flight (a cp.async or an async
 * op will write it when it lands: any access is an error); held (an async op
 * in flight still reads it: a write is an error); generic (written by the
 * generic proxy and not yet fenced by fence.proxy.async from its writer). */
enum { SM_WRITTEN = 1, SM_PENDING = 2, SM_HELD = 4, SM_GENERIC = 8 };

typedef struct {
    uint32_t lane;      /* issuing lane */
    uint32_t dst;       /* shared address */
    uint32_t group;     /* per-lane commit-group index */
    int32_t line;
    uint8_t size;       /* cp-size: 4, 8 or 16 bytes */
    uint8_t data[16];
} SimCopy;

typedef struct {
    uint64_t *r;            /* [slot][32] register values */
    uint32_t pc[32];
    uint32_t live;          /* lanes that have not exited */
    int state, bar_id, wait_line, exit_line;
    uint32_t mbar_addr;     /* the mbarrier whose phase change wakes the parked lanes */
    uint32_t parked;        /* lanes waiting in try_wait on it: not issued until it changes phase; all live lanes parked = WS_MBAR */
    uint32_t *vc;           /* vector clock over the CTA's warps: orders shared accesses */
    uint32_t committed[32]; /* cp.async groups committed per lane */
    SimCopy *copies;        /* cp.async in flight */
    int ncopies, capcopies;
    uint64_t steps;
    uint32_t cl_phase;      /* barrier.cluster: the phase this warp arrived in */
    int cl_arrived;         /* arrived and not yet waited */
    void *wg;               /* the wgmma unit's per-warp state (sim_wgmma.c), or NULL */
    const SimInsn *bar_red; /* the bar.red it waits in, whose destination gets the reduction, or NULL */
    uint8_t *local;         /* its lanes' local memory (32 frames of the function's local_bytes, then as many
                               written-flags), or NULL until first used */
    uint32_t pdl_waited;    /* lanes past griddepcontrol.wait (Sim.pdl) */
    uint32_t carry;         /* each lane's CC.CF: the carry out of its last .cc instruction (sub: 1 if no borrow) */
    uint32_t carry_set;     /* lanes whose CC.CF a .cc instruction wrote: addc, subc, madc read no other */
} SimWarp;

/* A named barrier (bar.sync / bar.arrive): warps counted this phase, warps blocked in it, and the
 * join of the clocks of warps that only arrived (their writes are visible to the waiters). */
typedef struct {
    int arrived, expected;
    uint32_t waiting;
    uint32_t arrived_vc[32];
    uint32_t red_popc, red_all, red_any;   /* bar.red: the phase's predicates so far */
} SimBarrier;

/* An mbarrier object (sim_mbar.c): state kept beside shared memory. */
enum { SIM_MAX_MBARS = 128 };
typedef struct {
    uint32_t addr;          /* shared address of the 8-byte object */
    int init_line;
    uint32_t expected;      /* arrivals per phase */
    uint32_t pending;       /* arrivals the current phase still waits for */
    int64_t tx;             /* transaction bytes still expected (complete_tx may come first) */
    uint32_t phase;         /* phases completed so far */
    uint32_t vc[32];        /* clocks the current phase's arrivals joined */
    uint32_t done_vc[32];   /* clocks of the last completed phase: a successful wait joins them */
} SimMbar;

typedef struct Sim Sim;
typedef struct SimCluster SimCluster;
/* An MMA adds its multiply-adds / this to SimCluster.work: the sim takes about as long for 128 of them as
 * for one plain warp instruction, so an endless loop of MMAs reaches the limit in bounded time too. */
enum { SIM_MACS_PER_STEP = 128 };
typedef struct SimCta SimCta;
struct SimCta {
    Sim *sim;
    SimCluster *cl;                 /* the cluster this CTA runs in (a cluster of one without a cluster launch) */
    SimCta *sm_next;                /* the ring of CTAs resident on this CTA's SM (itself alone by default):
                                     * they share the SM's TMEM columns (Sim.ctas_per_sm) */
    const ArchInfo *arch;           /* the module's .target: every limit the sim checks comes from here */
    int rank;                       /* %cluster_ctarank */
    uint32_t smem_base;             /* rank << 24: shared addresses carry the CTA's rank (see SIM_RANK_SHIFT) */
    uint64_t gvar_base;             /* where the module's .global block lies in global memory (0: none) */
    const SimModule *mod;
    const SimFunc *f;
    unsigned cta[3], grid[3], block[3];
    int nthreads, nwarps;
    SimWarp *w;
    uint8_t *smem, *sflag;          /* data and SM_* flags per byte */
    uint32_t smem_size, dyn_at;     /* dyn_at: where the dynamic window starts */
    uint32_t *wclk, *rclk;          /* per 4-byte word: writer's clock; each warp's last read clock */
    uint32_t *gop, *gclk;           /* per word: 1 + the last wgmma op reading it; its warpgroup's 4 warps' wait clocks */
    uint8_t *gwg;                   /* per word: that op's warpgroup */
    uint32_t nops;                  /* wgmma ops issued by the CTA */
    uint8_t *wwarp, *wrank;         /* per word: the warp that last wrote it, and its CTA's rank (DSMEM writes) */
    uint8_t *watomic;               /* per word: whether that last write was an atomic's (red/atom) */
    int32_t *wline;
    const uint8_t *params;
    SimBarrier bar[16];
    SimMbar mbar[SIM_MAX_MBARS];
    int nmbar;
    int failed;
    void *tmem;                     /* the TMEM unit's state (sim_tmem.c), or NULL before the first tcgen05 op */
    void *tma;                      /* the TMA unit's per-thread bulk groups (sim_tma.c), or NULL before the first bulk op */
    int maxnreg[32];                /* setmaxnreg: registers per thread each warp holds (0: the launch's) */
    int reg_pool;                   /* registers the CTA holds from its launch: the sum of the warps' starting counts */
    uint8_t scratch[64];            /* what a faulting access reads or writes, so callers need no branch */
};

/* ---- the asynchronous proxy (sim_async.c) ----
 * One queue per cluster holds every operation in flight (TMA copies, tcgen05
 * MMAs and commits, wgmma groups, bulk stores) in issue order. An op lands
 * at the latest point the PTX memory model allows: when a thread waits on the
 * mbarrier it signals and the phase would not complete otherwise, at the
 * wait_group of its group, or when nothing else can run. Until it lands its
 * shared-memory destination is in flight (any access is an error naming the
 * op) and its sources are held (a write is an error), so a missing wait
 * shows as a named error, not as luck. */
typedef struct { SimCta *cta; uint32_t lo, bytes; } SimRange;   /* lo: the CTA's local shared offset */
enum { SIM_ASYNC_RANGES = 4 };
typedef struct SimAsync SimAsync;
struct SimAsync {
    const char *what;               /* "TMA load", "tcgen05.mma", ... for messages */
    SimCta *cta;                    /* issuer */
    int warp, lane, line;
    SimCta *bar_cta;                /* the mbarrier its landing signals (NULL: none) */
    uint32_t bar_addr;              /* local shared offset of that mbarrier */
    uint64_t key;                   /* who waits on it by group: unit-defined (e.g. thread, warpgroup) */
    uint32_t group;                 /* its group index under key */
    SimRange dst[SIM_ASYNC_RANGES]; /* shared bytes it writes when it lands */
    SimRange src[SIM_ASYNC_RANGES]; /* shared bytes it reads when it lands */
    int ndst, nsrc;
    /* performs the op's effects (data, mbarrier signal); 0, or -1 after sim_fail */
    int (*land)(SimCluster *cl, SimAsync *op);
    void (*drop)(SimAsync *op);     /* frees payload; NULL: free(payload) */
    void *payload;
};
/* A zeroed op with the issuer filled in; NULL (and the CTA failed) when out of memory. */
SimAsync *sim_async_new(SimCta *c, SimWarp *w, int lane, const SimInsn *in, const char *what);
/* Queues op: its dst bytes become in flight and its src bytes held. The
 * caller has checked them (sim_async_check_dst/src). 0 or -1 (failed). */
int  sim_async_push(SimCluster *cl, SimAsync *op);
/* The issue-time checks of an async op's shared operands, made for the
 * issuing warp: a destination may not be in flight or held by another op and
 * must be ordered after the issuer's view of earlier reads and writes (the
 * race checker); a source must be written, not in flight, and - for the
 * async proxy - fenced after generic writes (a note, or an error when strict). */
int  sim_async_check_dst(SimCta *c, SimWarp *w, int lane, const SimInsn *in, SimCta *dc, uint32_t lo, uint32_t bytes);
int  sim_async_check_src(SimCta *c, SimWarp *w, int lane, const SimInsn *in, SimCta *sc, uint32_t lo, uint32_t bytes);
/* Landing. Each lands ops in issue order and returns how many landed (or -1). */
int  sim_async_land_mbar(SimCluster *cl, SimCta *bar_cta, uint32_t bar_addr);   /* up to the last op that signals it */
int  sim_async_land_group(SimCluster *cl, uint64_t key, uint32_t below);        /* key's ops of groups < below */
int  sim_async_land_all(SimCluster *cl);
int  sim_async_pending(const SimCluster *cl, uint64_t key);                      /* ops in flight under key */
/* For messages: the in-flight op writing (dst) or reading (src) shared byte lo of c. */
const SimAsync *sim_async_covering(const SimCluster *cl, const SimCta *c, uint32_t lo, int dst);
/* The in-flight cp.async covering shared address addr of CTA c (NULL: none), and its thread (sim_mem.c). */
const SimCopy *sim_copy_covering(const SimCta *c, uint32_t addr, int *thread);
/* Marks bytes the async proxy wrote: written, not in flight, no generic writer. */
void sim_async_mark_landed(SimCta *c, uint32_t lo, uint32_t bytes);

/* ---- clusters (sim_cluster.c) ----
 * The CTAs of a cluster run together, warp by warp in turn. A shared
 * address carries its CTA's rank in bits 24 and up (as on the hardware,
 * where CUTLASS clears bit 24 to name the even CTA of a pair): a CTA's own
 * variables sit at rank << 24, mapa moves an address to another rank, and
 * .shared::cluster accesses reach any CTA of the cluster. */
enum { SIM_RANK_SHIFT = 24, SIM_MAX_CTAS_PER_SM = 32, SIM_MAX_SMS = 1024 };
struct SimCluster {
    Sim *sim;
    unsigned dims[3], id[3];        /* cluster shape and this cluster's index in the grid of clusters */
    int n;                          /* CTAs in it */
    int explicit_launch;            /* launched with cluster dims (%is_explicit_cluster) */
    SimCta *cta;                    /* by rank */
    uint32_t bar_phase;             /* barrier.cluster phases completed */
    int bar_arrived;                /* warps arrived in the current phase */
    SimAsync **q;                   /* the async queue, issue order */
    int nq, capq;
    uint64_t work;                  /* its warps' instructions so far, each MMA also counting its multiply-adds /
                                     * SIM_MACS_PER_STEP: the endless-loop limit (Sim.max_steps) counts this, so
                                     * the time to report a spin stays bounded however many warps spin and
                                     * however much MMA work the spin issues */
};
/* The CTA and local offset a shared address names: own (cluster_ok 0: the
 * address must be this CTA's) or any CTA of the cluster (cluster_ok 1).
 * Returns NULL after sim_fail when it names no CTA. */
SimCta *sim_smem_owner(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t addr, int cluster_ok, uint32_t *lo);
int  sim_cluster(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec);     /* barrier.cluster, mapa, fences, setmaxnreg, griddepcontrol */
void sim_cluster_bar_check(SimCluster *cl);   /* after a warp exits: the barrier may now be complete */

/* ---- units of the async families: each returns 1 when it handled the op ---- */
int  sim_tma(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec);        /* sim_tma.c */
void sim_tma_reset(SimCta *c);                                                /* frees the unit's CTA state (CTA reset, free) */
/* A write into shared word wd while a bulk store or reduction's thread has not yet waited (wait_group) for
 * the op that reads it is a race: reported, 0 returned. */
int sim_tma_write_ordered(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t wd);
int  sim_wgmma(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec);      /* sim_wgmma.c */
/* wgmma.mma_async's form (its operand count and kinds follow its types and A's source): 0, or -1 with why. */
int  sim_wgmma_form(const SimFunc *f, const SimInsn *in, char *why, size_t n);
int  sim_tcgen05(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec);    /* sim_tcgen05.c: U_TMEM and U_UMMA */
/* At a CTA's exit (all warps done, queue drained): unit checks such as TMEM
 * not deallocated; frees unit state. 0 or -1 (failed). */
int  sim_tcgen05_exit(SimCta *c);
/* For a deadlock report: who holds the TMEM columns of c's SM (c and its co-resident CTAs). */
void sim_tcgen05_describe(const SimCta *c, char *out, size_t cap);
void sim_wgmma_free(SimWarp *w);   /* also at each CTA's start: the state is per CTA */
/* Before each instruction of a warp that has wgmma state (exec: its lanes):
 * touching a register an in-flight wgmma.mma_async of the warp still owns is
 * an error, and so is exiting while the warpgroup holds an mma_async the
 * warp has not issued; other accesses are recorded for the wgmma.fence
 * check. 1 when it failed. */
int  sim_wgmma_check_regs(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec);
/* At a CTA's exit: a wgmma.mma_async some warps of a warpgroup never issued. */
int  sim_wgmma_exit(SimCta *c);
void sim_tcgen05_reset(SimCta *c);   /* frees the TMEM state (CTA reset, free) */
/* Before each instruction of a warp while registers a tcgen05.ld wrote have
 * seen no tcgen05.wait::ld: a use is a note (an error when strict). 1 when it failed. */
int  sim_tcgen05_check_regs(SimCta *c, SimWarp *w, const SimInsn *in);
/* MMA operands shared by the wgmma and tcgen05 units (sim_wgmma_math.c): an
 * element of IsaType type (f16, bf16, tf32: its 13 low mantissa bits
 * dropped) as a double, and the little-endian value of ebytes shared bytes. */
double   sim_mma_elem(int type, uint32_t bits);
uint32_t sim_mma_load(const uint8_t *smem, uint32_t lo, int ebytes);

/* Notes: where the ISA asks for something a kernel omits but the hardware
 * is known to tolerate (NVIDIA's own tutorials omit fence.proxy.async before
 * tcgen05.mma reads generic writes, and tcgen05.wait::ld), the sim reports a
 * note once per (kind, line); with Sim.strict it is an error instead. */
void sim_note(SimCta *c, int warp, const SimInsn *in, const char *kind, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

struct Sim {
    SimHeap heap;
    struct SimPlaced { const SimModule *m; uint64_t base; } *placed;   /* modules' .global blocks in the heap */
    int nplaced;
    SimStats stats;
    char *err;
    size_t errlen;
    uint64_t max_steps;     /* per cluster (SimCluster.work): catches a spin that never ends */
    int strict;             /* notes are errors (ptxgen's own kernels are held to the ISA) */
    int pdl;                /* the grid in flight is a programmatic dependent (DevLaunchHow.pdl) of the grid before
                             * it: on a GPU it may run while that grid does, so a global access by a thread not yet
                             * past griddepcontrol.wait that races that grid's accesses is a note (sim_pdl_access) */
    int pdl_early;          /* a thread of the dependent in flight let its own dependent launch (launch_dependents,
                             * or by exiting) before its griddepcontrol.wait: the grid before it may still run then */
    int pdl_keep;           /* the last grid was such a dependent: its overlaps carry to the next (sim_heap_next_grid) */
    int pdl_trig;           /* a thread of the grid in flight executed griddepcontrol.launch_dependents: its dependent
                             * may start while some of its CTAs still read, so a dependent's early store to bytes it
                             * reads races (without it the dependent starts as its last CTA exits, its reads done) */
    int pdl_reads;          /* the last grid did (pdl_trig): its reads count against the next (sim_heap_next_grid) */
    int stream_op;          /* an upload, download, fill or copy since the last launch: no grid overlaps the next */
    int ctas_per_sm;        /* clusters run together, the CTAs of one rank on one SM sharing its TMEM
                             * columns (an alloc waits for a co-resident CTA's dealloc); default 1 */
    int nsm;                /* %nsmid: the sim is one SM (default 1); a kernel that orders its CTAs by the
                             * GPU's size is tested at others (CTAs still run in grid order, one valid schedule) */
    char *notes;            /* the notes so far, one per line (malloc'd), and their count */
    size_t notes_len;
    int nnotes;
};

/* A Sim with the defaults (a work limit per cluster) and the environment's debug knobs: PTXGEN_SIM_MAX_STEPS
 * (that limit, in warp instructions), PTXGEN_SIM_STRICT=1 (notes are errors), PTXGEN_SIM_CTAS_PER_SM=k (k clusters
 * co-resident, sharing TMEM; 1 to 32), PTXGEN_SIM_SMS=n (%nsmid; 1 to 1024).
 * sim_fini frees its heap and notes. */
void sim_init(Sim *sim);
void sim_fini(Sim *sim);
/* The module is going away: its .global block leaves the Sim's heap (a later module may take its address). */
void sim_forget_module(Sim *sim, const SimModule *m);

/* Runs the whole grid; returns 0, or -1 with the first error in sim->err.
 * args: one pointer per parameter value (sim_launch), or the parameter
 * space's raw bytes (sim_launch_raw: a launch record's param bytes; params
 * are addressable memory, so a kernel may take a param's address).
 * cluster: CTAs per cluster in x, y, z (NULL: 1, 1, 1); the grid must be a
 * multiple of it. */
int sim_launch(Sim *sim, const SimModule *m, const SimFunc *f, const unsigned grid[3], const unsigned block[3],
               const unsigned cluster[3], unsigned dyn_smem, void **args);
int sim_launch_raw(Sim *sim, const SimModule *m, const SimFunc *f, const unsigned grid[3], const unsigned block[3],
                   const unsigned cluster[3], unsigned dyn_smem, const uint8_t *params, size_t param_bytes);

/* ---- shared by the exec files ---- */
/* The one place errors are worded: the PTX line and its text, the CTA and the thread. */
void sim_fail(SimCta *c, int warp, int lane, const SimInsn *in, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
uint64_t sim_read(const SimCta *c, const SimWarp *w, const SimOpnd *o, int lane);
void     sim_write(SimWarp *w, const SimFunc *f, const SimOpnd *o, int lane, uint64_t v);
/* Element k of a vector operand as a register operand (a sink "_" reads 0 and drops writes). */
SimOpnd  sim_vec_elem(const SimFunc *f, const SimOpnd *v, int k);
/* A register's PTX name: its family's name, plus the index for name<N> families. */
void     sim_reg_name(const SimFunc *f, int slot, char *out, size_t cap);
/* An SO_ADDR operand: base register (if any) + offset; a shared variable's
 * address carries the CTA's rank (smem_base). */
uint64_t sim_addr(const SimCta *c, const SimWarp *w, const SimOpnd *o, int lane);
static inline int sim_warp_id(const SimCta *c, const SimWarp *w) { return (int)(w - c->w); }

int  sim_alu(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec);        /* 1 if op handled */
int  sim_mem(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec);        /* 1 if op handled */
int  sim_collective(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec); /* 1 if op handled */
int  sim_mbar(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec);       /* may park the warp (WS_MBAR) */

/* mbarrier hooks for the asynchronous units: an arrival (vc: the clocks it
 * publishes, or NULL), transaction bytes (negative: completed), lookup. */
void     sim_mbar_arrive(SimCta *c, SimMbar *b, const uint32_t *vc, uint32_t count);
void     sim_mbar_tx(SimCta *c, SimMbar *b, int64_t bytes);
SimMbar *sim_mbar_at(SimCta *c, uint32_t addr);
int      sim_mbar_describe(SimCta *c, const SimWarp *w, char *out, size_t cap);

/* Shared memory through the checker: bounds, alignment, never-written and
 * in-flight bytes, and races between warps not ordered by a barrier. */
uint8_t *sim_smem_read(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t addr, int bytes);
uint8_t *sim_smem_write(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t addr, int bytes);
uint8_t *sim_gmem(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint64_t addr, int bytes, int kind);   /* SIM_ACC_* */
/* A global access by (w, lane) of `bytes` at p in buffer b (kind: SIM_ACC_R, SIM_ACC_W or both, a reduction),
 * marked as the grid in flight's; by a programmatic dependent (Sim.pdl) before the lane's griddepcontrol.wait, to
 * bytes a grid that may still run beside it writes (a store: or reads, where that grid triggered early; Sim.pdl_trig),
 * a note (an error under strict): on a GPU that grid may still be writing or reading them. */
void sim_pdl_access(SimCta *c, SimWarp *w, int lane, const SimInsn *in, SimBuf *b, uint64_t p, int bytes, int kind);
/* Lanes exec of w let the grid's dependent launch: by griddepcontrol.launch_dependents (explicit) or by exiting.
 * Before the lane's own wait, in a dependent, the grid before may then still run beside that dependent too. */
static inline void sim_pdl_release(SimCta *c, const SimWarp *w, uint32_t exec, int explicit_trigger)
{
    if (explicit_trigger && exec) c->sim->pdl_trig = 1;
    if (c->sim->pdl && exec & ~w->pdl_waited) c->sim->pdl_early = 1;
}
/* red/atom's operation on one element of type (IsaType) and width bytes:
 * the new value from old and v (v2: cas's new value). Also the TMA unit's
 * bulk reductions. */
uint64_t sim_red_apply(int type, int redop, uint64_t old, uint64_t v, uint64_t v2, int width);
/* cp.async.wait_group: lands every copy of this lane outside its keep_groups most recent groups. */
void     sim_async_wait(SimCta *c, SimWarp *w, int lane, uint32_t keep_groups);
/* cp.async.mbarrier.arrive: lands every copy of this lane so far, committed or not. */
void     sim_async_land_lane(SimCta *c, SimWarp *w, int lane);
/* Counts one shared-memory request of width bytes per lane in exec (16-byte
 * lanes go 8 to a phase, as ldmatrix rows do; 8-byte 16; 4-byte 32). */
void     sim_count_smem(SimCta *c, const uint32_t *addr, uint32_t exec, int width);
#endif
