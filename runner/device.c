/* Dispatch from the device.h calls to the backend that opened the device. */
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <ctype.h>
#include <stdarg.h>
#include <string.h>
#include "device_impl.h"
#include "arch.h"

int dev_errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (!err || !errlen) return -1;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

int dev_open(Device **out, const char *kind, int ordinal, char *err, size_t errlen)
{
    *out = NULL;
    if (!kind || !strcmp(kind, "cuda")) return cuda_open(out, ordinal, err, errlen);
    if (!strcmp(kind, "sim")) {
        if (ordinal != 0) {
            return dev_errf(err, errlen, "the sim device has one ordinal, 0 (got %d)", ordinal);
        }
        return sim_open(out, err, errlen);
    }
    return dev_errf(err, errlen, "unknown device kind '%s' (cuda or sim)", kind);
}

const char *dev_kind(const Device *d) { return d->ops->name; }
void dev_close(Device *d) { if (d) d->ops->close(d); }
int dev_info(Device *d, DevInfo *i, char *err, size_t n) { return d->ops->info(d, i, err, n); }
void dev_arch_name(const DevInfo *info, char *arch, size_t len) {
    char a[16];
    snprintf(a, sizeof a, "sm_%d%da", info->cc_major, info->cc_minor);
    if (!arch_find(a)) a[strlen(a) - 1] = 0;
    snprintf(arch, len, "%s", a);
}

int dev_dump_ptx(const char *name, const char *ptx, char *path, size_t pathlen) {
    const char *dir = getenv("TMPDIR");
    char safe[64];
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof safe; i++)   /* the name is a file-name part, never a path */
        safe[i] = isalnum((unsigned char)name[i]) || name[i] == '_' || name[i] == '-' ? name[i] : '_';
    safe[i] = '\0';
    if (snprintf(path, pathlen, "%s/ptxgen-%s-XXXXXX.ptx", dir && *dir ? dir : "/tmp", safe) >= (int)pathlen) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mkstemps(path, 4);
    if (fd < 0) return -1;
    FILE *f = fdopen(fd, "w");
    if (!f) { close(fd); return -1; }
    int bad = fputs(ptx, f) < 0;
    return fclose(f) != 0 || bad ? -1 : 0;
}

void dev_set_stream(Device *d, void *stream) { d->stream = stream; }
int dev_stats(Device *d, DevStats *out) { return d->ops->stats_get ? d->ops->stats_get(d, out) : -1; }
const char *dev_last_load(const Device *d) { return d->ops->last_load ? d->ops->last_load(d) : NULL; }

int dev_load_ptx(Device *d, const char *ptx, const char *dump, DevModule **m, char *err, size_t n)
{
    return d->ops->load_ptx(d, ptx, dump, m, err, n);
}
void dev_unload(DevModule *m) { if (m) m->dev->ops->unload(m); }
int dev_get_func(DevModule *m, const char *entry, DevFunc **f, char *err, size_t n)
{
    return m->dev->ops->get_func(m, entry, f, err, n);
}
int dev_func_attrs(DevFunc *f, DevFuncAttrs *a, char *err, size_t n) { return f->dev->ops->func_attrs(f, a, err, n); }
int dev_set_dyn_smem(DevFunc *f, int bytes, char *err, size_t n) { return f->dev->ops->set_dyn_smem(f, bytes, err, n); }
int dev_alloc(Device *d, DevPtr *p, size_t bytes, char *err, size_t n) { return d->ops->alloc(d, p, bytes, err, n); }
int dev_free(Device *d, DevPtr p, char *err, size_t n) { return d->ops->free(d, p, err, n); }
int dev_upload(Device *d, DevPtr dst, const void *src, size_t bytes, char *err, size_t n)
{
    return d->ops->upload(d, dst, src, bytes, err, n);
}
int dev_download(Device *d, void *dst, DevPtr src, size_t bytes, char *err, size_t n)
{
    return d->ops->download(d, dst, src, bytes, err, n);
}
int dev_fill_u8(Device *d, DevPtr dst, uint8_t v, size_t bytes, char *err, size_t n)
{
    return d->ops->fill_u8(d, dst, v, bytes, err, n);
}
int dev_copy(Device *d, DevPtr dst, DevPtr src, size_t bytes, char *err, size_t n)
{
    return d->ops->copy(d, dst, src, bytes, err, n);
}
int dev_launch(DevFunc *f, const unsigned grid[3], const unsigned block[3], unsigned dyn_smem, void **args, char *err,
               size_t n)
{
    return f->dev->ops->launch(f, grid, block, &(DevLaunchHow){0}, dyn_smem, args, err, n);
}
int dev_launch_cluster(DevFunc *f, const unsigned grid[3], const unsigned block[3], const unsigned cluster[3],
                       unsigned dyn_smem, void **args, char *err, size_t n)
{
    return f->dev->ops->launch(f, grid, block, &(DevLaunchHow){cluster, 0}, dyn_smem, args, err, n);
}
int dev_launch_how(DevFunc *f, const unsigned grid[3], const unsigned block[3], const DevLaunchHow *how,
                   unsigned dyn_smem, void **args, char *err, size_t n)
{
    return f->dev->ops->launch(f, grid, block, how, dyn_smem, args, err, n);
}
int dev_sync(Device *d, char *err, size_t n) { return d->ops->sync(d, err, n); }
int dev_event_new(Device *d, DevEvent **e, char *err, size_t n) { return d->ops->event_new(d, e, err, n); }
void dev_event_free(DevEvent *e) { if (e) e->dev->ops->event_free(e); }
int dev_event_record(DevEvent *e, char *err, size_t n) { return e->dev->ops->event_record(e, err, n); }
int dev_event_ms(DevEvent *a, DevEvent *b, float *ms, char *err, size_t n) { return b->dev->ops->event_ms(a, b, ms, err, n); }
int dev_print_stats(Device *d, FILE *out, char *err, size_t n) { return d->ops->stats(d, out, err, n); }
void dev_set_strict(Device *d, int on) { if (d->ops->set_strict) d->ops->set_strict(d, on); }
int dev_print_notes(Device *d, FILE *out) { return d->ops->notes ? d->ops->notes(d, out) : 0; }
/* The index of name in names (n of them), or -1. */
static int name_index(const char *name, const char *const *names, int n)
{
    for (int i = 0; name && i < n; i++)
        if (!strcmp(name, names[i])) return i;
    return -1;
}

int dev_tmap_names(DevTmapDesc *d, const char *dtype, const char *swizzle, const char *interleave, const char *oob_fill,
                   char *err, size_t errlen)
{
    static const char *const dtypes[] = {"fp16", "fp32", "bf16"}, *const swizzles[] = {"none", "32B", "64B", "128B"};
    static const char *const interleaves[] = {"none", "16B", "32B"}, *const fills[] = {"zero", "nan"};
    static const int dtype_codes[] = {6, 7, 9};   /* CUtensorMapDataType */
    int t = name_index(dtype, dtypes, 3), s = name_index(swizzle, swizzles, 4), i = name_index(interleave, interleaves, 3);
    int f = name_index(oob_fill, fills, 2);
    if (t < 0 || s < 0 || i < 0 || f < 0)
        return dev_errf(err, errlen, "tensor map: unknown %s '%s'", t < 0 ? "dtype" : s < 0 ? "swizzle" : i < 0 ? "interleave" : "OOB fill",
                        t < 0 ? dtype : s < 0 ? swizzle : i < 0 ? interleave : oob_fill);
    d->dtype = dtype_codes[t], d->swizzle = s, d->interleave = i, d->oobfill = f;
    return 0;
}

int dev_tmap_encode(Device *d, const DevTmapDesc *desc, uint8_t out[DEV_TMAP_BYTES], char *err, size_t n)
{
    if (!desc || !out) return dev_errf(err, n, "dev_tmap_encode: NULL %s", desc ? "output buffer" : "description");
    return d->ops->tmap_encode(d, desc, out, err, n);
}
