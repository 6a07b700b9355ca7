/* The seeded generator behind every check's inputs (conversions: core/dtype.c). */
#include "hostdata.h"

#include <math.h>

/* ---- Rng ---- */

static uint64_t rotl64(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t splitmix64(uint64_t *st)
{
    uint64_t z = (*st += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void rng_seed(Rng *r, uint64_t seed)
{
    /* splitmix64 never yields four zero words, the one state xoshiro can't leave. */
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
    r->has_spare = 0;
    r->spare = 0.0;
}

uint64_t rng_u64(Rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl64(s[1] * 5u, 7) * 9u;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return out;
}

double rng_uniform(Rng *r)
{
    /* 53 bits fill a double's significand exactly, so the result is < 1. */
    return (double)(rng_u64(r) >> 11) * 0x1.0p-53;
}

uint32_t rng_below(Rng *r, uint32_t n)
{
    return (uint32_t)(rng_u64(r) % n);
}

double rng_normal(Rng *r)
{
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    const double two_pi = 6.283185307179586476925286766559;
    /* 1 - u lies in (0, 1], keeping log away from zero. */
    double u1 = 1.0 - rng_uniform(r);
    double u2 = rng_uniform(r);
    double rad = sqrt(-2.0 * log(u1));
    r->spare = rad * sin(two_pi * u2);
    r->has_spare = 1;
    return rad * cos(two_pi * u2);
}
