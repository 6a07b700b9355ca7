/* ptxgen tune: every tile of a kernel's tile keys (their cartesian product)
 * for one arch, family and problem: a point the generator or its plan
 * refuses is listed with the reason; every other one is built, assembled,
 * checked against the reference on the device and, on a GPU, timed. The
 * constraints that only testing finds (seed 004) are found by running every
 * candidate. Results: a table, CSV, JSON and an SVG; on a GPU the fastest
 * point that passed is the best. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "buf.h"
#include "check.h"
#include "family.h"
#include "isa.h"
#include "kinds.h"
#include "tuned.h"

typedef struct {
    char tile[96];
    int refused, rc;      /* refused: the build said no (why); rc: run_measure's */
    char why[320];
    Measure m;
} Point;

/* The tile strings of the cartesian product of the kind's keys, into pts (NULL: only counted); their count. A pack of more query heads
 * than the problem's group (h_q / h_kv) only leaves rows idle, so those values are not tried; of persist's, only 0
 * and the largest (the others are other GPUs' SM counts and small grids for tests). */
static int enumerate(const KernelKind *kind, int group, Point *pts) {
    int n = *kind->nkeys, idx[16] = {0}, count = 0, nallowed[16], vals[16][8];
    for (int k = 0; k < n; k++) {
        const TileKey *key = &kind->keys[k];
        nallowed[k] = key->nallowed;
        memcpy(vals[k], key->allowed, sizeof vals[k]);
        while (!strcmp(key->key, "pack") && nallowed[k] > 1 && vals[k][nallowed[k] - 1] > group) nallowed[k]--;
        if (!strcmp(key->key, "persist") && nallowed[k] > 2) vals[k][1] = vals[k][nallowed[k] - 1], nallowed[k] = 2;
    }
    for (;;) {
        Buf b = {0};
        for (int k = 0; k < n; k++) buf_printf(&b, "%s%s=%d", k ? "," : "", kind->keys[k].key, vals[k][idx[k]]);
        if (pts) snprintf(pts[count].tile, sizeof pts[0].tile, "%s", b.s ? b.s : "");
        count++;
        buf_free(&b);
        int k = n - 1;
        while (k >= 0 && ++idx[k] == nallowed[k]) idx[k--] = 0;
        if (k < 0) break;
    }
    return count;
}

static void progress(int i, int n, const char *tile) {
    int w = 30, done = w * i / n;
    fprintf(stderr, "\r[%.*s%*s] %d/%d %-60.60s", done, "##############################", w - done, "", i, n, tile);
    if (i == n) fputc('\n', stderr);
    fflush(stderr);
}

static double score(const Point *p, int gpu) {   /* what the table ranks and the chart draws */
    if (p->refused || p->rc) return -1;
    if (gpu) return p->m.tflops;
    uint64_t t = 0;
    for (int c = 0; c < DEV_STAT_CLASSES; c++) t += p->m.stats.warp_insns[c];
    return (double)t;
}

static int write_file(const char *path, const Buf *b) {
    FILE *f = fopen(path, "w");
    int bad = !f || fputs(b->s ? b->s : "", f) < 0;
    if (f) bad |= fclose(f) != 0;
    if (bad) fprintf(stderr, "ptxgen: cannot write %s\n", path);
    return bad;
}

static void json_str(Buf *b, const char *s) {
    buf_puts(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') buf_printf(b, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) buf_printf(b, "\\u%04x", *s);
        else buf_printf(b, "%c", *s);
    }
    buf_puts(b, "\"");
}

static void svg(const char *path, const Point *p, int n, int gpu, const char *title) {
    int w = 80 + 26 * n, h = 380, y0 = 260;
    double top = 0;
    for (int i = 0; i < n; i++) top = score(&p[i], gpu) > top ? score(&p[i], gpu) : top;
    Buf b = {0};
    buf_printf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"10\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"10\" y=\"16\" "
               "font-size=\"12\">", w, h);
    for (const char *s = title; *s; s++) buf_printf(&b, *s == '<' ? "&lt;" : *s == '&' ? "&amp;" : "%c", *s);
    buf_printf(&b, "</text>\n<line x1=\"40\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", y0, w - 10, y0);
    for (int i = 0; i < n; i++) {
        double s = score(&p[i], gpu), bh = top > 0 && s > 0 ? (y0 - 30) * s / top : 0;
        int x = 50 + 26 * i;
        const char *fill = p[i].refused ? "#cccccc" : p[i].rc ? "#d65f5f" : "#4878d0";
        buf_printf(&b, "<rect x=\"%d\" y=\"%.1f\" width=\"20\" height=\"%.1f\" fill=\"%s\"><title>%s: %s</title></rect>\n",
                   x, y0 - (bh > 0 ? bh : 3), bh > 0 ? bh : 3, fill, p[i].tile,
                   p[i].refused ? "refused" : p[i].rc ? "failed" : "ok");
        buf_printf(&b, "<text x=\"%d\" y=\"%d\" transform=\"rotate(60 %d %d)\" font-size=\"8\">%s</text>\n", x, y0 + 8, x,
                   y0 + 8, p[i].tile);
    }
    buf_printf(&b, "<text x=\"10\" y=\"%d\">blue: passed (height: %s), red: failed its check, grey: refused by the plan"
               "</text>\n</svg>\n", h - 8, gpu ? "TFLOP/s" : "warp instructions on the sim");
    write_file(path, &b);
    buf_free(&b);
}

/* Whether path can be written (NULL: none asked): tried before the sweep, which takes minutes, rather than after it.
 * A file the try creates is removed again. */
static int writable(const char *path, const char *flag) {
    if (!path) return 1;
    FILE *f = fopen(path, "r");
    int existed = f != NULL;
    if (f) fclose(f);
    if (!(f = fopen(path, "a"))) {
        fprintf(stderr, "ptxgen: tune %s %s: cannot write it: %s\n", flag, path, strerror(errno));
        return 0;
    }
    fclose(f);
    if (!existed) remove(path);
    return 1;
}

int run_tune(const RunOpts *o, const char *csv, const char *json, const char *svg_path, int save) {
    const ArchInfo *a = o->req.arch ? arch_find(o->req.arch) : NULL;
    unsigned fam = FAM_AUTO;
    char err[512], note[200];
    const KernelKind *kind;
    if (!o->req.arch) { fprintf(stderr, "ptxgen: tune needs --arch (the tiles depend on it)\n"); return 2; }
    if (!a) { fprintf(stderr, "ptxgen: unknown arch '%s'\n", o->req.arch); return 2; }
    if (family_parse(o->req.family, &fam, err, sizeof err) ||
        kind_pick(o->req.kernel, a, fam, &kind, note, sizeof note, err, sizeof err)) {
        fprintf(stderr, "ptxgen: %s\n", err);
        return 2;
    }
    if (o->req.tile && o->req.tile[0]) { fprintf(stderr, "ptxgen: tune sweeps the tiles itself: leave out --tile\n"); return 2; }
    if (!writable(csv, "--csv") || !writable(json, "--json") || !writable(svg_path, "--svg")) return 2;
    if (save && o->device_kind && !strcmp(o->device_kind, "sim")) {
        fprintf(stderr, "ptxgen: tune --save needs a GPU: the sim does not time, so it has no best tile\n");
        return 2;
    }
    int group = o->h_q > 0 && o->h_kv > 0 ? o->h_q / o->h_kv : 1, n = enumerate(kind, group, NULL);
    Point *p = calloc((size_t)n, sizeof *p);   /* every point of the product: none left out unsaid */
    if (!p) return 1;
    enumerate(kind, group, p);
    int gpu = !o->device_kind || strcmp(o->device_kind, "sim"), ok = 0, best = -1;
    for (int i = 0; i < n; i++) {
        progress(i, n, p[i].tile);
        RunOpts r = *o;
        r.req.tile = p[i].tile;
        ptxgen_set *s = NULL;
        if (ptxgen_build(&r.req, &s, p[i].why, sizeof p[i].why)) {
            p[i].refused = 1;
            continue;
        }
        ptxgen_free(s);
        /* each point's check lines go to /dev/null (the table says it): file descriptor 1 for the measure */
        fflush(stdout);
        int keep = dup(1), null = open("/dev/null", O_WRONLY);
        if (keep >= 0 && null >= 0) dup2(null, 1);
        p[i].rc = run_measure(&r, &p[i].m);
        fflush(stdout);
        if (keep >= 0 && null >= 0) dup2(keep, 1);
        if (keep >= 0) close(keep);
        if (null >= 0) close(null);
        if (p[i].rc) snprintf(p[i].why, sizeof p[i].why, "its check failed on the %s (rerun: ptxgen check --tile %s)",
                              gpu ? "GPU" : "sim", p[i].tile);
        ok += !p[i].rc;
        if (!p[i].rc && gpu && (best < 0 || p[i].m.tflops > p[best].m.tflops)) best = i;
    }
    progress(n, n, "");
    printf("tune: %s on %s (%s), %d tiles\n", o->req.kernel, o->req.arch, gpu ? "GPU" : "sim", n);
    int refused = 0, failed = 0;
    for (int i = 0; i < n; i++) refused += p[i].refused, failed += !p[i].refused && p[i].rc;
    printf("  %-40s %-8s %s\n", "tile", "result", gpu ? "ms | TFLOP/s | regs (kernel 0)" : "warp instructions | tensor instructions per CTA");
    for (int i = 0; i < n; i++) {
        if (p[i].refused) printf("  %-40s refused  %s\n", p[i].tile, p[i].why);
        else if (p[i].rc) printf("  %-40s FAIL     %s\n", p[i].tile, p[i].why);
        else if (gpu) printf("  %-40s ok       %.4f | %.1f | %d%s\n", p[i].tile, p[i].m.ms, p[i].m.tflops, p[i].m.k[0].regs,
                             i == best ? "   <- best" : "");
        else printf("  %-40s ok       %.0f | %.2f\n", p[i].tile, score(&p[i], 0),
                    p[i].m.stats.ctas ? (double)p[i].m.stats.warp_insns[CL_TENSOR] / (double)p[i].m.stats.ctas : 0);
    }
    printf("tune: %d passed, %d refused by the plan, %d failed their check%s\n", ok, refused, failed,
           gpu ? "" : "; the sim does not time, so no tile is called best here (run tune on a GPU)");
    if (best >= 0) printf("tune: best %s: %.1f TFLOP/s\n", p[best].tile, p[best].m.tflops);
    int rc = 0;
    if (save && best >= 0) {   /* shapes without spaces, so the file stays one entry a line */
        char path[1024], shape[160];
        size_t j = 0;
        for (const char *c = p[best].m.shape; *c && j + 1 < sizeof shape; c++) shape[j++] = *c == ' ' ? ',' : *c;
        shape[j] = '\0';
        TunedKey k = {o->req.arch, o->req.kernel, family_name(kind->family), o->req.dtype ? o->req.dtype : "bf16",
                      p[best].m.d, o->req.causal != 0, p[best].m.cls, kind->dv ? 0 : o->req.hdim_v};
        if (tuned_store(&k, p[best].tile, p[best].m.tflops, shape, path, sizeof path)) {
            fprintf(stderr, "ptxgen: tune --save: cannot write the tuned-tile file (%s)\n", path);
            rc = 1;
        } else printf("tune: saved %s for class %s to %s: check, bench and the API use it for that class\n",
                      p[best].tile, p[best].m.cls, path);
    }
    if (csv) {
        Buf b = {0};
        buf_puts(&b, "tile,result,reason,ms,tflops,warp_instructions\n");
        for (int i = 0; i < n; i++) {   /* empty fields: not measured (no time on the sim, no counters on a GPU) */
            int ok_point = !p[i].refused && !p[i].rc;
            buf_printf(&b, "\"%s\",%s,\"%s\",", p[i].tile, p[i].refused ? "refused" : p[i].rc ? "failed" : "ok",
                       ok_point ? "" : p[i].why);
            if (ok_point && gpu) buf_printf(&b, "%.5f,%.2f,\n", p[i].m.ms, p[i].m.tflops);
            else if (ok_point) buf_printf(&b, ",,%.0f\n", score(&p[i], 0));
            else buf_puts(&b, ",,\n");
        }
        rc |= write_file(csv, &b);
        buf_free(&b);
    }
    if (json) {
        Buf b = {0};
        buf_printf(&b, "{\"kernel\": \"%s\", \"arch\": \"%s\", \"device\": \"%s\", \"points\": [", o->req.kernel,
                   o->req.arch, gpu ? "gpu" : "sim");
        for (int i = 0; i < n; i++) {
            buf_printf(&b, "%s\n  {\"tile\": ", i ? "," : "");
            json_str(&b, p[i].tile);
            buf_printf(&b, ", \"result\": \"%s\", \"reason\": ", p[i].refused ? "refused" : p[i].rc ? "failed" : "ok");
            json_str(&b, p[i].refused || p[i].rc ? p[i].why : "");
            if (!p[i].refused && !p[i].rc) {
                if (gpu) buf_printf(&b, ", \"ms\": %.5f, \"tflops\": %.2f", p[i].m.ms, p[i].m.tflops);
                else buf_printf(&b, ", \"warp_instructions\": %.0f", score(&p[i], 0));
            }
            buf_puts(&b, "}");
        }
        buf_printf(&b, "\n], \"best\": ");
        if (best >= 0) json_str(&b, p[best].tile);
        else buf_puts(&b, "null");
        buf_puts(&b, "}\n");
        rc |= write_file(json, &b);
        buf_free(&b);
    }
    if (svg_path) {
        char title[200];
        snprintf(title, sizeof title, "ptxgen tune: %s on %s (%s)", o->req.kernel, o->req.arch, gpu ? "GPU" : "sim");
        svg(svg_path, p, n, gpu, title);
    }
    free(p);
    return rc || failed ? 1 : 0;
}
