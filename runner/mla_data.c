/* Sparse MLA check inputs: top-k indices with every kind of invalid slot and
 * duplicates, and per-token topk_length values (hostdata.h). */
#include "hostdata.h"

enum { NINVALID = 5, NSPECIAL = 3 };

/* Invalid value k of NINVALID: never a row of kv, each a different way to be out of range. */
static int32_t invalid_index(int k, int s_kv)
{
    const int64_t v[NINVALID] = { -1, INT32_MIN, s_kv, (int64_t)s_kv + 7, INT32_MAX };
    return (int32_t)(v[k] > INT32_MAX ? INT32_MAX : v[k]);
}

static int32_t any_invalid(Rng *r, int s_kv) { return invalid_index((int)rng_below(r, NINVALID), s_kv); }
static int32_t valid_row(Rng *r, int s_kv) { return (int32_t)rng_below(r, (uint32_t)s_kv); }

static void ordinary_token(Rng *r, int s_kv, int topk, int32_t *row)
{
    for (int j = 0; j < topk; j++) {
        uint32_t u = rng_below(r, 8);
        row[j] = u == 0 ? any_invalid(r, s_kv) : u == 1 && j > 0 ? row[rng_below(r, (uint32_t)j)] : valid_row(r, s_kv);
    }
}

/* Special token 0: no valid slot; 1: the first half invalid; 2: only the last slot valid. */
static void special_token(Rng *r, int which, int s_kv, int topk, int32_t *row)
{
    int n_invalid = which == 0 ? topk : which == 1 ? (topk + 1) / 2 : topk - 1;
    ordinary_token(r, s_kv, topk, row);
    for (int j = 0; j < n_invalid; j++) row[j] = any_invalid(r, s_kv);
    if (which == 2) row[topk - 1] = valid_row(r, s_kv);
}

typedef struct { int32_t *idx; int s_q, topk, first, nspecial; } Tokens;

/* Slot q of the ordinary tokens taken in order from the first after the special ones. */
static int32_t *ordinary_slot(const Tokens *tk, long q)
{
    long t = (tk->first + tk->nspecial + q / tk->topk) % tk->s_q;
    return &tk->idx[t * tk->topk + q % tk->topk];
}

/* A repeated valid row in two adjacent slots of one token, then each invalid
 * value, from a random slot on; with topk = 1 one slot is left to the draw,
 * so the ordinary tokens never lose every valid slot to the plants. */
static void plant(Rng *r, const Tokens *tk, int s_kv)
{
    long n = (long)(tk->s_q - tk->nspecial) * tk->topk, pos = 0, room = tk->topk >= 2 ? n : n - 1;
    long start = (long)rng_below(r, (uint32_t)(tk->s_q - tk->nspecial)) * tk->topk;
    if (tk->topk >= 2) {
        start += rng_below(r, (uint32_t)tk->topk - 1);
        *ordinary_slot(tk, start) = *ordinary_slot(tk, start + 1) = valid_row(r, s_kv);
        pos = 2;
    }
    for (int k = 0; k < NINVALID && pos < room; k++, pos++) *ordinary_slot(tk, (start + pos) % n) = invalid_index(k, s_kv);
}

void mla_draw_indices(Rng *r, int s_q, int s_kv, int topk, int32_t *idx)
{
    Tokens tk = { idx, s_q, topk, (int)rng_below(r, (uint32_t)s_q), s_q - 1 < NSPECIAL ? s_q - 1 : NSPECIAL };
    for (int t = 0; t < s_q; t++) {
        int k = (t - tk.first + s_q) % s_q;
        int32_t *row = idx + (size_t)t * topk;
        if (k < tk.nspecial) special_token(r, k, s_kv, topk, row);
        else ordinary_token(r, s_kv, topk, row);
    }
    plant(r, &tk, s_kv);
}

/* Token row's first n slots hold two different valid rows: its dS is not 0
 * by cancellation (one row alone gives P = 1 and dP = D), so its dq is not. */
static int two_rows(const int32_t *row, int64_t n, int s_kv)
{
    int32_t first = -1;
    for (int64_t j = 0; j < n; j++) {
        if (row[j] < 0 || row[j] >= s_kv) continue;
        if (first >= 0 && row[j] != first) return 1;
        first = row[j];
    }
    return 0;
}

static int64_t kept(int32_t len, int topk) { return len < 0 ? 0 : len > topk ? topk : len; }

void mla_draw_topk_length(Rng *r, const int32_t *idx, int s_q, int s_kv, int topk, int32_t *len)
{
    enum { BETWEEN, ALL, NONE, ABOVE, NEGATIVE };
    static const int cycle[8] = { BETWEEN, ALL, BETWEEN, NONE, BETWEEN, ABOVE, BETWEEN, NEGATIVE };
    uint32_t first = rng_below(r, 8);
    int gradient = 0;
    for (int t = 0; t < s_q; t++) {
        int64_t above[3] = { (int64_t)topk + 1, (int64_t)topk + 2 + rng_below(r, 1000), INT32_MAX };
        int64_t high = above[rng_below(r, 3)];
        switch (cycle[(t + first) % 8]) {
        case BETWEEN: len[t] = topk > 1 ? 1 + (int32_t)rng_below(r, (uint32_t)topk - 1) : topk; break;
        case ALL: len[t] = topk; break;
        case NONE: len[t] = 0; break;
        case ABOVE: len[t] = (int32_t)(high > INT32_MAX ? INT32_MAX : high); break;
        default: len[t] = rng_below(r, 2) ? -1 : INT32_MIN;
        }
        gradient |= two_rows(idx + (size_t)t * topk, kept(len[t], topk), s_kv);
    }
    /* a few tokens can draw lengths that leave none of them a gradient (a zero
     * dq proves nothing): the first token whose whole row has one keeps all */
    for (int t = 0; t < s_q && !gradient; t++)
        if (two_rows(idx + (size_t)t * topk, topk, s_kv)) len[t] = topk, gradient = 1;
}
