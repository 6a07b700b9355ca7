/* The JIT result cache (runner/jit_cache.h): SHA-256 against the FIPS 180-4
 * vectors, keys, a round trip, corrupt and truncated entries detected and
 * removed, PTXGEN_CACHE=0, and concurrent writers and readers (forked
 * processes on one key) never exposing half an entry. usage: test_jit_cache [--seed N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "jit_cache.h"

static void hex(const uint8_t *d, char *out) {
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void vectors(void) {
    static const struct { const char *in; int repeat; const char *want; } v[] = {
        {"", 1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"a", 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t n = strlen(v[i].in) * (size_t)v[i].repeat;
        char *buf = malloc(n + 1), got[65];
        for (int r = 0; r < v[i].repeat; r++) memcpy(buf + r * strlen(v[i].in), v[i].in, strlen(v[i].in));
        uint8_t d[32];
        sha256(buf, n, d);
        hex(d, got);
        check(!strcmp(got, v[i].want), "sha256 FIPS 180-4 vector", "%zu bytes: got %s", n, got);
        free(buf);
    }
}

int main(int argc, char **argv) {
    unsigned long long seed = (unsigned long long)time(NULL) ^ (unsigned long long)getpid();
    if (argc == 3 && !strcmp(argv[1], "--seed")) seed = strtoull(argv[2], NULL, 0);
    printf("jit cache, seed %llu\n", seed);
    srand((unsigned)seed);
    vectors();
    char dir[] = "/tmp/ptxgen-cache-test-XXXXXX", why[256] = "";
    if (!mkdtemp(dir)) { printf("FAIL mkdtemp\n"); return 1; }
    setenv("PTXGEN_CACHE_DIR", dir, 1);
    unsetenv("PTXGEN_CACHE");
    JitCache c;
    jit_cache_open(&c, why, sizeof why);
    check(c.on && !strcmp(c.dir, dir), "the cache opens at PTXGEN_CACHE_DIR", "%s", why);
    const char *a[] = {"ab", "c"}, *b[] = {"a", "bc"};
    uint8_t ka[32], kb[32];
    jit_cache_key(a, 2, ka);
    jit_cache_key(b, 2, kb);
    check(memcmp(ka, kb, 32) != 0, "keys length-prefix their parts", "(\"ab\",\"c\") == (\"a\",\"bc\")");

    size_t n = 100000 + (size_t)(rand() % 1000);
    uint8_t *payload = malloc(n);
    for (size_t i = 0; i < n; i++) payload[i] = (uint8_t)rand();
    void *got;
    size_t len;
    int corrupt;
    check(!jit_cache_get(&c, ka, &got, &len, &corrupt) && !corrupt, "an absent entry is a miss", "corrupt %d", corrupt);
    check(!jit_cache_put(&c, ka, payload, n), "an entry is stored", "in %s", dir);
    int hit = jit_cache_get(&c, ka, &got, &len, &corrupt);
    check(hit && len == n && !memcmp(got, payload, n), "the stored bytes come back", "hit %d len %zu", hit, len);
    free(hit ? got : NULL);

    char path[1200], hx[65];
    hex(ka, hx);
    snprintf(path, sizeof path, "%s/%s.cubin", dir, hx);
    FILE *f = fopen(path, "r+b");   /* one payload byte flipped */
    if (f) { fseek(f, 48 + (long)(n / 2), SEEK_SET); fputc(payload[n / 2] ^ 0x40, f); fclose(f); }
    hit = jit_cache_get(&c, ka, &got, &len, &corrupt);
    check(!hit && corrupt && access(path, F_OK) != 0, "a corrupt entry is a miss, reported and removed", "hit %d", hit);
    jit_cache_put(&c, ka, payload, n);
    if (truncate(path, 48 + (long)n - 7)) perror("truncate");
    hit = jit_cache_get(&c, ka, &got, &len, &corrupt);
    check(!hit && corrupt && access(path, F_OK) != 0, "a truncated entry is a miss, reported and removed", "hit %d", hit);

    /* 6 writers and 6 readers on one key at once: no reader may see a partial or mixed entry */
    int bad = 0;
    pid_t kids[12];
    for (int k = 0; k < 12; k++) {
        if ((kids[k] = fork()) == 0) {
            int wrong = 0;
            for (int it = 0; it < 40; it++) {
                if (k < 6) { if (jit_cache_put(&c, kb, payload, n)) wrong++; }
                else if (jit_cache_get(&c, kb, &got, &len, &corrupt)) wrong += len != n || memcmp(got, payload, n), free(got);
                else wrong += corrupt;
            }
            _exit(wrong ? 1 : 0);
        }
    }
    for (int k = 0; k < 12; k++) {
        int st;
        waitpid(kids[k], &st, 0);
        bad += !WIFEXITED(st) || WEXITSTATUS(st);
    }
    check(!bad, "concurrent writers and readers on one key never expose a partial entry", "%d processes saw one", bad);
    hit = jit_cache_get(&c, kb, &got, &len, &corrupt);
    check(hit && len == n && !memcmp(got, payload, n), "after them the entry is whole", "hit %d", hit);
    free(hit ? got : NULL);
    int strays = 0;
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "ls -A %s | grep -c '^\\.tmp-' || true", dir);
    FILE *p = popen(cmd, "r");
    if (p) { if (fscanf(p, "%d", &strays) != 1) strays = -1; pclose(p); }
    check(strays == 0, "no temporary files are left behind", "%d", strays);

    setenv("PTXGEN_CACHE", "0", 1);
    jit_cache_open(&c, why, sizeof why);
    check(!c.on && strstr(why, "PTXGEN_CACHE=0"), "PTXGEN_CACHE=0 turns the cache off", "%s", why);
    check(!jit_cache_get(&c, kb, &got, &len, &corrupt), "an off cache never hits", "it hit");
    free(payload);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) perror("rm");
    return check_summary();
}
