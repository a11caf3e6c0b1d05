/*
 * tir/split_host_device.c — host/device split (TVM SplitHostDevice): each
 * outermost thread-bound loop nest of a verified GPU function becomes a
 * kernel function whose parameters are the global buffers it touches
 * (the caller's buffers, then the host's global allocations: workspaces),
 * with its grid and block sizes taken from the extents of the loops bound
 * to blockIdx.* and threadIdx.*. The host part only sequences kernels.
 */
#include <string.h>

#include "tir/tir_internal.h"

typedef struct {
    te_ctx *ctx;
    const tir_func *f;
    tir_device_program *p;
    int cap_ws, cap_k;
} splitter;

typedef struct {
    const tir_buffer *bufs[256];
    int n;
} buf_set;

static void bs_add(buf_set *s, const tir_buffer *b) {
    for (int i = 0; i < s->n; i++)
        if (s->bufs[i] == b) return;
    if (s->n < 256) s->bufs[s->n++] = b;
}

static void used_expr(const te_expr *e, void *user) {
    if (!e) return;
    if (e->kind == TE_LOAD) bs_add(user, e->u.load.buffer);
    te_expr_visit_children(e, used_expr, user);
}

static void used_stmt(const tir_stmt *s, void *user) {
    if (s->kind == TIR_STORE) bs_add(user, s->u.store.buffer);
}

static void extents(const tir_stmt *s, void *user) {
    tir_kernel *k = user;
    if (s->kind != TIR_FOR || s->u.loop.for_kind != TIR_FOR_THREAD) return;
    int t = tir__thread_tag_index(s->u.loop.thread_tag);
    int64_t e;
    if (t < 0 || t >= 6 || !te_is_const_int(s->u.loop.extent, &e)) return;
    int64_t *dim = t < 3 ? &k->grid[t] : &k->block[t - 3];
    if (e > *dim) *dim = e;
}

static int add_kernel(splitter *sp, tir_stmt *root) {
    tir_device_program *p = sp->p;
    if (p->nkernels == sp->cap_k) {
        int cap = sp->cap_k ? 2 * sp->cap_k : 4;
        tir_kernel *k = te_alloc(sp->ctx, sizeof *k * (size_t)cap);
        if (!k) return -1;
        if (p->nkernels) memcpy(k, p->kernels, sizeof *k * (size_t)p->nkernels);
        p->kernels = k;
        sp->cap_k = cap;
    }
    tir_kernel *k = &p->kernels[p->nkernels];
    memset(k, 0, sizeof *k);
    for (int d = 0; d < 3; d++) k->grid[d] = k->block[d] = 1;
    tir_stmt_visit(root, extents, NULL, k);
    buf_set used = {.n = 0};
    tir_stmt_visit(root, used_stmt, used_expr, &used);
    tir_buffer **params = te_alloc(sp->ctx, sizeof(tir_buffer *) * (size_t)(used.n + 1));
    k->arg_slots = te_alloc(sp->ctx, sizeof(int) * (size_t)(used.n + 1));
    if (!params || !k->arg_slots) return -1;
    int np = 0;
    for (int i = 0; i < sp->f->nparams; i++)
        for (int j = 0; j < used.n; j++)
            if (used.bufs[j] == sp->f->params[i]) {
                k->arg_slots[np] = i;
                params[np++] = sp->f->params[i];
            }
    for (int w = 0; w < p->nworkspace; w++)
        for (int j = 0; j < used.n; j++)
            if (used.bufs[j] == p->workspace[w]) {
                k->arg_slots[np] = -w - 1;
                params[np++] = p->workspace[w];
            }
    const char *name = te_sprintf(sp->ctx, "%s_kernel%d", sp->f->name, p->nkernels);
    k->func = tir_func_new(sp->ctx, name, np, params, root);
    if (!k->func) return -1;
    p->nkernels++;
    return 0;
}

/* The host walk: sequences and ATTRs pass through, allocations become
 * workspaces, outermost thread-bound loops kernels; anything else is an
 * error. */
static int host_only(tir_visitor *v, const tir_stmt *s) {
    splitter *sp = v->user;
    if (s->kind == TIR_SEQ || s->kind == TIR_NOOP || s->kind == TIR_ALLOCATE ||
        s->kind == TIR_ATTR || (s->kind == TIR_FOR && s->u.loop.for_kind == TIR_FOR_THREAD))
        return 0;
    return te_error(sp->ctx, "split_host_device: '%s' has host code other than kernels and "
                             "allocations (run tir_verify_gpu first)",
                    sp->f->name);
}

static int host_alloc(tir_visitor *v, const tir_stmt *s) {
    splitter *sp = v->user;
    tir_device_program *p = sp->p;
    if (p->nworkspace == sp->cap_ws) {
        int cap = sp->cap_ws ? 2 * sp->cap_ws : 4;
        tir_buffer **w = te_alloc(sp->ctx, sizeof *w * (size_t)cap);
        if (!w) return -1;
        if (p->nworkspace) memcpy(w, p->workspace, sizeof *w * (size_t)p->nworkspace);
        p->workspace = w;
        sp->cap_ws = cap;
    }
    p->workspace[p->nworkspace++] = s->u.alloc.buffer;
    return tir_visit_children(v, s);
}

static int host_kernel(tir_visitor *v, const tir_stmt *s) {
    return add_kernel(v->user, (tir_stmt *)s);
}

tir_device_program *tir_split_host_device(te_ctx *ctx, const tir_func *f) {
    if (!ctx) return NULL;
    if (!f || !f->body) return tir__null_operand(ctx, "split_host_device");
    splitter sp = {.ctx = ctx, .f = f};
    sp.p = te_alloc(ctx, sizeof *sp.p);
    if (!sp.p) return NULL;
    sp.p->host = f;
    tir_visitor v = {
        .user = &sp,
        .pre = host_only,
        .kind = {
            [TIR_ALLOCATE] = host_alloc,
            [TIR_FOR] = host_kernel,
        },
    };
    if (tir_visit(&v, f->body)) return NULL;
    return sp.p;
}
