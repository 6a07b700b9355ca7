/* The sim's global memory: host buffers registered at device addresses,
 * kept sorted by base so a lookup is a binary search. Two ways in: the sim
 * device hands out fresh addresses (sim_device.c, with unmapped gaps so an
 * overrun faults), and a launch record places buffers AT the addresses its
 * parameter bytes already hold (runner/record_run.c), so recorded pointers
 * need no rewriting. */
#include <stdlib.h>
#include <string.h>
#include "sim.h"

SimBuf *sim_heap_find(const SimHeap *h, uint64_t addr, size_t bytes)
{
    int lo = 0, hi = h->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        SimBuf *b = &h->bufs[mid];
        if (addr < b->base) hi = mid - 1;
        else if (addr >= b->base + b->size) lo = mid + 1;
        else return bytes <= b->base + b->size - addr ? b : NULL;   /* addr is inside: no wrap */
    }
    return NULL;
}

void sim_heap_describe(const SimHeap *h, uint64_t addr, char *out, size_t cap)
{
    const SimBuf *best = NULL;
    for (int i = 0; i < h->n; i++)
        if (h->bufs[i].base <= addr) best = &h->bufs[i];
    if (!best) { snprintf(out, cap, "below every buffer"); return; }
    if (addr < best->base + best->size)
        snprintf(out, cap, "runs past the end of the %zu-byte buffer at 0x%llx", best->size, (unsigned long long)best->base);
    else
        snprintf(out, cap, "%llu bytes past the end of the %zu-byte buffer at 0x%llx",
                 (unsigned long long)(addr - best->base - best->size), best->size, (unsigned long long)best->base);
}

SimBuf *sim_heap_place(SimHeap *h, uint64_t base, size_t bytes, char *err, size_t errlen)
{
    if (!bytes || !base || base + bytes < base) {
        snprintf(err, errlen, "sim: cannot place %zu bytes at 0x%llx", bytes, (unsigned long long)base);
        return NULL;
    }
    int at = 0;   /* first buffer above base */
    while (at < h->n && h->bufs[at].base < base) at++;
    const SimBuf *below = at ? &h->bufs[at - 1] : NULL, *above = at < h->n ? &h->bufs[at] : NULL;
    if ((below && below->base + below->size > base) || (above && base + bytes > above->base)) {
        const SimBuf *o = below && below->base + below->size > base ? below : above;
        snprintf(err, errlen, "sim: %zu bytes at 0x%llx overlap the %zu-byte buffer at 0x%llx", bytes,
                 (unsigned long long)base, o->size, (unsigned long long)o->base);
        return NULL;
    }
    if (h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 16;
        SimBuf *nb = realloc(h->bufs, (size_t)cap * sizeof *nb);
        if (!nb) { snprintf(err, errlen, "sim: out of memory"); return NULL; }
        h->bufs = nb, h->cap = cap;
    }
    uint8_t *data = malloc(bytes), *acc = calloc(bytes, 1);
    if (!data || !acc) {
        free(data), free(acc);
        snprintf(err, errlen, "sim: cannot allocate %zu bytes", bytes);
        return NULL;
    }
    memset(data, 0xFF, bytes);   /* fresh device memory is garbage; all-ones reads as NaN */
    memmove(&h->bufs[at + 1], &h->bufs[at], (size_t)(h->n - at) * sizeof *h->bufs);
    h->bufs[at] = (SimBuf){base, bytes, data, acc, 0};
    h->n++;
    return &h->bufs[at];
}

enum { HEAP_BASE = 0x10000000, HEAP_ALIGN = 256, HEAP_GAP = 1 << 20 };

SimBuf *sim_heap_alloc(SimHeap *h, size_t bytes, uint64_t *addr, char *err, size_t errlen)
{
    if (!h->next) h->next = HEAP_BASE;
    SimBuf *b = sim_heap_place(h, h->next, bytes, err, errlen);
    if (!b) return NULL;
    *addr = h->next;
    h->next += (bytes + HEAP_ALIGN - 1) / HEAP_ALIGN * HEAP_ALIGN + HEAP_GAP;
    return b;
}

int sim_heap_remove(SimHeap *h, uint64_t base)
{
    for (int i = 0; i < h->n; i++)
        if (h->bufs[i].base == base) {
            free(h->bufs[i].data), free(h->bufs[i].acc);
            memmove(&h->bufs[i], &h->bufs[i + 1], (size_t)(h->n - i - 1) * sizeof *h->bufs);
            h->n--;
            return 0;
        }
    return -1;
}

void sim_heap_release(SimHeap *h)
{
    for (int i = 0; i < h->n; i++) free(h->bufs[i].data), free(h->bufs[i].acc);
    free(h->bufs);
    *h = (SimHeap){0};
}

/* live: bit 0, some byte holds this grid's marks; bit 1, some byte holds an earlier grid's (a buffer without
 * either is skipped) */
void sim_heap_next_grid(SimHeap *h, int keep, int fresh, int reads)
{
    uint8_t now = reads ? SIM_ACC_RW : SIM_ACC_W;
    for (int i = 0; i < h->n; i++) {
        SimBuf *b = &h->bufs[i];
        if (!b->live) continue;
        if (fresh) memset(b->acc, 0, b->size);
        else
            for (size_t k = 0; k < b->size; k++)
                b->acc[k] = (uint8_t)((b->acc[k] & now) << 2 | (keep ? b->acc[k] & ~SIM_ACC_RW : 0));
        b->live = fresh ? 0 : (b->live & 1) << 1 | (keep ? b->live & 2 : 0);
    }
}
