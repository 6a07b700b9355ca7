/* Block-sparse problems (blockmask.h). */
#include "blockmask.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

PTXGEN_API int ptxgen_head_mask_check(const int *head_mask_type, int h_q, int n_mask_heads, char *err, size_t errlen) {
    errlen = err ? errlen : 0;   /* a NULL err takes no message */
    if (!head_mask_type || h_q < 1 || n_mask_heads < 1) {
        snprintf(err, errlen, "block-sparse needs h_q >= 1 head types and n_mask_heads >= 1 mask heads (got %d, %d)", h_q,
                 n_mask_heads);
        return 2;
    }
    for (int h = 0; h < h_q; h++)
        if (head_mask_type[h] < 0 || head_mask_type[h] > n_mask_heads) {
            snprintf(err, errlen, "head_mask_type[%d] is %d: 0 (dense) or a mask head 1 .. %d", h, head_mask_type[h],
                     n_mask_heads);
            return 2;
        }
    return 0;
}

/* the mask's entries (blockmask_setup bounds them by 2^32 - 1, what the kernels index) */
static long long mask_count(const Problem *p) { return (long long)p->b * p->n_mask_heads * p->mask_rows * p->mask_cols; }

/* FILE: the mask's integers, then the head types */
static int read_file(Problem *p, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) return snprintf(err, errlen, "--block-mask %s: %s", path, strerror(errno)), 2;
    long long need = mask_count(p) + p->h_q, got = 0;
    p->mask_file = malloc(sizeof *p->mask_file * (size_t)need);
    if (!p->mask_file) { fclose(f); return snprintf(err, errlen, "out of host memory for --block-mask %s", path), 2; }
    long long v;
    int wide = 0;   /* a value past int32 (the tensors' type) is no mask entry or head type, not one cut down to 32 bits */
    while (got < need && !wide && fscanf(f, "%lld", &v) == 1) {
        wide = v < INT32_MIN || v > INT32_MAX;
        p->mask_file[got++] = (int32_t)v;
    }
    if (wide) {
        fclose(f);
        return snprintf(err, errlen, "--block-mask %s: integer %lld is %lld, past int32", path, got, v), 2;
    }
    int extra = fscanf(f, "%lld", &v) == 1, junk = !extra && !feof(f);
    fclose(f);
    if (got < need || extra || junk)
        return snprintf(err, errlen, "--block-mask %s: want exactly %lld integers (b %d x %d mask heads x %d x %d blocks, "
                        "then %d head types), %s", path, need, p->b, p->n_mask_heads, p->mask_rows, p->mask_cols, p->h_q,
                        junk ? "found something else" : got < need ? "found fewer" : "found more"), 2;
    char why[256];
    if (ptxgen_head_mask_check(p->mask_file + mask_count(p), p->h_q, p->n_mask_heads, why, sizeof why))
        return snprintf(err, errlen, "--block-mask %s: %s", path, why), 2;
    return 0;
}

int blockmask_setup(Problem *p, const char *mode, int mask_heads, char *err, size_t errlen) {
    char *end;
    p->n_mask_heads = mask_heads ? mask_heads : 2;
    p->mask_rows = (p->s_q + p->block_m - 1) / p->block_m;
    p->mask_cols = (p->s_k + p->block_n - 1) / p->block_n;
    if (!mode) mode = "random:0.5";
    p->mask_mode = mode;
    double entries = (double)p->b * p->n_mask_heads * p->mask_rows * p->mask_cols;   /* no overflow: doubles */
    if (entries > (double)UINT32_MAX)
        return snprintf(err, errlen, "the block mask would have %.0f entries (b %d x %d mask heads x %d x %d blocks), more "
                        "than the 2^32 - 1 the kernels index in 32 bits", entries, p->b, p->n_mask_heads, p->mask_rows,
                        p->mask_cols), 2;
    if (!strncmp(mode, "random:", 7)) {
        p->mask_density = strtod(mode + 7, &end);
        if (!mode[7] || *end || !(p->mask_density >= 0 && p->mask_density <= 1))
            return snprintf(err, errlen, "--block-mask random:DENSITY needs a density in [0, 1], got '%s'", mode), 2;
        return 0;
    }
    if (!strncmp(mode, "local:", 6)) {
        long w = strtol(mode + 6, &end, 10);
        if (!mode[6] || *end || w < 1 || w > 1 << 20)
            return snprintf(err, errlen, "--block-mask local:W needs a band of W >= 1 blocks, got '%s'", mode), 2;
        p->mask_width = (int)w;
        return 0;
    }
    return read_file(p, mode, err, errlen);
}

void blockmask_layouts(Problem *p) {
    problem_layout(&p->block_mask, "block_mask", p->b, p->n_mask_heads * p->mask_rows, 1, p->mask_cols, 0, 4);
    problem_layout(&p->head_mask_type, "head_mask_type", 1, 1, 1, p->h_q, 0, 4);
}

/* random:D draws each block set with probability D; local:W sets the blocks within W - 1 of the diagonal
 * (|r - c| < W); the head types are 0 for head 0 (a dense head among the sparse ones, when h_q > 1), then the mask
 * heads in turn. */
int blockmask_draw(Problem *p, Rng *rng, char *err, size_t errlen) {
    Tensor *m = &p->block_mask, *t = &p->head_mask_type;
    if (!(m->ints = malloc(sizeof *m->ints * m->count)) || !(t->ints = malloc(sizeof *t->ints * t->count)))
        return snprintf(err, errlen, "out of host memory for the block mask"), 1;
    if (p->mask_file) {
        memcpy(m->ints, p->mask_file, sizeof *m->ints * m->count);
        memcpy(t->ints, p->mask_file + m->count, sizeof *t->ints * t->count);
        return 0;
    }
    for (size_t i = 0; i < m->count; i++) {
        int r = (int)(i / (size_t)p->mask_cols % (size_t)p->mask_rows), c = (int)(i % (size_t)p->mask_cols);
        m->ints[i] = p->mask_width ? abs(r - c) < p->mask_width : rng_uniform(rng) < p->mask_density;
    }
    for (int h = 0; h < p->h_q; h++) t->ints[h] = p->h_q > 1 && h == 0 ? 0 : 1 + h % p->n_mask_heads;
    return 0;
}

RefMask blockmask_ref(const Problem *p, int b) {
    if (!p->block_m) return (RefMask){0};
    return (RefMask){p->block_mask.ints + (size_t)b * p->n_mask_heads * p->mask_rows * p->mask_cols,
                     p->head_mask_type.ints, p->n_mask_heads, p->mask_rows, p->mask_cols, p->block_m, p->block_n};
}

double blockmask_density(const Problem *p) {
    const int32_t *t = p->head_mask_type.ints, *m = p->block_mask.ints;
    if (!t || !m) return p->mask_mode && !strncmp(p->mask_mode, "random:", 7) ? p->mask_density : 1.0;   /* not drawn yet */
    double on = 0;
    size_t per = (size_t)p->mask_rows * p->mask_cols;
    for (int b = 0; b < p->b; b++)
        for (int h = 0; h < p->h_q; h++) {
            if (!t[h]) { on += (double)per; continue; }
            const int32_t *blk = m + ((size_t)b * p->n_mask_heads + (size_t)(t[h] - 1)) * per;
            for (size_t i = 0; i < per; i++) on += blk[i] != 0;
        }
    return on / ((double)p->b * p->h_q * (double)per);
}

void blockmask_describe(const Problem *p, char *buf, size_t len) {
    int n = snprintf(buf, len, " block-sparse %dx%d %s (%.1f%% of blocks active, %d mask heads, types", p->block_m,
                     p->block_n, p->mask_mode, 100 * blockmask_density(p), p->n_mask_heads);
    for (int h = 0; h < p->h_q && n > 0 && (size_t)n < len; h++) {
        if (h == 8 && p->h_q > 10) { n += snprintf(buf + n, len - (size_t)n, " ..."); break; }
        n += snprintf(buf + n, len - (size_t)n, "%s%d", h ? "," : " ", p->head_mask_type.ints[h]);
    }
    if (n > 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, ")");
}
