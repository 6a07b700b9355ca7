/* Tiles `ptxgen tune` measured best on a GPU, picked up by later builds of
 * the same (arch, kernel, family, dtype, head dim, causal, shape class). The
 * file: $PTXGEN_TUNED (a path; "0" turns the lookup off), else
 * $XDG_CONFIG_HOME/ptxgen/tuned.txt, else ~/.config/ptxgen/tuned.txt. A
 * request without a shape class (plain emission) never uses it. */
#ifndef PTXGEN_TUNED_H
#define PTXGEN_TUNED_H
#include <stddef.h>

typedef struct {
    const char *arch, *kernel, *family, *dtype;
    int d, causal;
    const char *cls;   /* tuned_shape_class */
    int dv;            /* d_v where the kind lets it differ from d (0 or d: the same; the key's d reads "d/dv" else) */
} TunedKey;

const char *tuned_path(char *buf, size_t len);   /* NULL: off or no home */
/* 1 with tile and a note (the file and what tune measured) when the file has the key, else 0 */
int  tuned_lookup(const TunedKey *k, char *tile, size_t tilelen, char *note, size_t notelen);
/* the key's entry added or replaced (an atomic rewrite of the file); 0 ok, with its path */
int  tuned_store(const TunedKey *k, const char *tile, double tflops, const char *shape, char *path, size_t pathlen);
/* attention: by the longer sequence (s<=1k, 4k, 16k, inf); sparse MLA: by h_q (h<=16, 32, 64, 128, more) */
void tuned_shape_class(int mla, long long s_max, long long h_q, char *out, size_t len);
#endif
