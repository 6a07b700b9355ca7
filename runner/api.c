/* The public run API (ptxgen.h "Running a set"): devices, loaded sets and
 * launches with named tensors, over the runner's device layer (device.h)
 * and argument binding (bind.h). */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bind.h"
#include "device.h"
#include "ptxgen.h"

struct ptxgen_device {
    Device *dev;
    int sim;
    pthread_mutex_t mu;   /* loads (the driver's module table) and launches (the device's current stream) */
};

static int fail(int code, char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

enum { MAX_K = 6, MAX_WS = 6, MAX_SIZES = 16, MAX_TENSORS = 24 };
struct ptxgen_loaded {
    ptxgen_device *d;
    const ptxgen_set *s;
    DevModule *mod;
    int nk;
    DevFunc *fn[MAX_K];
    DevFuncAttrs attrs[MAX_K];
    struct { DevPtr ptr; unsigned long long bytes; } ws[MAX_WS];
    BoundArgs bound[MAX_K];
    /* the set's tensor parameters, each name once (its first row), and the dims ("b", "s", "h": bits 0-2)
     * some kernel takes a stride for: fixed by the set, so found once at load, not per launch */
    ptxgen_param tensor[MAX_TENSORS];
    unsigned strided[MAX_TENSORS];
    int ntensor;
    unsigned smem_set[MAX_K];   /* the dynamic shared memory each kernel is opted into (set once) */
    char how[512];              /* dev_last_load, taken under the device lock */
};

static int tensor_index(const ptxgen_loaded *l, const char *name) {
    for (int i = 0; i < l->ntensor; i++)
        if (!strcmp(l->tensor[i].name, name)) return i;
    return -1;
}

/* l->tensor and l->strided from the set's parameter rows */
static int index_tensors(ptxgen_loaded *l, char *err, size_t errlen) {
    for (int k = 0; k < l->nk; k++)
        for (int i = 0; i < ptxgen_num_params(l->s, k); i++) {
            ptxgen_param p;
            if (ptxgen_param_info(l->s, k, i, &p) || (p.role != PTXGEN_ROLE_IN && p.role != PTXGEN_ROLE_OUT) ||
                tensor_index(l, p.name) >= 0)
                continue;
            if (l->ntensor == MAX_TENSORS) return fail(PTXGEN_EINVAL, err, errlen, "the set has more tensors than the loader holds");
            l->tensor[l->ntensor++] = p;
        }
    for (int k = 0; k < l->nk; k++)
        for (int i = 0; i < ptxgen_num_params(l->s, k); i++) {
            ptxgen_param p;
            int t;
            const char *dims = "bsh", *c;
            if (!ptxgen_param_info(l->s, k, i, &p) && p.role == PTXGEN_ROLE_STRIDE && p.of && p.dim &&
                (t = tensor_index(l, p.of)) >= 0 && p.dim[0] && (c = strchr(dims, p.dim[0])))
                l->strided[t] |= 1u << (c - dims);
        }
    return PTXGEN_OK;
}

static int fail(int code, char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return code;
}

int ptxgen_device_open(const char *name, ptxgen_device **out, char *err, size_t errlen) {
    if (!out) return fail(PTXGEN_EINVAL, err, errlen, "ptxgen_device_open: out is NULL");
    *out = NULL;
    const char *kind = name;
    int ordinal = 0;
    if (!name) return fail(PTXGEN_EINVAL, err, errlen, "ptxgen_device_open: name is NULL (\"cuda\", \"cuda:N\" or \"sim\")");
    if (!strncmp(name, "cuda:", 5)) {
        char *end;
        long v = strtol(name + 5, &end, 10);
        if (!name[5] || *end || v < 0 || v > 64)
            return fail(PTXGEN_EINVAL, err, errlen, "device '%s': want cuda:N with N a GPU ordinal", name);
        kind = "cuda", ordinal = (int)v;
    } else if (strcmp(name, "cuda") && strcmp(name, "sim")) {
        return fail(PTXGEN_EINVAL, err, errlen, "device '%s': want \"cuda\", \"cuda:N\" or \"sim\"", name);
    }
    ptxgen_device *d = calloc(1, sizeof *d);
    if (!d) return fail(PTXGEN_ENOMEM, err, errlen, "out of host memory");
    if (dev_open(&d->dev, kind, ordinal, err, errlen)) {
        free(d);
        return PTXGEN_EDEVICE;
    }
    d->sim = !strcmp(kind, "sim");
    pthread_mutex_init(&d->mu, NULL);
    *out = d;
    return PTXGEN_OK;
}

void ptxgen_device_close(ptxgen_device *d) {
    if (!d) return;
    dev_close(d->dev);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

int ptxgen_device_arch(ptxgen_device *d, char *arch, size_t archlen, char *err, size_t errlen) {
    if (!d || !arch || !archlen) return fail(PTXGEN_EINVAL, err, errlen, "ptxgen_device_arch: a NULL argument");
    if (d->sim) return snprintf(arch, archlen, "sm_100a") < (int)archlen ? PTXGEN_OK : PTXGEN_EINVAL;
    DevInfo info;
    if (dev_info(d->dev, &info, err, errlen)) return PTXGEN_EDEVICE;
    char name[16];
    dev_arch_name(&info, name, sizeof name);
    return snprintf(arch, archlen, "%s", name) < (int)archlen ? PTXGEN_OK : PTXGEN_EINVAL;
}

int ptxgen_device_alloc(ptxgen_device *d, size_t bytes, unsigned long long *ptr, char *err, size_t errlen) {
    if (!d || !ptr) return fail(PTXGEN_EINVAL, err, errlen, "ptxgen_device_alloc: a NULL argument");
    DevPtr p = 0;
    if (dev_alloc(d->dev, &p, bytes, err, errlen)) return PTXGEN_ENOMEM;
    *ptr = p;
    return PTXGEN_OK;
}

int ptxgen_device_free(ptxgen_device *d, unsigned long long ptr, char *err, size_t errlen) {
    if (!d) return fail(PTXGEN_EINVAL, err, errlen, "ptxgen_device_free: device is NULL");
    return dev_free(d->dev, ptr, err, errlen) ? PTXGEN_EDEVICE : PTXGEN_OK;
}

int ptxgen_device_upload(ptxgen_device *d, unsigned long long dst, const void *src, size_t bytes, char *err, size_t errlen) {
    if (!d || !src) return fail(PTXGEN_EINVAL, err, errlen, "ptxgen_device_upload: a NULL argument");
    return dev_upload(d->dev, dst, src, bytes, err, errlen) ? PTXGEN_EDEVICE : PTXGEN_OK;
}

int ptxgen_device_download(ptxgen_device *d, void *dst, unsigned long long src, size_t bytes, char *err, size_t errlen) {
    if (!d || !dst) return fail(PTXGEN_EINVAL, err, errlen, "ptxgen_device_download: a NULL argument");
    return dev_download(d->dev, dst, src, bytes, err, errlen) ? PTXGEN_ELAUNCH : PTXGEN_OK;
}

int ptxgen_device_sync(ptxgen_device *d, char *err, size_t errlen) {
    if (!d) return fail(PTXGEN_EINVAL, err, errlen, "ptxgen_device_sync: device is NULL");
    return dev_sync(d->dev, err, errlen) ? PTXGEN_ELAUNCH : PTXGEN_OK;
}

int ptxgen_load(ptxgen_device *d, const ptxgen_set *s, ptxgen_loaded **out, char *err, size_t errlen) {
    if (!d || !s || !out) return fail(PTXGEN_EINVAL, err, errlen, "ptxgen_load: a NULL argument");
    *out = NULL;
    int nk = ptxgen_num_kernels(s);
    if (nk > MAX_K || ptxgen_num_workspaces(s) > MAX_WS)
        return fail(PTXGEN_EINVAL, err, errlen, "the set has more kernels or workspaces than the loader holds");
    ptxgen_loaded *l = calloc(1, sizeof *l);
    if (!l) return fail(PTXGEN_ENOMEM, err, errlen, "out of host memory");
    l->d = d, l->s = s, l->nk = nk;
    int rc = index_tensors(l, err, errlen);
    if (rc) {
        free(l);
        return rc;
    }
    pthread_mutex_lock(&d->mu);
    rc = dev_load_ptx(d->dev, ptxgen_ptx(s), ptxgen_entry(s, 0), &l->mod, err, errlen) ? PTXGEN_ELOAD : PTXGEN_OK;
    if (!rc && dev_last_load(d->dev)) snprintf(l->how, sizeof l->how, "%s", dev_last_load(d->dev));
    for (int k = 0; !rc && k < nk; k++)
        if (dev_get_func(l->mod, ptxgen_entry(s, k), &l->fn[k], err, errlen) ||
            dev_func_attrs(l->fn[k], &l->attrs[k], err, errlen))
            rc = PTXGEN_ELOAD;
    pthread_mutex_unlock(&d->mu);
    if (rc) {
        ptxgen_unload(l);
        return rc;
    }
    *out = l;
    return PTXGEN_OK;
}

void ptxgen_unload(ptxgen_loaded *l) {
    if (!l) return;
    char err[256];
    for (int i = 0; i < MAX_WS; i++)
        if (l->ws[i].ptr) dev_free(l->d->dev, l->ws[i].ptr, err, sizeof err);
    if (l->mod) dev_unload(l->mod);
    free(l);
}

const char *ptxgen_loaded_how(const ptxgen_loaded *l) { return l ? l->how : ""; }

int ptxgen_kernel_resources(const ptxgen_loaded *l, int k, int *regs, int *local_bytes) {
    if (!l || k < 0 || k >= l->nk) return PTXGEN_EINVAL;
    if (regs) *regs = l->attrs[k].num_regs;
    if (local_bytes) *local_bytes = l->attrs[k].local_bytes;
    return PTXGEN_OK;
}

/* ---- a launch: the caller's tensors against the set's parameters ---- */

typedef struct {
    const ptxgen_set *s;
    const ptxgen_tensor *t;
    int nt;
    struct { const char *name; long long v; const char *from; } size[MAX_SIZES];
    char extra[MAX_SIZES][16];   /* names of sizes only tensor axes carry (no kernel takes them) */
    int nsize;
    const ptxgen_loaded *l;
} Launch;

/* The axis names of a parameter's shape "[b, s_q, h_q, d]" into names (each up to 15 chars); their count. */
static int axes(const char *shape, char names[PTXGEN_MAX_RANK][16]) {
    int n = 0;
    if (!shape || *shape != '[') return 0;
    for (const char *p = shape + 1; *p && *p != ']' && n < PTXGEN_MAX_RANK;) {
        while (*p == ' ' || *p == ',') p++;
        int len = 0;
        while (p[len] && p[len] != ',' && p[len] != ']') len++;   /* an axis may be an expression: "b + 1" */
        while (len && p[len - 1] == ' ') len--;
        if (!len) break;
        snprintf(names[n++], 16, "%.*s", len, p);
        p += len;
    }
    return n;
}

/* The stride dimension an axis is: 'b', 's' (the rows: s_q, s_k, varlen's packed total_q, total_k) or 'h'; 0 for
 * others (head dims, MLA's topk). */
static char axis_dim(const char *axis) {
    if (!strcmp(axis, "b") || !strcmp(axis, "num_pages")) return 'b';   /* a paged cache: pages, then rows */
    if (!strcmp(axis, "page_size")) return 's';
    if (!strncmp(axis, "total_", 6) || axis[0] == 's') return 's';
    return axis[0] == 'h' ? 'h' : 0;
}

/* An axis "x + 1" (varlen's offsets: b + 1 entries) names size x, one less than its extent: into name. */
static void axis_size(const char *axis, long long *extent, char name[16]) {
    static const char plus1[] = " + 1";
    size_t n = strlen(axis), m = sizeof plus1 - 1;
    int shifted = n > m && !strcmp(axis + n - m, plus1);
    snprintf(name, 16, "%.*s", (int)(shifted ? n - m : n), axis);
    *extent -= shifted;
}

static const ptxgen_tensor *caller_tensor(const Launch *L, const char *name) {
    for (int i = 0; i < L->nt; i++)
        if (L->t[i].name && !strcmp(L->t[i].name, name)) return &L->t[i];
    return NULL;
}

static int esize_of(const char *dtype) { return dtype && (!strcmp(dtype, "bf16") || !strcmp(dtype, "fp16")) ? 2 : 4; }

/* A size named by a tensor axis: set it, or check it against what an earlier tensor or the caller said. */
static int note_size(Launch *L, const char *name, long long v, const char *from, char *err, size_t errlen) {
    for (int i = 0; i < L->nsize; i++) {
        if (strcmp(L->size[i].name, name)) continue;
        if (!L->size[i].from) { L->size[i].v = v, L->size[i].from = from; return 0; }
        if (L->size[i].v != v)
            return fail(PTXGEN_EINVAL, err, errlen, "%s says %s = %lld but %s says %lld", from, name, v, L->size[i].from,
                        L->size[i].v);
        return 0;
    }
    return -1;   /* not a problem size */
}

/* Whether two elements of t share an address: its axes of more than one element, taken by stride, must each step past
 * the span of the ones inside (a stride of 0, or heads 8 apart at d 64, would have the kernels' stores race). */
static int overlapping(const ptxgen_tensor *t, int rank) {
    int order[PTXGEN_MAX_RANK], n = 0;
    for (int i = 0; i < rank; i++)
        if (t->shape[i] > 1) order[n++] = i;
    for (int i = 1; i < n; i++)   /* by stride, insertion sort: at most PTXGEN_MAX_RANK axes */
        for (int j = i; j > 0 && t->strides[order[j]] < t->strides[order[j - 1]]; j--) {
            int x = order[j];
            order[j] = order[j - 1], order[j - 1] = x;
        }
    long long span = 1;   /* elements the inner axes cover, one past the last */
    for (int i = 0; i < n; i++) {
        long long st = t->strides[order[i]];
        if (st < span) return 1;
        if (__builtin_mul_overflow(st, t->shape[order[i]] - 1, &st) || __builtin_add_overflow(st, span, &span)) return 1;
    }
    return 0;
}

/* One tensor parameter against the caller's tensor: present (or optional), rank, shape, strides, alignment. */
static int check_tensor(Launch *L, const ptxgen_param *p, char *err, size_t errlen) {
    const ptxgen_tensor *t = caller_tensor(L, p->name);
    int optional = p->meaning && !strncmp(p->meaning, "optional", 8);
    if (!t || !t->ptr) {
        if (optional) return 0;
        return fail(PTXGEN_EINVAL, err, errlen, "tensor '%s' %s is %s (%s)", p->name, p->shape ? p->shape : "",
                    t ? "a null pointer" : "not given", p->meaning ? p->meaning : "");
    }
    char ax[PTXGEN_MAX_RANK][16];
    int rank = axes(p->shape, ax), d, dv, es = esize_of(p->dtype);
    if (t->rank != rank)
        return fail(PTXGEN_EINVAL, err, errlen, "tensor '%s' has rank %d; the set takes %s", p->name, t->rank, p->shape);
    ptxgen_head_dims(L->s, &d, &dv);
    long long dense = 1;
    for (int i = rank - 1; i >= 0; i--) {
        long long n = t->shape[i];
        if (n < 1) return fail(PTXGEN_EINVAL, err, errlen, "tensor '%s' axis %s has extent %lld", p->name, ax[i], n);
        int head = !strcmp(ax[i], "d") || !strcmp(ax[i], "d_qk") ? d : !strcmp(ax[i], "dv") || !strcmp(ax[i], "d_v") ? dv :
                   !strcmp(ax[i], "page_size") ? ptxgen_page_size(L->s) : 0;   /* built in, like the head dims */
        if (head && n != head)
            return fail(PTXGEN_EINVAL, err, errlen, "tensor '%s' axis %s is %lld; the set was built for %d", p->name, ax[i],
                        n, head);
        if (!head) {
            long long v = n;
            char name[16];
            axis_size(ax[i], &v, name);
            int rc = note_size(L, name, v, p->name, err, errlen);
            if (rc > 0) return rc;
            if (rc < 0 && L->nsize < MAX_SIZES) {   /* an axis no kernel takes (varlen's total_k): the tensors agree */
                int j = L->nsize++;
                snprintf(L->extra[j], sizeof L->extra[j], "%s", name);
                L->size[j].name = L->extra[j], L->size[j].v = v, L->size[j].from = p->name;
            } else if (rc < 0)
                return fail(PTXGEN_EINVAL, err, errlen, "tensor '%s' axis %s is no size of the set", p->name, ax[i]);
        }
        long long st = t->strides[i];
        char dim = axis_dim(ax[i]);
        const char *dims = "bsh", *c = dim ? strchr(dims, dim) : NULL;
        int strided = i < rank - 1 && c && (L->l->strided[tensor_index(L->l, p->name)] >> (c - dims) & 1);
        if (i == rank - 1 && st != 1)
            return fail(PTXGEN_EINVAL, err, errlen, "tensor '%s' innermost axis %s has stride %lld; the kernels need 1",
                        p->name, ax[i], st);
        if (i < rank - 1 && !strided && st != dense)
            return fail(PTXGEN_EINVAL, err, errlen,
                        "tensor '%s' axis %s has stride %lld; the set takes it dense (stride %lld): pass a contiguous tensor",
                        p->name, ax[i], st, dense);
        if (strided && (st < 0 || (es == 2 && st % 8)))
            return fail(PTXGEN_EINVAL, err, errlen, "tensor '%s' axis %s stride %lld: want a non-negative multiple of 8 "
                        "elements (16-byte rows)", p->name, ax[i], st);
        if (__builtin_mul_overflow(dense, n, &dense))
            return fail(PTXGEN_EINVAL, err, errlen, "tensor '%s' has more than 2^63 elements", p->name);
    }
    if (p->role == PTXGEN_ROLE_OUT && overlapping(t, rank))
        return fail(PTXGEN_EINVAL, err, errlen, "tensor '%s' is an output whose strides overlap its elements (each must "
                    "have its own address)", p->name);
    if (t->ptr % (unsigned long long)(es == 2 ? 16 : es))
        return fail(PTXGEN_EINVAL, err, errlen, "tensor '%s' address 0x%llx is not %d-byte aligned", p->name, t->ptr,
                    es == 2 ? 16 : es);
    return 0;
}

static int bind_tensor(void *ctx, const char *name, BindTensor *out, char *err, size_t errlen) {
    const Launch *L = ctx;
    const ptxgen_tensor *t = caller_tensor(L, name);
    int ti = tensor_index(L->l, name);
    if (ti < 0) return fail(1, err, errlen, "the set has no tensor '%s'", name);
    const ptxgen_param p = L->l->tensor[ti];
    *out = (BindTensor){.esize = esize_of(p.dtype)};
    if (!t) return 0;   /* optional, checked */
    char ax[PTXGEN_MAX_RANK][16];
    int rank = axes(p.shape, ax);
    out->ptr = t->ptr;
    for (int i = 0; i < rank; i++) {
        uint64_t st = (uint64_t)t->strides[i];
        char dim = axis_dim(ax[i]);
        if (dim == 'b') out->stride_b = st;
        else if (dim == 's') out->stride_s = st;
        else if (dim == 'h') out->stride_h = st;
    }
    return 0;
}

static int bind_size(void *ctx, const char *name, uint64_t *v) {
    const Launch *L = ctx;
    for (int i = 0; i < L->nsize; i++)
        if (!strcmp(L->size[i].name, name) && L->size[i].from) { *v = (uint64_t)L->size[i].v; return 0; }
    return 1;
}

static int bind_workspace(void *ctx, const char *name, uint64_t *v) {
    const Launch *L = ctx;
    for (int i = 0; i < ptxgen_num_workspaces(L->s); i++) {
        ptxgen_workspace w;
        if (!ptxgen_workspace_info(L->s, i, &w) && !strcmp(w.name, name)) { *v = L->l->ws[i].ptr; return 0; }
    }
    return 1;
}

/* Each workspace at least its size for this problem (grown, never shrunk), zeroed where it must start so (kept_zero:
 * when allocated; the set leaves it zeroed). */
static int workspaces(ptxgen_loaded *l, const ptxgen_size *sz, int n, char *err, size_t errlen) {
    for (int i = 0; i < ptxgen_num_workspaces(l->s); i++) {
        ptxgen_workspace w;
        unsigned long long bytes;
        if (ptxgen_workspace_info(l->s, i, &w) || ptxgen_workspace_bytes(l->s, i, sz, n, &bytes, err, errlen))
            return PTXGEN_EINVAL;
        if (bytes > l->ws[i].bytes) {
            if (l->ws[i].ptr && dev_free(l->d->dev, l->ws[i].ptr, err, errlen)) return PTXGEN_EDEVICE;
            l->ws[i].ptr = 0, l->ws[i].bytes = 0;
            if (dev_alloc(l->d->dev, &l->ws[i].ptr, bytes ? bytes : 1, err, errlen)) return PTXGEN_ENOMEM;
            l->ws[i].bytes = bytes;
            if (w.kept_zero && dev_fill_u8(l->d->dev, l->ws[i].ptr, 0, bytes, err, errlen)) return PTXGEN_EDEVICE;
        }
        if (w.zero_init && !w.kept_zero && bytes && dev_fill_u8(l->d->dev, l->ws[i].ptr, 0, bytes, err, errlen))
            return PTXGEN_EDEVICE;
    }
    return PTXGEN_OK;
}

static long long size_of(const Launch *L, const char *name) {
    for (int i = 0; i < L->nsize; i++)
        if (!strcmp(L->size[i].name, name)) return L->size[i].v;
    return 0;
}

/* What the sizes must satisfy among themselves, else the kernels read past their tensors or run CTAs by the million
 * over nothing: a kv head's group of whole query heads, the longest sequence within the packed rows (varlen), a
 * paged sequence within its table row's pages. */
static int size_rules(const Launch *L, char *err, size_t errlen) {
    long long h_q = size_of(L, "h_q"), h_kv = size_of(L, "h_kv");
    if (h_q && h_kv && h_q % h_kv)
        return fail(PTXGEN_EINVAL, err, errlen, "h_q %lld is no multiple of h_kv %lld: each kv head serves a group of "
                    "h_q / h_kv query heads", h_q, h_kv);
    static const char *const packed[2][2] = {{"s_q", "total_q"}, {"s_k", "total_k"}};
    for (int i = 0; i < 2; i++) {
        long long most = size_of(L, packed[i][0]), all = size_of(L, packed[i][1]);
        if (most && all && most > all)
            return fail(PTXGEN_EINVAL, err, errlen, "%s %lld (the longest sequence) is past %s %lld, the packed rows",
                        packed[i][0], most, packed[i][1], all);
    }
    long long pages = size_of(L, "max_pages"), page = ptxgen_page_size(L->s), s_k = size_of(L, "s_k");
    if (pages && page && s_k > pages * page)
        return fail(PTXGEN_EINVAL, err, errlen, "s_k %lld is past max_pages %lld x page_size %lld, the keys a block_table "
                    "row holds", s_k, pages, page);
    return 0;
}

/* Block-sparse: the mask's rows and columns are the blocks of s_q and s_k (the list kernels read no further). */
static int mask_shape(const Launch *L, char *err, size_t errlen) {
    int bm, bn;
    if (!ptxgen_block_sparse(L->s, &bm, &bn)) return 0;
    long long s_q = size_of(L, "s_q"), s_k = size_of(L, "s_k"), rows = size_of(L, "mask_rows"), cols = size_of(L, "mask_cols");
    if (rows != (s_q + bm - 1) / bm || cols != (s_k + bn - 1) / bn)
        return fail(PTXGEN_EINVAL, err, errlen, "block_mask is [.., %lld, %lld] blocks; s_q %lld and s_k %lld in blocks of "
                    "%dx%d need [.., %lld, %lld]", rows, cols, s_q, s_k, bm, bn, (s_q + bm - 1) / bm, (s_k + bn - 1) / bn);
    /* the kernels index the mask's int32 entries in 32 bits */
    double entries = (double)size_of(L, "b") * (double)size_of(L, "n_mask_heads") * (double)rows * (double)cols;
    if (entries > (double)UINT32_MAX)
        return fail(PTXGEN_EINVAL, err, errlen, "block_mask has %.0f entries (b x n_mask_heads x %lld x %lld), more than "
                    "the 2^32 - 1 the kernels index in 32 bits", entries, rows, cols);
    return 0;
}

int ptxgen_launch(ptxgen_loaded *l, void *stream, const ptxgen_tensor *tensors, int ntensors, const ptxgen_size *sizes,
                  int nsizes, float softmax_scale, char *err, size_t errlen) {
    if (!l || (ntensors && !tensors) || ntensors < 0 || (nsizes && !sizes) || nsizes < 0)
        return fail(PTXGEN_EINVAL, err, errlen, "ptxgen_launch: a NULL or negative argument");
    const ptxgen_set *s = l->s;
    Launch L = {.s = s, .t = tensors, .nt = ntensors, .l = l};
    for (int i = 0; i < ptxgen_num_problem_sizes(s) && L.nsize < MAX_SIZES; i++)
        L.size[L.nsize++].name = ptxgen_problem_size(s, i);
    for (int i = 0; i < nsizes; i++) {
        if (!sizes[i].name) return fail(PTXGEN_EINVAL, err, errlen, "size %d has no name", i);
        int rc = note_size(&L, sizes[i].name, sizes[i].value, "the sizes given", err, errlen);
        if (rc > 0) return rc;
        if (rc < 0) return fail(PTXGEN_EINVAL, err, errlen, "the set has no size '%s'", sizes[i].name);
    }
    for (int i = 0; i < ntensors; i++) {
        if (!tensors[i].name || tensor_index(l, tensors[i].name) < 0)
            return fail(PTXGEN_EINVAL, err, errlen, "the set has no tensor '%s'", tensors[i].name ? tensors[i].name : "(null)");
        for (int j = 0; j < i; j++)
            if (!strcmp(tensors[j].name, tensors[i].name))
                return fail(PTXGEN_EINVAL, err, errlen, "tensor '%s' is given twice", tensors[i].name);
    }
    for (int i = 0; i < l->ntensor; i++) {
        int rc = check_tensor(&L, &l->tensor[i], err, errlen);
        if (rc) return rc;
    }
    ptxgen_size sz[MAX_SIZES];
    int nsz = 0, rc0;
    for (int i = 0; i < L.nsize; i++) {
        if (!L.size[i].from) return fail(PTXGEN_EINVAL, err, errlen, "size %s is not given and no tensor carries it", L.size[i].name);
        if (L.size[i].v < 1) return fail(PTXGEN_EINVAL, err, errlen, "size %s = %lld", L.size[i].name, L.size[i].v);
        sz[nsz++] = (ptxgen_size){L.size[i].name, L.size[i].v};
    }
    if ((rc0 = mask_shape(&L, err, errlen)) || (rc0 = size_rules(&L, err, errlen))) return rc0;
    if (!isfinite(softmax_scale))
        return fail(PTXGEN_EINVAL, err, errlen, "softmax_scale is %g: the kernels need a finite scale", softmax_scale);
    unsigned grid[MAX_K][3], block[MAX_K][3], cluster[MAX_K][3], smem[MAX_K];
    for (int k = 0; k < l->nk; k++)   /* every kernel's grid within the launch limits before any workspace grows */
        if (ptxgen_launch_dims(s, k, sz, nsz, grid[k], block[k], &smem[k], err, errlen) ||
            ptxgen_cluster_dims(s, k, sz, nsz, cluster[k], err, errlen))
            return PTXGEN_EINVAL;
    pthread_mutex_lock(&l->d->mu);   /* the stream is the device's: launches of other sets on it wait */
    dev_set_stream(l->d->dev, stream);
    int rc = workspaces(l, sz, nsz, err, errlen);
    Binder b = {&L, bind_tensor, bind_size, bind_workspace, softmax_scale};
    for (int k = 0; !rc && k < l->nk; k++) {
        if (bind_args(s, k, l->d->dev, &b, &l->bound[k], err, errlen)) {
            rc = PTXGEN_EINVAL;
            break;
        }
        if (!grid[k][0] || !grid[k][1] || !grid[k][2]) continue;   /* nothing to do (no token, no row) */
        if (smem[k] != l->smem_set[k]) {   /* a driver call: once per kernel, not per launch */
            if (dev_set_dyn_smem(l->fn[k], (int)smem[k], err, errlen)) { rc = PTXGEN_ELAUNCH; break; }
            l->smem_set[k] = smem[k];
        }
        int clustered = cluster[k][0] * cluster[k][1] * cluster[k][2] > 1;
        DevLaunchHow how = {clustered ? cluster[k] : NULL, ptxgen_programmatic_dependent(s, k)};
        if (dev_launch_how(l->fn[k], grid[k], block[k], &how, smem[k], l->bound[k].args, err, errlen)) rc = PTXGEN_ELAUNCH;
    }
    dev_set_stream(l->d->dev, NULL);
    pthread_mutex_unlock(&l->d->mu);
    return rc;
}
