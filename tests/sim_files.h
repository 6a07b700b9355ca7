/* The harness of the sim's PTX test files (tests/sim/ (*.ptx), read by test_sim and test_fuzz_ptx): a file's
 * header lines (test_sim.c's head says what they mean) and one launch of its entry k (after the entries "// before"
 * names) over 1024-byte in and out buffers, with the tensor maps the header asks for. */
#ifndef SIM_FILES_H
#define SIM_FILES_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "device.h"

enum { BYTES = 1024 };

typedef struct { int on, dtype, swizzle, oobfill; unsigned dim[2], box[2]; } TmapHdr;
typedef struct {
    char expect[256], note[256], before[128];   /* before: entries launched ahead of k, space-separated */
    unsigned block, smem, grid, cluster, ctas_per_sm;
    int atomics, fixed, oob, strict, pdl;
    TmapHdr tmap[2];
} Header;

static char *slurp(const char *path) __attribute__((unused));
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) { free(s); s = NULL; }
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

static void header(const char *text, Header *h) __attribute__((unused));
static void header(const char *text, Header *h)
{
    const char *e = strstr(text, "// expect: "), *b = strstr(text, "// block: "), *s = strstr(text, "// smem: ");
    const char *n = strstr(text, "// note: "), *bf = strstr(text, "// before: ");
    h->expect[0] = h->note[0] = h->before[0] = 0;
    if (e) sscanf(e + 11, "%255[^\n]", h->expect);
    if (n) sscanf(n + 9, "%255[^\n]", h->note);
    if (bf) sscanf(bf + 11, "%127[^\n]", h->before);
    h->block = b ? (unsigned)atoi(b + 10) : 0;
    h->smem = s ? (unsigned)atoi(s + 9) : 0;
    h->atomics = strstr(text, "// check: atomics") != NULL;
    h->fixed = strstr(text, "// check: fixed") != NULL;
    h->oob = strstr(text, "// check: oob_fill") != NULL;
    h->strict = strstr(text, "// strict") != NULL;
    h->pdl = strstr(text, "// pdl") != NULL;   /* launched as a programmatic dependent */
    const char *g = strstr(text, "// grid: "), *c = strstr(text, "// cluster: ");
    h->grid = g ? (unsigned)atoi(g + 9) : 1;
    h->cluster = c ? (unsigned)atoi(c + 12) : 0;
    const char *sm = strstr(text, "// ctas_per_sm: ");
    h->ctas_per_sm = sm ? (unsigned)atoi(sm + 16) : 0;
    for (int k = 0; k < 2; k++) {
        const char *t = strstr(text, k ? "// tmap_out: " : "// tmap_in: ");
        TmapHdr *m = &h->tmap[k];
        m->oobfill = 0;   /* an optional seventh number: 1 fills out-of-bound elements with NaN */
        m->on = t && sscanf(strchr(t, ':') + 1, "%d %u %u %u %u %d %d", &m->dtype, &m->dim[0], &m->dim[1], &m->box[0],
                            &m->box[1], &m->swizzle, &m->oobfill) >= 6;
    }
}

/* A 2-D tensor map over a 1024-byte buffer as the header describes it. */
static int encode(Device *dev, const TmapHdr *m, DevPtr p, uint8_t out[DEV_TMAP_BYTES], char *err, size_t errlen)
{
    static const int kBytes[13] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};   /* CUtensorMapDataType 0..12 */
    int eb = m->dtype >= 0 && m->dtype < 13 ? kBytes[m->dtype] : 1;
    DevTmapDesc d = {.dtype = m->dtype, .rank = 2, .gaddr = p, .dim = {m->dim[0], m->dim[1]},
                     .stride = {(uint64_t)m->dim[0] * (uint64_t)eb}, .box = {m->box[0], m->box[1]}, .estride = {1, 1},
                     .swizzle = m->swizzle, .oobfill = m->oobfill};
    return dev_tmap_encode(dev, &d, out, err, errlen);
}

static int run(Device *dev, const char *ptx, const Header *h, uint8_t *in, uint8_t *out, char *err, size_t errlen)
    __attribute__((unused));
static int run(Device *dev, const char *ptx, const Header *h, uint8_t *in, uint8_t *out, char *err, size_t errlen)
{
    DevModule *m = NULL;
    DevFunc *f = NULL;
    DevPtr din = 0, dout = 0;
    unsigned grid[3] = {h->grid, 1, 1}, block[3] = {h->block, 1, 1}, cluster[3] = {h->cluster, 1, 1};
    uint8_t maps[2][DEV_TMAP_BYTES] __attribute__((aligned(64)));
    int rc = dev_load_ptx(dev, ptx, NULL, &m, err, errlen) || dev_get_func(m, "k", &f, err, errlen) ||
             dev_set_dyn_smem(f, (int)h->smem, err, errlen) || dev_alloc(dev, &din, BYTES, err, errlen) ||
             dev_alloc(dev, &dout, BYTES, err, errlen) || dev_upload(dev, din, in, BYTES, err, errlen) ||
             dev_fill_u8(dev, dout, 0xFF, BYTES, err, errlen);
    void *args[8] = {&din, &dout};   /* NULL past the harness's values: a kernel with more parameters is refused */
    for (int k = 0, n = 2; !rc && k < 2; k++)
        if (h->tmap[k].on) {
            rc = encode(dev, &h->tmap[k], k ? dout : din, maps[k], err, errlen);
            args[n++] = maps[k];
        }
    /* "// before: p q": p, then q, then k, each after the first a programmatic dependent of the one before it
     * under "// pdl" (the grids a dependent's early accesses are judged against) */
    char names[sizeof h->before], *save = NULL;
    memcpy(names, h->before, sizeof names);
    for (char *nm = strtok_r(names, " ", &save), *first = nm; !rc && nm; nm = strtok_r(NULL, " ", &save)) {
        DevFunc *g = NULL;
        DevLaunchHow how = {h->cluster ? cluster : NULL, h->pdl && nm != first};
        rc = dev_get_func(m, nm, &g, err, errlen) || dev_set_dyn_smem(g, (int)h->smem, err, errlen) ||
             dev_launch_how(g, grid, block, &how, h->smem, args, err, errlen);
    }
    if (!rc) {
        DevLaunchHow how = {h->cluster ? cluster : NULL, h->pdl};
        rc = dev_launch_how(f, grid, block, &how, h->smem, args, err, errlen) ||
             dev_sync(dev, err, errlen) || dev_download(dev, out, dout, BYTES, err, errlen);
    }
    char ignore[256];
    if (din) dev_free(dev, din, ignore, sizeof ignore);
    if (dout) dev_free(dev, dout, ignore, sizeof ignore);
    dev_unload(m);
    return rc;
}

#endif
