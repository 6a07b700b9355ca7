/* The device interface the runner launches through. Two backends behind it:
 * "cuda", the Driver API loaded with dlopen at run time (runner/cuda.c), and
 * "sim", the CPU interpreter of our PTX (runner/sim/), which needs no GPU. */
#ifndef PTXGEN_DEVICE_H
#define PTXGEN_DEVICE_H
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

typedef uint64_t DevPtr;          /* device address; 0 is never a valid buffer */
typedef struct Device Device;     /* opaque */
typedef struct DevModule DevModule;
typedef struct DevFunc DevFunc;
typedef struct DevEvent DevEvent;

typedef struct {
    int num_regs;           /* CU_FUNC_ATTRIBUTE_NUM_REGS */
    int local_bytes;        /* LOCAL_SIZE_BYTES: > 0 means spills or stack */
    int static_smem;        /* SHARED_SIZE_BYTES */
    int max_threads;        /* MAX_THREADS_PER_BLOCK */
    int max_dyn_smem;       /* MAX_DYNAMIC_SHARED_SIZE_BYTES after opt-in */
} DevFuncAttrs;

/* A tiled tensor map, described device-neutrally with cuTensorMapEncodeTiled's
 * arguments and enum values (CUtensorMapDataType: 6 f16, 7 f32, 9 bf16;
 * interleave 0 none; swizzle 0 none, 1 32B, 2 64B, 3 128B; l2promo 0..3;
 * oobfill 0 zero, 1 NaN). Dimensions innermost first. */
enum { DEV_TMAP_MAX_RANK = 5, DEV_TMAP_BYTES = 128 };
typedef struct {
    int dtype, rank;
    DevPtr gaddr;                              /* element 0, on the device that encodes */
    uint64_t dim[DEV_TMAP_MAX_RANK];           /* elements per dimension */
    uint64_t stride[DEV_TMAP_MAX_RANK - 1];    /* byte strides of dims 1..rank-1 (dim 0 is dense) */
    uint32_t box[DEV_TMAP_MAX_RANK];           /* box extent per dimension, in elements */
    uint32_t estride[DEV_TMAP_MAX_RANK];       /* element (traversal) strides, 1..8 */
    int interleave, swizzle, l2promo, oobfill;
} DevTmapDesc;

typedef struct {
    char name[256];
    int cc_major, cc_minor;
    int sm_count;
    int max_smem_optin;     /* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    size_t total_mem;
} DevInfo;

/* Every call returns 0 on success; otherwise non-zero with a one-line message
 * (naming the failing driver call and its CUresult name) in err. */
/* kind "cuda": ordinal picks the GPU; "no CUDA driver" when libcuda cannot be
 * loaded. kind "sim": the PTX interpreter; ordinal must be 0. */
int  dev_open(Device **out, const char *kind, int ordinal, char *err, size_t errlen);
const char *dev_kind(const Device *d);
void dev_close(Device *d);
int  dev_info(Device *d, DevInfo *info, char *err, size_t errlen);
/* The PTX target of a GPU with this compute capability: its arch-specific one ("sm_90a") where the arch
 * table has it, since only that target has the GPU's newest instructions (wgmma, tcgen05), else "sm_86". */
void dev_arch_name(const DevInfo *info, char *arch, size_t len);

/* Loads PTX: on "cuda" through the assembler runner/ptxas.h chooses (a ptxas, its cubin kept by the
 * JIT cache, jit_cache.h; or the driver's JIT), whole program; dev_last_load says how. On failure
 * the PTX is written to a fresh private file named after dump_name (if
 * non-NULL; dev_dump_ptx) and err holds the JIT's or ptxas's error log and the file's path. */
int  dev_load_ptx(Device *d, const char *ptx, const char *dump_name, DevModule **out, char *err, size_t errlen);
/* ptx into a new file $TMPDIR/ptxgen-<name>-XXXXXX.ptx (mkstemps: created exclusively, mode 0600, so
 * it never follows a link or reuses another's file); its path into path. 0 ok, -1 with errno. */
int  dev_dump_ptx(const char *name, const char *ptx, char *path, size_t pathlen);
void dev_unload(DevModule *m);
/* How the last dev_load_ptx on "cuda" made its cubin, one line ("cubin from ptxgen's cache (assembled by
 * /usr/local/cuda/bin/ptxas)", "the driver's JIT, whole program ..."); NULL on the sim. */
const char *dev_last_load(const Device *d);
int  dev_get_func(DevModule *m, const char *entry, DevFunc **out, char *err, size_t errlen);
int  dev_func_attrs(DevFunc *f, DevFuncAttrs *a, char *err, size_t errlen);
/* Opts the function into dyn_smem bytes of dynamic shared memory (needed above 48 KB). */
int  dev_set_dyn_smem(DevFunc *f, int dyn_smem, char *err, size_t errlen);

int  dev_alloc(Device *d, DevPtr *p, size_t bytes, char *err, size_t errlen);
int  dev_free(Device *d, DevPtr p, char *err, size_t errlen);
int  dev_upload(Device *d, DevPtr dst, const void *src, size_t bytes, char *err, size_t errlen);
int  dev_download(Device *d, void *dst, DevPtr src, size_t bytes, char *err, size_t errlen);
int  dev_fill_u8(Device *d, DevPtr dst, uint8_t v, size_t bytes, char *err, size_t errlen);
/* Device-to-device copy of bytes on the launch stream (bench: the copy bandwidth memory-bound kernels are judged by). */
int  dev_copy(Device *d, DevPtr dst, DevPtr src, size_t bytes, char *err, size_t errlen);

/* args: array of pointers to each parameter value, in the kernel's parameter order. */
int  dev_launch(DevFunc *f, const unsigned grid[3], const unsigned block[3], unsigned dyn_smem,
                void **args, char *err, size_t errlen);
/* The same with cluster dims (CTAs per cluster in x, y, z; the grid a multiple
 * of them): cuLaunchKernelEx with a cluster attribute on "cuda", a cluster
 * launch on the sim. */
int  dev_launch_cluster(DevFunc *f, const unsigned grid[3], const unsigned block[3], const unsigned cluster[3],
                        unsigned dyn_smem, void **args, char *err, size_t errlen);
/* Either, and (pdl) as a programmatic dependent of the launch before it on the stream: on "cuda" it may start while
 * that one still runs, its threads waiting in griddepcontrol.wait (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
 * the sim runs launches one after another. cluster: NULL or CTAs per cluster. */
typedef struct { const unsigned *cluster; int pdl; } DevLaunchHow;
int  dev_launch_how(DevFunc *f, const unsigned grid[3], const unsigned block[3], const DevLaunchHow *how,
                    unsigned dyn_smem, void **args, char *err, size_t errlen);
int  dev_sync(Device *d, char *err, size_t errlen);
/* Later launches, fills and event records go on this CUstream (NULL: the default stream). The sim has none. */
void dev_set_stream(Device *d, void *stream);   /* cuCtxSynchronize: surfaces async launch faults */

int  dev_event_new(Device *d, DevEvent **e, char *err, size_t errlen);
void dev_event_free(DevEvent *e);
int  dev_event_record(DevEvent *e, char *err, size_t errlen);
int  dev_event_ms(DevEvent *start, DevEvent *stop, float *ms, char *err, size_t errlen); /* syncs stop */

/* Encodes desc into the 128-byte tensor map a kernel takes by value (a
 * .param .align 64 .b8 [128] parameter): cuTensorMapEncodeTiled on "cuda",
 * the sim's own encoding (runner/sim/sim_tmap.h) on "sim". A map is only
 * valid on the device that encoded it. */
int  dev_tmap_encode(Device *d, const DevTmapDesc *desc, uint8_t out[DEV_TMAP_BYTES], char *err, size_t errlen);
/* desc's dtype, swizzle, interleave and oobfill from a manifest tensor map's names ("bf16" | "fp16" |
 * "fp32"; "none" | "32B" | "64B" | "128B"; "none" | "16B" | "32B"; "zero" | "nan"); an unknown name is
 * an error naming it. */
int  dev_tmap_names(DevTmapDesc *desc, const char *dtype, const char *swizzle, const char *interleave,
                    const char *oob_fill, char *err, size_t errlen);

/* The sim's notes (sim.h sim_note): what the ISA asks for and a kernel omits
 * although the hardware tolerates it. strict: such omissions are errors
 * (ptxgen's own kernels are held to the ISA). No-ops on cuda. print_notes
 * returns how many it printed. */
void dev_set_strict(Device *d, int on);
int  dev_print_notes(Device *d, FILE *out);

/* Prints the counters summed over every launch so far (sim only; cuda says so). */
int  dev_print_stats(Device *d, FILE *out, char *err, size_t errlen);
/* The same counters as numbers (sim only: -1 elsewhere). Warp instructions by class (emit/isa.h IsaClass). */
enum { DEV_STAT_CLASSES = 32 };
typedef struct {
    uint64_t warp_insns[DEV_STAT_CLASSES];
    uint64_t smem_wavefronts, smem_ideal, gmem_sectors, ctas;
} DevStats;
int  dev_stats(Device *d, DevStats *out);

#endif
