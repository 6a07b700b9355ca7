/* The tiny harness of the C unit tests: one "PASS name" / "FAIL name: why"
 * line per check, and check_summary() printing "N passed, N failed". */
#ifndef PTXGEN_TEST_CHECK_H
#define PTXGEN_TEST_CHECK_H
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int n_pass, n_fail;

static void check(int ok, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4), unused));
static void check(int ok, const char *name, const char *fmt, ...) {
    if (ok) {
        printf("PASS %s\n", name);
        n_pass++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL %s: ", name);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    n_fail++;
}

/* malloc for a test's own buffers: a test program may stop when the host
 * runs out (the library never does). */
static void *test_alloc(size_t n) __attribute__((unused));
static void *test_alloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        printf("FAIL out of host memory for %zu bytes\n", n);
        exit(1);
    }
    return p;
}

/* returns the process exit code */
static int check_summary(void) __attribute__((unused));
static int check_summary(void) {
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail != 0;
}
#endif
