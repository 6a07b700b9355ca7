#include "kernel.h"
#include <stdlib.h>
#include <string.h>

const char *param_type_ptx(ParamType t) {
    static const char *const names[] = {".u64", ".u32", ".u64", ".f32"};
    return names[t];
}

const ParamSpec *spec_param(const KernelSpec *k, const char *name) {
    for (int i = 0; i < k->nparams; i++)
        if (!strcmp(k->params[i].name, name)) return &k->params[i];
    return NULL;
}

void kernel_set_free(KernelSet *s) {
    free(s->ptx);
    s->ptx = NULL;
}
