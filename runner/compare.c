/* ptxgen compare: variants of one kernel (tiles, families, dtypes, or a PTX
 * file) measured on the same problem and device, side by side: the check,
 * registers and spills (the driver's on a GPU, ptxas's where the device is
 * the sim), shared memory and CTAs per SM from the plan, the sim's
 * instruction mix, MMAs per CTA, bank conflicts and global sectors, or the
 * GPU's median time and TFLOP/s. A text table, and an SVG of the numbers
 * relative to the first variant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "buf.h"
#include "check.h"
#include "isa.h"

enum { MAX_VARIANTS = 8 };

typedef struct {
    char label[160];
    char tile[96], mma[24], dtype[8], ptx[512];
    Measure m;
    int rc;
    int ptxas_regs[6], ptxas_spill[6];   /* -1: unknown */
} Variant;

/* "tile=bm=64,bn=32;mma=tcgen05;ptx=FILE;dtype=fp16": the first '=' of each part splits key and value */
static int parse_variant(const char *spec, Variant *v) {
    char buf[800];
    snprintf(v->label, sizeof v->label, "%s", *spec ? spec : "default");
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *part = strtok(buf, ";"); part; part = strtok(NULL, ";")) {
        char *eq = strchr(part, '=');
        if (!eq) return fprintf(stderr, "ptxgen: --variant '%s': '%s' is not key=value (tile, mma, dtype, ptx)\n", spec, part), 2;
        *eq = '\0';
        const char *val = eq + 1;
        const struct { const char *key; char *dst; size_t cap; } keys[] = {
            {"tile", v->tile, sizeof v->tile}, {"mma", v->mma, sizeof v->mma},
            {"dtype", v->dtype, sizeof v->dtype}, {"ptx", v->ptx, sizeof v->ptx}};
        int k = 0;
        while (k < 4 && strcmp(part, keys[k].key)) k++;
        if (k == 4) return fprintf(stderr, "ptxgen: --variant '%s': unknown key '%s' (tile, mma, dtype, ptx)\n", spec, part), 2;
        if (strlen(val) >= keys[k].cap) return fprintf(stderr, "ptxgen: --variant '%s': %s is too long\n", spec, part), 2;
        snprintf(keys[k].dst, keys[k].cap, "%s", val);
    }
    return 0;
}

/* ptxas -v on the variant's PTX: registers and spill bytes per entry, in the set's kernel order */
static void ptxas_resources(const char *ptx, const char *arch, Variant *v) {
    char path[1024], cmd[2200], line[512];
    for (int i = 0; i < 6; i++) v->ptxas_regs[i] = v->ptxas_spill[i] = -1;
    if (system("command -v ptxas >/dev/null 2>&1") != 0 || dev_dump_ptx("compare", ptx, path, sizeof path)) return;
    snprintf(cmd, sizeof cmd, "ptxas -arch=%s -v %s -o /dev/null 2>&1", arch, path);
    FILE *p = popen(cmd, "r");
    int k = -1;
    while (p && fgets(line, sizeof line, p)) {
        char *e = strstr(line, "Compiling entry function '");
        if (e) {
            k = -1;
            for (int i = 0; i < v->m.nk; i++)
                if (!strncmp(e + 26, v->m.k[i].entry, strlen(v->m.k[i].entry)) && e[26 + strlen(v->m.k[i].entry)] == '\'') k = i;
        }
        int n;
        char *u = strstr(line, "Used ");
        if (k >= 0 && u && sscanf(u, "Used %d registers", &n) == 1) v->ptxas_regs[k] = n;
        char *sp = strstr(line, "bytes spill stores");
        if (k >= 0 && sp && sscanf(line, " %*d bytes stack frame, %d bytes spill stores", &n) == 1) v->ptxas_spill[k] = n;
    }
    if (p) pclose(p);
    remove(path);
}

static uint64_t total_insns(const DevStats *s) {
    uint64_t t = 0;
    for (int c = 0; c < DEV_STAT_CLASSES; c++) t += s->warp_insns[c];
    return t;
}

/* one table row: a name and each variant's value (NAN: not measured) */
typedef struct { char name[64]; double v[MAX_VARIANTS]; int chart; } Row;

static void add_row(Row *rows, int *n, const char *name, int chart) {
    rows[*n] = (Row){.chart = chart};
    snprintf(rows[*n].name, sizeof rows[*n].name, "%s", name);
    for (int i = 0; i < MAX_VARIANTS; i++) rows[*n].v[i] = -1;
    (*n)++;
}

static void write_svg(const char *path, const Variant *v, int nv, const Row *rows, int nrows) {
    static const char *const colors[MAX_VARIANTS] = {"#4878d0", "#ee854a", "#6acc64", "#d65f5f", "#956cb4", "#8c613c",
                                                     "#dc7ec0", "#797979"};
    int charted = 0;
    for (int r = 0; r < nrows; r++) charted += rows[r].chart && rows[r].v[0] > 0;
    int gw = 40 + 22 * nv, w = 120 + gw * (charted ? charted : 1), h = 360;
    Buf b = {0};
    buf_printf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", w, h + 40 + 16 * nv);
    buf_printf(&b, "<text x=\"10\" y=\"18\" font-size=\"13\">each metric relative to %s (= 1.0)</text>\n", v[0].label);
    double top = 2.0;
    for (int r = 0; r < nrows; r++)
        for (int i = 0; rows[r].chart && rows[r].v[0] > 0 && i < nv; i++)
            if (rows[r].v[i] >= 0 && rows[r].v[i] / rows[r].v[0] > top) top = rows[r].v[i] / rows[r].v[0];
    int y0 = h - 60, x = 60;
    buf_printf(&b, "<line x1=\"50\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", y0, w - 10, y0);
    double one = y0 - (y0 - 40) / top;
    buf_printf(&b, "<line x1=\"50\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#999\" stroke-dasharray=\"4\"/>"
               "<text x=\"8\" y=\"%.1f\">1.0</text>\n", one, w - 10, one, one + 4);
    for (int r = 0; r < nrows; r++) {
        if (!rows[r].chart || rows[r].v[0] <= 0) continue;
        for (int i = 0; i < nv; i++) {
            if (rows[r].v[i] < 0) continue;
            double rel = rows[r].v[i] / rows[r].v[0], bh = (y0 - 40) * rel / top;
            buf_printf(&b, "<rect x=\"%d\" y=\"%.1f\" width=\"18\" height=\"%.1f\" fill=\"%s\"><title>%s: %g</title></rect>"
                       "<text x=\"%d\" y=\"%.1f\" font-size=\"9\">%.2f</text>\n", x + 22 * i, y0 - bh, bh, colors[i],
                       v[i].label, rows[r].v[i], x + 22 * i, y0 - bh - 2, rel);
        }
        buf_printf(&b, "<text x=\"%d\" y=\"%d\" transform=\"rotate(30 %d %d)\">%s</text>\n", x, y0 + 14, x, y0 + 14,
                   rows[r].name);
        x += gw;
    }
    for (int i = 0; i < nv; i++)
        buf_printf(&b, "<rect x=\"10\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"28\" y=\"%d\">%s</text>\n",
                   h + 10 + 16 * i, colors[i], h + 20 + 16 * i, v[i].label);
    buf_puts(&b, "</svg>\n");
    FILE *f = fopen(path, "w");
    if (!f || fputs(b.s, f) < 0 || fclose(f)) fprintf(stderr, "ptxgen: cannot write %s\n", path);
    buf_free(&b);
}

int run_compare(const RunOpts *o, const char *const *specs, int nv, const char *svg) {
    if (nv < 2 || nv > MAX_VARIANTS) {
        fprintf(stderr, "ptxgen: compare needs 2 to %d --variant options, got %d\n", MAX_VARIANTS, nv);
        return 2;
    }
    Variant *v = calloc((size_t)nv, sizeof *v);
    if (!v) return 1;
    int rc = 0;
    for (int i = 0; i < nv && !rc; i++) rc = parse_variant(specs[i], &v[i]);
    for (int i = 0; i < nv && !rc; i++) {
        RunOpts r = *o;
        if (v[i].tile[0]) r.req.tile = v[i].tile;
        if (v[i].mma[0]) r.req.family = v[i].mma;
        if (v[i].dtype[0]) r.req.dtype = v[i].dtype;
        if (v[i].ptx[0]) r.ptx_file = v[i].ptx;
        printf("== variant %d: %s\n", i + 1, v[i].label);
        fflush(stdout);
        v[i].rc = run_measure(&r, &v[i].m);
        if (v[i].rc == 2) { rc = 2; break; }   /* a bad variant: its message is out */
        ptxgen_set *s = NULL;
        char err[512], *text = v[i].ptx[0] ? buf_read_file(v[i].ptx, NULL) : NULL;
        if (!text && !ptxgen_build(&r.req, &s, err, sizeof err)) text = strdup(ptxgen_ptx(s));
        if (text && r.req.arch) ptxas_resources(text, r.req.arch, &v[i]);
        else for (int k = 0; k < 6; k++) v[i].ptxas_regs[k] = v[i].ptxas_spill[k] = -1;
        free(text);
        ptxgen_free(s);
    }
    if (rc) { free(v); return rc; }
    Row rows[64];
    int n = 0, nk = 0;
    for (int i = 0; i < nv; i++) nk = v[i].m.nk > nk ? v[i].m.nk : nk;
    add_row(rows, &n, "check (1 pass)", 0);
    for (int i = 0; i < nv; i++) rows[0].v[i] = v[i].rc == 0;
    for (int k = 0; k < nk; k++) {
        char name[64];
        int base = n;
        snprintf(name, sizeof name, "k%d registers", k), add_row(rows, &n, name, 1);
        snprintf(name, sizeof name, "k%d spill bytes", k), add_row(rows, &n, name, 0);
        snprintf(name, sizeof name, "k%d smem bytes", k), add_row(rows, &n, name, 1);
        snprintf(name, sizeof name, "k%d CTAs/SM", k), add_row(rows, &n, name, 0);
        for (int i = 0; i < nv; i++) {
            if (k >= v[i].m.nk) continue;
            int regs = v[i].m.k[k].regs ? v[i].m.k[k].regs : v[i].ptxas_regs[k];
            rows[base].v[i] = regs, rows[base + 1].v[i] = v[i].m.k[k].regs ? v[i].m.k[k].local_bytes : v[i].ptxas_spill[k];
            rows[base + 2].v[i] = v[i].m.k[k].plan.smem_bytes, rows[base + 3].v[i] = v[i].m.k[k].plan.ctas_per_sm;
        }
    }
    int sim = 0, gpu = 0;
    for (int i = 0; i < nv; i++) sim |= v[i].m.have_stats, gpu |= v[i].m.ms >= 0;
    if (sim) {
        int base = n;
        add_row(rows, &n, "warp instructions", 1);
        add_row(rows, &n, "tensor (MMA) per CTA", 1);
        add_row(rows, &n, "TMEM instructions", 0);
        add_row(rows, &n, "TMA instructions", 0);
        add_row(rows, &n, "bank-conflict wavefronts", 1);
        add_row(rows, &n, "global sectors", 1);
        for (int i = 0; i < nv; i++) {
            const DevStats *s = &v[i].m.stats;
            if (!v[i].m.have_stats) continue;
            rows[base].v[i] = (double)total_insns(s);
            rows[base + 1].v[i] = s->ctas ? (double)s->warp_insns[CL_TENSOR] / (double)s->ctas : 0;
            rows[base + 2].v[i] = (double)s->warp_insns[CL_TMEM], rows[base + 3].v[i] = (double)s->warp_insns[CL_TMA];
            rows[base + 4].v[i] = (double)(s->smem_wavefronts - s->smem_ideal), rows[base + 5].v[i] = (double)s->gmem_sectors;
        }
    }
    if (gpu) {
        int base = n;
        add_row(rows, &n, "median ms", 1);
        add_row(rows, &n, "TFLOP/s", 1);
        for (int i = 0; i < nv; i++)
            if (v[i].m.ms >= 0) rows[base].v[i] = v[i].m.ms, rows[base + 1].v[i] = v[i].m.tflops;
    }
    printf("\ncompare: %s on %s%s\n%-26s", o->req.kernel, o->device_kind ? o->device_kind : "cuda",
           sim ? " (counters of one run of the set)" : gpu ? " (median of the timed runs)" : "", "");
    for (int i = 0; i < nv; i++) printf(" | %-18.18s", v[i].label);
    printf("\n");
    for (int r = 0; r < n; r++) {
        printf("%-26s", rows[r].name);
        for (int i = 0; i < nv; i++) {
            if (rows[r].v[i] < 0) printf(" | %-18s", "-");
            else if (r == 0) printf(" | %-18s", rows[r].v[i] > 0 ? "PASS" : "FAIL");
            else if (rows[r].v[i] != (double)(long long)rows[r].v[i]) printf(" | %-18.4g", rows[r].v[i]);
            else printf(" | %-18lld", (long long)rows[r].v[i]);
        }
        printf("\n");
    }
    printf("(registers and spills: the driver's on a GPU, ptxas's on the sim; '-': not measured)\n");
    if (svg) write_svg(svg, v, nv, rows, n);
    for (int i = 0; i < nv; i++) rc |= v[i].rc;
    free(v);
    return rc ? 1 : 0;
}
