/* The sim behind device.h: allocations are host buffers at synthetic device
 * addresses (with unmapped gaps between them, so an overrun is caught, not
 * absorbed by a neighbour), modules are parsed PTX, and a launch interprets
 * the whole grid before it returns. It has no clock: events refuse. */
#include <stdlib.h>
#include <string.h>
#include "device_impl.h"
#include "sim.h"
#include "sim_tmap.h"

typedef struct SimFn SimFn;
typedef struct {
    struct Device base;
    Sim sim;
    char launched[256];   /* the entries run so far, for the stats header */
} SimDev;
typedef struct {
    struct DevModule base;
    SimDev *d;
    SimModule *m;
    SimFn *funcs;
} SimMod;
struct SimFn {
    struct DevFunc base;
    SimMod *m;
    const SimFunc *f;
    int dyn_optin;
    SimFn *next;
};

enum { DEFAULT_DYN_SMEM = 48 * 1024 };

static void sd_close(Device *d_)
{
    SimDev *d = (SimDev *)d_;
    sim_fini(&d->sim);
    free(d);
}

static int sd_info(Device *d, DevInfo *info, char *err, size_t errlen)
{
    (void)d, (void)err, (void)errlen;
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "ptxgen sim (CPU PTX interpreter)");
    info->cc_major = 9, info->cc_minor = 0, info->sm_count = 1;
    info->max_smem_optin = 232448;
    return 0;
}

static int sd_load(Device *d_, const char *ptx, const char *dump_name, DevModule **out, char *err, size_t errlen)
{
    SimDev *d = (SimDev *)d_;
    SimMod *m = calloc(1, sizeof *m);
    *out = NULL;
    if (!m) return dev_errf(err, errlen, "sim: out of memory");
    if (sim_parse(ptx, &m->m, err, errlen)) {
        char path[1024];
        if (dump_name && dev_dump_ptx(dump_name, ptx, path, sizeof path) == 0) {
            size_t n = strlen(err);
            snprintf(err + n, errlen - n, "; PTX dumped to %s", path);
        }
        free(m);
        return -1;
    }
    m->d = d, m->base.dev = d_;
    *out = &m->base;
    return 0;
}

static void sd_unload(DevModule *m_)
{
    SimMod *m = (SimMod *)m_;
    while (m->funcs) {
        SimFn *n = m->funcs->next;
        free(m->funcs);
        m->funcs = n;
    }
    sim_forget_module(&m->d->sim, m->m);
    sim_module_free(m->m);
    free(m);
}

static int sd_get_func(DevModule *m_, const char *entry, DevFunc **out, char *err, size_t errlen)
{
    SimMod *m = (SimMod *)m_;
    const SimFunc *f = sim_find(m->m, entry);
    *out = NULL;
    if (!f) return dev_errf(err, errlen, "sim: the module has no .entry named %s", entry);
    SimFn *fn = calloc(1, sizeof *fn);
    if (!fn) return dev_errf(err, errlen, "sim: out of memory");
    *fn = (SimFn){.base = {.dev = m->base.dev}, .m = m, .f = f, .dyn_optin = DEFAULT_DYN_SMEM, .next = m->funcs};
    m->funcs = fn;
    *out = &fn->base;
    return 0;
}

static int sd_attrs(DevFunc *f_, DevFuncAttrs *a, char *err, size_t errlen)
{
    SimFn *f = (SimFn *)f_;
    (void)err, (void)errlen;
    /* registers are ptxas's business; the sim runs virtual registers and never spills */
    *a = (DevFuncAttrs){.num_regs = 0, .local_bytes = 0, .static_smem = f->m->m->static_smem,
                        .max_threads = f->f->maxntid ? f->f->maxntid : 1024, .max_dyn_smem = f->dyn_optin};
    return 0;
}

static int sd_set_dyn(DevFunc *f_, int bytes, char *err, size_t errlen)
{
    SimFn *f = (SimFn *)f_;
    if (bytes < 0 || bytes + f->m->m->static_smem > 232448)
        return dev_errf(err, errlen, "sim: %d B dynamic shared memory exceeds 227 KB per CTA", bytes);
    f->dyn_optin = bytes;
    return 0;
}

/* ---- memory ---- */
static int sd_alloc(Device *d_, DevPtr *p, size_t bytes, char *err, size_t errlen)
{
    SimHeap *h = &((SimDev *)d_)->sim.heap;
    *p = 0;
    if (!bytes) return dev_errf(err, errlen, "sim: zero-byte allocation");
    uint64_t a;
    if (!sim_heap_alloc(h, bytes, &a, err, errlen)) return -1;
    *p = a;
    return 0;
}

static int sd_free(Device *d_, DevPtr p, char *err, size_t errlen)
{
    if (!p || !sim_heap_remove(&((SimDev *)d_)->sim.heap, p)) return 0;
    return dev_errf(err, errlen, "sim: free of 0x%llx, which is not an allocation", (unsigned long long)p);
}

static uint8_t *host_span(SimDev *d, DevPtr p, size_t bytes, const char *what, char *err, size_t errlen)
{
    SimBuf *b = sim_heap_find(&d->sim.heap, p, bytes);
    d->sim.stream_op = 1;   /* no grid launched after it overlaps one before it */
    if (!b) dev_errf(err, errlen, "sim: %s of %zu bytes at 0x%llx is outside every allocation", what, bytes, (unsigned long long)p);
    return b ? b->data + (p - b->base) : NULL;
}

static int sd_upload(Device *d, DevPtr dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    uint8_t *h = host_span((SimDev *)d, dst, bytes, "upload", err, errlen);
    if (!h) return -1;
    memcpy(h, src, bytes);
    return 0;
}

static int sd_download(Device *d, void *dst, DevPtr src, size_t bytes, char *err, size_t errlen)
{
    uint8_t *h = host_span((SimDev *)d, src, bytes, "download", err, errlen);
    if (!h) return -1;
    memcpy(dst, h, bytes);
    return 0;
}

static int sd_fill(Device *d, DevPtr dst, uint8_t v, size_t bytes, char *err, size_t errlen)
{
    uint8_t *h = host_span((SimDev *)d, dst, bytes, "fill", err, errlen);
    if (!h) return -1;
    memset(h, v, bytes);
    return 0;
}

static int sd_copy(Device *d, DevPtr dst, DevPtr src, size_t bytes, char *err, size_t errlen)
{
    uint8_t *to = host_span((SimDev *)d, dst, bytes, "copy to", err, errlen);
    uint8_t *from = to ? host_span((SimDev *)d, src, bytes, "copy from", err, errlen) : NULL;
    if (!from) return -1;
    memmove(to, from, bytes);
    return 0;
}

/* ---- launch ---- */
static int sd_launch(DevFunc *f_, const unsigned grid[3], const unsigned block[3], const DevLaunchHow *how,
                     unsigned dyn_smem, void **args, char *err, size_t errlen)
{
    const unsigned *cluster = how->cluster;   /* how->pdl: launches run one after another here, a dependent's early accesses judged (sim_pdl_access) */
    SimFn *f = (SimFn *)f_;
    SimDev *d = f->m->d;
    if ((int)dyn_smem > f->dyn_optin)
        return dev_errf(err, errlen, "sim: launch asks for %u B dynamic shared memory; the function is opted in to %d B",
                   dyn_smem, f->dyn_optin);
    d->sim.err = err, d->sim.errlen = errlen;
    size_t n = strlen(d->launched);
    if (n + 4 < sizeof d->launched) snprintf(d->launched + n, sizeof d->launched - n, "%s%s", n ? " + " : "", f->f->name);
    /* a dependent overlaps the grid right before it (and, where that one let it launch before its own wait, the
     * ones that grid overlapped), never across another stream operation */
    sim_heap_next_grid(&d->sim.heap, d->sim.pdl_keep, d->sim.stream_op, d->sim.pdl_reads);
    d->sim.pdl = how->pdl && !d->sim.stream_op;
    d->sim.pdl_early = d->sim.pdl_trig = d->sim.stream_op = 0;
    int rc = sim_launch(&d->sim, f->m->m, f->f, grid, block, cluster, dyn_smem, args);
    d->sim.pdl_keep = d->sim.pdl && d->sim.pdl_early;
    d->sim.pdl_reads = d->sim.pdl_trig;
    d->sim.pdl = 0;
    return rc;
}

static int sd_sync(Device *d, char *err, size_t errlen)
{
    (void)d, (void)err, (void)errlen;
    return 0;   /* launches finish before they return */
}

static int sd_event_new(Device *d, DevEvent **e, char *err, size_t errlen)
{
    (void)d;
    *e = NULL;
    return dev_errf(err, errlen, "the sim device does not time kernels: bench needs a GPU (--device cuda)");
}

static void sd_event_free(DevEvent *e) { (void)e; }

static int sd_event_record(DevEvent *e, char *err, size_t errlen)
{
    (void)e;
    return dev_errf(err, errlen, "the sim device has no events");
}

static int sd_event_ms(DevEvent *a, DevEvent *b, float *ms, char *err, size_t errlen)
{
    (void)a, (void)b;
    *ms = 0;
    return dev_errf(err, errlen, "the sim device has no events");
}

static int sd_stats(Device *d_, FILE *out, char *err, size_t errlen)
{
    SimDev *d = (SimDev *)d_;
    if (!d->launched[0]) return dev_errf(err, errlen, "sim: no kernel has run yet");
    sim_stats_print(&d->sim.stats, d->launched, out);
    return 0;
}

_Static_assert((int)CL_COUNT <= (int)DEV_STAT_CLASSES, "device.h holds every instruction class");
static int sd_stats_get(Device *d_, DevStats *out)
{
    const SimStats *st = &((SimDev *)d_)->sim.stats;
    *out = (DevStats){.smem_wavefronts = st->smem_wavefronts, .smem_ideal = st->smem_ideal, .gmem_sectors = st->gmem_sectors,
                      .ctas = st->ctas};
    for (int c = 0; c < CL_COUNT; c++) out->warp_insns[c] = st->warp_insns[c];
    return 0;
}

/* The gaddr is not checked against the heap: like the driver, encode takes
 * any aligned address, and a copy through the map faults where it reads. */
_Static_assert((int)DEV_TMAP_BYTES == (int)TMAP_BYTES && (int)DEV_TMAP_MAX_RANK == (int)TMAP_MAX_RANK,
               "device.h and the sim agree on the tensor-map size");
static int sd_tmap_encode(Device *d, const DevTmapDesc *m, uint8_t out[DEV_TMAP_BYTES], char *err, size_t errlen)
{
    (void)d;
    return sim_tmap_encode(m->dtype, m->rank, m->gaddr, m->dim, m->stride, m->box, m->estride, m->interleave,
                           m->swizzle, m->l2promo, m->oobfill, out, err, errlen);
}

static void sd_set_strict(Device *d, int on) { ((SimDev *)d)->sim.strict = on; }

static int sd_notes(Device *d_, FILE *out)
{
    SimDev *d = (SimDev *)d_;
    if (d->sim.nnotes) fputs(d->sim.notes, out);
    return d->sim.nnotes;
}

static const DevOps kSimOps = {
    .name = "sim", .close = sd_close, .info = sd_info, .load_ptx = sd_load, .unload = sd_unload,
    .get_func = sd_get_func, .func_attrs = sd_attrs, .set_dyn_smem = sd_set_dyn, .alloc = sd_alloc,
    .free = sd_free, .upload = sd_upload, .download = sd_download, .fill_u8 = sd_fill, .copy = sd_copy, .launch = sd_launch,
    .sync = sd_sync, .event_new = sd_event_new, .event_free = sd_event_free, .event_record = sd_event_record,
    .event_ms = sd_event_ms, .stats = sd_stats, .stats_get = sd_stats_get, .tmap_encode = sd_tmap_encode, .set_strict = sd_set_strict,
    .notes = sd_notes,
};

int sim_open(Device **out, char *err, size_t errlen)
{
    SimDev *d = calloc(1, sizeof *d);
    *out = NULL;
    if (!d) return dev_errf(err, errlen, "sim: out of memory");
    d->base.ops = &kSimOps;
    sim_init(&d->sim);
    *out = &d->base;
    return 0;
}
