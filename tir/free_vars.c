/*
 * tir/free_vars.c — what a statement needs from its surroundings: the
 * variables and buffers it uses but does not define. Backends outline
 * parallel loop bodies (and, later, GPU kernels) into functions whose
 * environment holds exactly these (TVM's LLVM backend does the same for
 * its parallel closures).
 */
#include <stdlib.h>
#include <string.h>

#include "loom/tir.h"

typedef struct {
    const void **keys;
    int n, cap;
} key_list;

typedef struct {
    key_list used, bufs, defined;
    bool oom;
} walk;

static bool key_has(const key_list *l, const void *k) {
    for (int i = 0; i < l->n; ++i)
        if (l->keys[i] == k) return true;
    return false;
}

static void key_add(walk *w, key_list *l, const void *k) {
    if (key_has(l, k)) return;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        const void **p = realloc(l->keys, (size_t)cap * sizeof *p);
        if (!p) {
            w->oom = true;
            return;
        }
        l->keys = p;
        l->cap = cap;
    }
    l->keys[l->n++] = k;
}

static void use_buffer(walk *w, const tir_buffer *b) {
    key_add(w, &w->used, b);
    key_add(w, &w->bufs, b);
}

static void visit_expr(const te_expr *e, void *user) {
    walk *w = user;
    if (!e) return;
    if (e->kind == TE_VAR) {
        key_add(w, &w->used, e);
        return;
    }
    if (e->kind == TE_LOAD) use_buffer(w, e->u.load.buffer);
    if (e->kind == TE_BUFFER_LOAD) use_buffer(w, e->u.bload.buffer);
    te_expr_visit_children(e, visit_expr, w);
}

static void visit_stmt(const tir_stmt *s, void *user) {
    walk *w = user;
    switch (s->kind) {
    case TIR_FOR: key_add(w, &w->defined, s->u.loop.var); break;
    case TIR_STORE: use_buffer(w, s->u.store.buffer); break;
    case TIR_BUFFER_STORE: use_buffer(w, s->u.bstore.buffer); break;
    case TIR_ALLOCATE:
        key_add(w, &w->defined, s->u.alloc.buffer);
        if (s->u.alloc.buffer->data) key_add(w, &w->defined, s->u.alloc.buffer->data);
        break;
    case TIR_ALLREDUCE: key_add(w, &w->defined, s->u.allreduce.result); break;
    case TIR_LET: key_add(w, &w->defined, s->u.let.var); break;
    default: break;
    }
}

int tir_stmt_free_vars(const tir_stmt *s, int nbound, const void *const *bound,
                       tir_free_vars *out) {
    memset(out, 0, sizeof *out);
    walk w;
    memset(&w, 0, sizeof w);
    for (int i = 0; i < nbound; ++i) key_add(&w, &w.defined, bound[i]);
    if (s) tir_stmt_visit(s, visit_stmt, visit_expr, &w);
    int rc = -1;
    if (!w.oom) {
        out->keys = malloc(sizeof *out->keys * (size_t)(w.used.n + 1));
        out->is_buffer = malloc(sizeof *out->is_buffer * (size_t)(w.used.n + 1));
        if (out->keys && out->is_buffer) {
            for (int i = 0; i < w.used.n; ++i) {
                const void *k = w.used.keys[i];
                if (key_has(&w.defined, k)) continue;
                out->keys[out->n] = k;
                out->is_buffer[out->n++] = key_has(&w.bufs, k);
            }
            rc = 0;
        } else {
            tir_free_vars_release(out);
        }
    }
    free(w.used.keys);
    free(w.bufs.keys);
    free(w.defined.keys);
    return rc;
}

void tir_free_vars_release(tir_free_vars *fv) {
    if (!fv) return;
    free(fv->keys);
    free(fv->is_buffer);
    memset(fv, 0, sizeof *fv);
}
