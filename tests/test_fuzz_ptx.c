/* The sim on PTX it has not seen, broken on purpose: each file of tests/sim (valid PTX with a planted bug or none)
 * mutated many ways (a line deleted, doubled or swapped with another, a token replaced by another of the file or
 * by an edge number, a character changed, the text cut short) and run as test_sim runs it. Whatever the mutant
 * does, the sim must answer: run it, or refuse it with an error; never crash, abort or hang. Each mutant runs in a
 * child process under a time limit, the step limit lowered so that a loop the mutation made endless is reported
 * fast; a child that dies by a signal or overruns fails the check, and its PTX is left in the named file. A mutant
 * that changes the entry's parameter list is skipped (counted): a launch passes one pointer per parameter and the
 * callee reads each parameter's size from it, as cuLaunchKernel does, so such a mutant tests the caller.
 *
 * Under ASan and UBSan (what make test cannot afford): this file and every .c file of core, emit, gen, templates,
 * runner and runner/sim built with cc -std=c11 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined
 * -D_GNU_SOURCE and the Makefile's -I list plus -Itests, linked with -ldl -lm -lpthread, run with
 * ASAN_OPTIONS=detect_leaks=0.
 *
 *   test_fuzz_ptx [--seeds N] [--keep DIR] [--dir SRC]
 *       N mutants a file (default 96); DIR for the PTX of a failing one (default /tmp); SRC the files to mutate
 *       (default tests/sim; a file without a "// block:" line runs 64 threads) */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"
#include "hostdata.h"
#include "sim_files.h"

enum { LIMIT_S = 20 };

static size_t pick(Rng *r, size_t n) { return n ? (size_t)(rng_u64(r) % n) : 0; }

/* the start of line k of text (k from 0), or of the text's end */
static const char *line_at(const char *text, size_t k) {
    const char *p = text;
    while (k-- && (p = strchr(p, '\n'))) p++;
    return p ? p : text + strlen(text);
}
static size_t lines_of(const char *text) {
    size_t n = 1;
    for (const char *p = text; (p = strchr(p, '\n')); p++) n++;
    return n;
}
static size_t line_len(const char *l) { const char *e = strchr(l, '\n'); return e ? (size_t)(e - l) + 1 : strlen(l); }

/* A token (a run of letters, digits, '%', '_', '.', '$', ':') at or after text[at]: its start and length */
static int is_tok(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("%_.$:", c); }
static size_t token_at(const char *text, size_t at, size_t *len) {
    size_t n = strlen(text);
    while (at < n && !is_tok(text[at])) at++;
    while (at > 0 && is_tok(text[at - 1])) at--;
    size_t e = at;
    while (e < n && is_tok(text[e])) e++;
    *len = e - at;
    return at;
}

/* out = text with [at, at + cut) replaced by ins (ilen bytes) */
static char *splice(const char *text, size_t at, size_t cut, const char *ins, size_t ilen) {
    size_t n = strlen(text);
    char *o = test_alloc(n - cut + ilen + 1);
    memcpy(o, text, at);
    memcpy(o + at, ins, ilen);
    memcpy(o + at + ilen, text + at + cut, n - at - cut + 1);
    return o;
}

/* One mutant of text, what was done in why */
static char *mutate(const char *text, Rng *r, char *why, size_t cap) {
    static const char *const edge[] = {"0", "-1", "1", "4294967295", "2147483648", "-2147483648", "65536", "1024",
                                       "1025", "18446744073709551615", "0x7fffffff", "0f7FC00000", "%r0", "%rd1",
                                       "[%rd1]", "%tid.x", "7", "255", "256", "99999999999999999999", "-0", "{", "}"};
    size_t n = strlen(text), lines = lines_of(text), len;
    int kind = (int)pick(r, 8);
    switch (kind) {
    case 0: {   /* delete a line */
        size_t k = pick(r, lines);
        const char *l = line_at(text, k);
        snprintf(why, cap, "line %zu deleted", k + 1);
        return splice(text, (size_t)(l - text), line_len(l), "", 0);
    }
    case 1: {   /* double a line */
        size_t k = pick(r, lines);
        const char *l = line_at(text, k);
        snprintf(why, cap, "line %zu doubled", k + 1);
        return splice(text, (size_t)(l - text), 0, l, line_len(l));
    }
    case 2: {   /* move a line elsewhere */
        size_t k = pick(r, lines), j = pick(r, lines);
        const char *l = line_at(text, k);
        char *a = splice(text, (size_t)(l - text), line_len(l), "", 0);
        const char *at = line_at(a, j);
        char *b = splice(a, (size_t)(at - a), 0, l, line_len(l));
        free(a);
        snprintf(why, cap, "line %zu moved before line %zu", k + 1, j + 1);
        return b;
    }
    case 3: case 4: {   /* a token replaced by another token of the file */
        size_t at = token_at(text, pick(r, n), &len), blen;
        size_t from = token_at(text, pick(r, n), &blen);
        snprintf(why, cap, "'%.*s' at byte %zu replaced by '%.*s'", (int)len, text + at, at, (int)blen, text + from);
        char *tok = test_alloc(blen + 1);
        memcpy(tok, text + from, blen);
        char *o = splice(text, at, len, tok, blen);
        free(tok);
        return o;
    }
    case 5: {   /* a token replaced by an edge */
        size_t at = token_at(text, pick(r, n), &len);
        const char *e = edge[pick(r, sizeof edge / sizeof edge[0])];
        snprintf(why, cap, "'%.*s' at byte %zu replaced by '%s'", (int)len, text + at, at, e);
        return splice(text, at, len, e, strlen(e));
    }
    case 6: {   /* one character changed */
        size_t at = pick(r, n);
        char c = (char)(32 + pick(r, 95));
        snprintf(why, cap, "byte %zu changed to '%c'", at, c);
        return splice(text, at, 1, &c, 1);
    }
    default: {   /* cut short */
        size_t at = pick(r, n);
        snprintf(why, cap, "cut at byte %zu of %zu", at, n);
        return splice(text, at, n - at, "", 0);
    }
    }
}

/* The entry's parameter list: the text from ".entry" to the ")" that closes it (its length in *len), or NULL */
static const char *params_of(const char *text, size_t *len) {
    const char *e = strstr(text, ".entry"), *c = e ? strchr(e, ')') : NULL;
    *len = c ? (size_t)(c - e) : 0;
    return c ? e : NULL;
}
static int same_params(const char *a, const char *b) {
    size_t la, lb;
    const char *pa = params_of(a, &la), *pb = params_of(b, &lb);
    return pa && pb && la == lb && !memcmp(pa, pb, la);
}

/* Runs ptx as test_sim runs the file it came from, in a child; 0: it ran or was refused, else what happened */
static int run_child(const char *ptx, const Header *h, char *what, size_t cap) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return snprintf(what, cap, "fork failed"), 1;
    if (pid == 0) {
        alarm(LIMIT_S);
        setenv("PTXGEN_SIM_MAX_STEPS", "200000", 1);
        char err[1024];
        Device *dev = NULL;
        if (dev_open(&dev, "sim", 0, err, sizeof err)) _exit(3);
        static uint8_t in[BYTES], out[BYTES];
        for (int i = 0; i < BYTES; i++) in[i] = (uint8_t)(i * 37 + 11);
        run(dev, ptx, h, in, out, err, sizeof err);   /* an error is an answer */
        dev_close(dev);
        _exit(0);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) < 0) return snprintf(what, cap, "waitpid failed"), 1;
    if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        return snprintf(what, cap, sig == SIGALRM ? "no answer within %d s" : "died by signal %d (%s)", sig == SIGALRM ? LIMIT_S : sig,
                        strsignal(sig)), 1;
    }
    if (WEXITSTATUS(st)) return snprintf(what, cap, "exited %d", WEXITSTATUS(st)), 1;
    return 0;
}

int main(int argc, char **argv) {
    int per_file = 96;
    const char *keep = "/tmp", *src = "tests/sim";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seeds") && i + 1 < argc) per_file = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--keep") && i + 1 < argc) keep = argv[++i];
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) src = argv[++i];
        else {
            fprintf(stderr, "test_fuzz_ptx: unknown argument %s (see the file's head)\n", argv[i]);
            return 2;
        }
    }
    DIR *d = opendir(src);
    if (!d) { check(0, "fuzz_ptx: the files to mutate", "cannot open %s (run from the repository root)", src); return check_summary(); }
    struct dirent *e;
    int files = 0, mutants = 0, bad = 0, skipped = 0;
    char names[128][256];
    while ((e = readdir(d)) && files < 128) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".ptx")) snprintf(names[files++], sizeof names[0], "%s", e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)files, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    for (int fi = 0; fi < files; fi++) {
        char path[512];
        snprintf(path, sizeof path, "%.300s/%.200s", src, names[fi]);
        char *text = slurp(path);
        if (!text) { check(0, "fuzz_ptx: read a file", "cannot read %s", path); continue; }
        Header h;
        header(text, &h);
        if (!h.block) h.block = 64;
        Rng r;
        rng_seed(&r, 0x5EED0000ull + (uint64_t)fi * 7919u);
        int file_bad = 0;
        for (int k = 0; k < per_file; k++) {
            char why[512], what[256];
            char *m = mutate(text, &r, why, sizeof why);
            if (!same_params(text, m)) { skipped++, free(m); continue; }
            mutants++;
            if (run_child(m, &h, what, sizeof what)) {
                char out[1024];
                snprintf(out, sizeof out, "%.400s/fuzz_ptx_%.200s_%d.ptx", keep, names[fi], k);
                FILE *f = fopen(out, "w");
                if (f) fputs(m, f), fclose(f);
                char name[600];
                snprintf(name, sizeof name, "fuzz_ptx: %.200s mutant %d (%.300s)", names[fi], k, why);
                check(0, name, "%s; its PTX: %s", what, out);
                bad++, file_bad++;
            }
            free(m);
        }
        if (!file_bad) {
            char name[300];
            snprintf(name, sizeof name, "fuzz_ptx: every mutant of %.200s answered", names[fi]);
            check(1, name, " ");
        }
        free(text);
    }
    printf("fuzz_ptx: %d mutants of %d files run, %d without an answer\n", mutants, files, bad);
    if (skipped) printf("SKIP fuzz_ptx: %d mutants that change the entry's parameters (the launch takes their sizes on trust)\n", skipped);
    check(files >= (strcmp(src, "tests/sim") ? 1 : 40), "fuzz_ptx: the files to mutate are there", "%d files in %s", files, src);
    return check_summary();
}
