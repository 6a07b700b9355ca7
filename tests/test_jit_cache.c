/* The JIT result cache (runner/jit_cache.h): the hash's properties (every
 * prefix length apart, avalanche, seed), keys, a round trip, corrupt and truncated entries detected and
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
    for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static int bits_differ(const uint8_t *a, const uint8_t *b) {
    int n = 0;
    for (int i = 0; i < 16; i++) n += __builtin_popcount((unsigned)(a[i] ^ b[i]));
    return n;
}

/* What a cache key and checksum need of hash128: every input length and every single-bit change gives
 * another hash, about half the output bits flip for one input bit, and the seed matters. */
static void hash_props(void) {
    uint8_t buf[200], h[16], g[16];
    for (int i = 0; i < 200; i++) buf[i] = (uint8_t)rand();
    int same = 0, total = 0, worst = 128, flips = 0;
    for (int len = 0; len <= 40; len++) {
        hash128(buf, (size_t)len, 0, h);
        for (int l2 = 0; l2 < len; l2++) hash128(buf, (size_t)l2, 0, g), same += !memcmp(h, g, 16);
    }
    check(!same, "hash128: prefixes of every length 0-40 hash apart", "%d collisions", same);
    hash128(buf, 200, 0, h);
    for (int bit = 0; bit < 200 * 8; bit++) {
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        hash128(buf, 200, 0, g);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        int d = bits_differ(h, g);
        total += d, flips++, worst = d < worst ? d : worst;
    }
    check(total > flips * 56 && total < flips * 72 && worst >= 32, "hash128: one input bit flips about half the output",
          "mean %.1f of 128, fewest %d", (double)total / flips, worst);
    hash128(buf, 200, 1, g);
    check(bits_differ(h, g) > 40, "hash128: the seed changes the hash", "%d bits", bits_differ(h, g));
}

int main(int argc, char **argv) {
    unsigned long long seed = (unsigned long long)time(NULL) ^ (unsigned long long)getpid();
    if (argc == 3 && !strcmp(argv[1], "--seed")) seed = strtoull(argv[2], NULL, 0);
    printf("jit cache, seed %llu\n", seed);
    srand((unsigned)seed);
    hash_props();
    char dir[] = "/tmp/ptxgen-cache-test-XXXXXX", why[256] = "";
    if (!mkdtemp(dir)) { printf("FAIL mkdtemp\n"); return 1; }
    setenv("PTXGEN_CACHE_DIR", dir, 1);
    unsetenv("PTXGEN_CACHE");
    JitCache c;
    jit_cache_open(&c, why, sizeof why);
    check(c.on && !strcmp(c.dir, dir), "the cache opens at PTXGEN_CACHE_DIR", "%s", why);
    const char *a[] = {"ab", "c"}, *b[] = {"a", "bc"};
    uint8_t ka[16], kb[16];
    jit_cache_key(a, 2, ka);
    jit_cache_key(b, 2, kb);
    check(memcmp(ka, kb, 16) != 0, "keys keep their parts apart", "(\"ab\",\"c\") == (\"a\",\"bc\")");

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

    char path[1200], hx[33];
    hex(ka, hx);
    snprintf(path, sizeof path, "%s/%s.cubin", dir, hx);
    FILE *f = fopen(path, "r+b");   /* one payload byte flipped */
    if (f) { fseek(f, 32 + (long)(n / 2), SEEK_SET); fputc(payload[n / 2] ^ 0x40, f); fclose(f); }
    hit = jit_cache_get(&c, ka, &got, &len, &corrupt);
    check(!hit && corrupt && access(path, F_OK) != 0, "a corrupt entry is a miss, reported and removed", "hit %d", hit);
    jit_cache_put(&c, ka, payload, n);
    if (truncate(path, 32 + (long)n - 7)) perror("truncate");
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
