/* ptxgen sim FILE.ptx --launch RECORD.json [--seed N] [--out FILE] [--stats] [--strict]
 * Runs foreign PTX (NVIDIA's oracle kernels) on the sim from a launch record
 * and judges the GEMM it computes against the float64 reference
 * (docs/launch_record.md). Exit 0 pass, 1 wrong result or sim error, 2 bad
 * input (arguments, unreadable or malformed PTX or record, a record that does
 * not fit the PTX). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "buf.h"
#include "cmd.h"
#include "record_run.h"

typedef struct {
    const char *ptx, *record, *out;
    uint64_t seed;
    int have_seed, stats, strict;
} SimArgs;

static int usage(const char *fmt, const char *a)
{
    fputs("ptxgen sim: ", stderr);
    fprintf(stderr, fmt, a);
    fputs("\nusage: ptxgen sim FILE.ptx --launch RECORD.json [--seed N] [--out FILE] [--stats] [--strict]\n", stderr);
    return 2;
}

static int parse(int argc, char **argv, SimArgs *a)
{
    for (int i = 0; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--stats")) a->stats = 1;
        else if (!strcmp(f, "--strict")) a->strict = 1;
        else if (!strcmp(f, "--launch") || !strcmp(f, "--seed") || !strcmp(f, "--out")) {
            if (i + 1 >= argc) return usage("%s needs a value", f);
            const char *v = argv[++i];
            if (!strcmp(f, "--launch")) a->record = v;
            else if (!strcmp(f, "--out")) a->out = v;
            else {
                char *end;
                errno = 0;
                a->seed = strtoull(v, &end, 0), a->have_seed = 1;
                if (!*v || *end || *v == '-' || errno) return usage("--seed needs a non-negative integer, got '%s'", v);
            }
        } else if (f[0] == '-') return usage("unknown argument '%s'", f);
        else if (a->ptx) return usage("one PTX file only; '%s' is a second", f);
        else a->ptx = f;
    }
    if (!a->ptx) return usage("%s", "no PTX file given");
    if (!a->record) return usage("%s", "--launch RECORD.json is required");
    if (!a->have_seed) a->seed = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;   /* fresh inputs each run, printed */
    return 0;
}

static void print_launch(const SimArgs *a, const LaunchRecord *r)
{
    size_t n = strlen(r->entry);
    printf("sim: %s, entry %.*s%s\n", a->ptx, 72, r->entry, n > 72 ? "..." : "");
    printf("launch: grid %ux%ux%u, block %ux%ux%u, cluster %ux%ux%u, %u B dynamic shared memory, %zu B of params, "
           "%d tensor map%s\n", r->grid[0], r->grid[1], r->grid[2], r->block[0], r->block[1], r->block[2], r->cluster[0],
           r->cluster[1], r->cluster[2], r->dyn_smem, r->param_bytes, r->ntags, r->ntags == 1 ? "" : "s");
    const RecGemm *g = &r->gemm;
    char in[256];
    rr_describe_inputs(r, in, sizeof in);
    printf("problem: %s = %g * A * B^T + %g * C, M=%d N=%d K=%d (A %s, B %s)\n", g->d.in_place ? "C" : "D", g->alpha, g->beta,
           g->M, g->N, g->K, g->a.col_major ? "M-major" : "K-major", g->b.col_major ? "N-major" : "K-major");
    printf("inputs: seed %llu (rerun with --seed %llu): %s\n", (unsigned long long)a->seed, (unsigned long long)a->seed, in);
}

static void print_result(const LaunchRecord *r, const RecResult *res)
{
    const RecMatrix *d = &r->gemm.d;
    printf("result: %s (%s %dx%d %s) vs float64: max abs err %.3g, rel L2 err %.3g, %ld of %ld wrong, %ld unwritten",
           d->in_place ? "C in place" : "D", d->dtype == 7 ? "f32" : "f16", d->rows, d->cols, d->col_major ? "column-major" : "row-major",
           res->max_abs, res->rel_l2, res->wrong, res->total, res->unwritten);
    if (res->first_bad >= 0)
        printf("; first at [%ld, %ld]: got %.9g, want %.9g", res->first_bad / d->cols, res->first_bad % d->cols, res->got, res->want);
    printf("\nsim: %s (%s)\n", res->pass ? "PASS" : "FAIL", res->exact ? "exact: integer inputs" : "tolerance 1e-3");
}

static int write_out(const char *path, const RecResult *res)
{
    FILE *f = fopen(path, "wb");
    int bad = !f || fwrite(res->out, 1, res->out_bytes, f) != res->out_bytes;
    if (f) bad |= fclose(f) != 0;
    if (bad) fprintf(stderr, "ptxgen sim: cannot write --out %s: %s\n", path, strerror(errno));
    return bad;
}

/* Loads both files; 0, or 2 after a message. */
static int load(const SimArgs *a, SimModule **m, LaunchRecord *r)
{
    char err[4096];
    size_t len;
    char *ptx = buf_read_file(a->ptx, &len);
    if (!ptx) { fprintf(stderr, "ptxgen sim: cannot read %s: %s\n", a->ptx, strerror(errno)); return 2; }
    int rc = strlen(ptx) != len ? (fprintf(stderr, "ptxgen sim: %s holds a NUL byte\n", a->ptx), 2)
             : sim_parse(ptx, m, err, sizeof err) ? (fprintf(stderr, "ptxgen sim: %s: %s\n", a->ptx, err), 2) : 0;
    free(ptx);
    if (rc) return rc;
    if (launch_record_load(a->record, r, err, sizeof err)) {
        fprintf(stderr, "ptxgen sim: %s\n", err);
        sim_module_free(*m);
        return 2;
    }
    return 0;
}

int cmd_sim(int argc, char **argv)
{
    SimArgs a = {0};
    int rc = parse(argc, argv, &a);
    if (rc) return rc;
    SimModule *m;
    LaunchRecord r;
    if ((rc = load(&a, &m, &r))) return rc;
    print_launch(&a, &r);
    fflush(stdout);
    Sim sim;
    sim_init(&sim);
    if (a.strict) sim.strict = 1;
    char err[8192];
    RecResult res;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = record_run(&sim, m, &r, a.seed, &res, err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc) fprintf(stderr, "ptxgen sim: %s%s\n", rc == 1 ? "sim error: " : "", err);
    else print_result(&r, &res);
    printf("time: %.1f s on the sim\n", (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    printf("sim notes: %d%s\n", sim.nnotes, sim.nnotes ? (a.strict ? " (errors under --strict)" : " (not failures; --strict makes them errors)") : "");
    if (sim.nnotes) fputs(sim.notes, stdout);
    if (a.stats) sim_stats_print(&sim.stats, r.entry, stdout);
    if (!rc && a.out && write_out(a.out, &res)) rc = 1;
    if (!rc && !res.pass) rc = 1;
    rec_result_free(&res);
    sim_fini(&sim);
    launch_record_free(&r);
    sim_module_free(m);
    return rc;
}
