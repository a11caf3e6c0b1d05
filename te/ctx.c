/*
 * te/ctx.c — the te_ctx: a chunked bump arena (every node of a ctx dies
 * with it, so there is no per-node free), the last error message, ids,
 * and the record of which compute op owns which axis.
 *
 * Chunks start at 64 KiB and double up to 4 MiB, so a ctx holding a few
 * nodes stays small while one holding millions makes few mallocs. An
 * allocation larger than a quarter of a chunk gets a chunk of its own,
 * which keeps the current chunk's free tail in use.
 */
#include <stdio.h>
#include <stdlib.h>

#include "te/te_internal.h"

#define CHUNK_MIN ((size_t)64 << 10)
#define CHUNK_MAX ((size_t)4 << 20)

static te__chunk *new_chunk(te_ctx *ctx, size_t size);

te_ctx *te_ctx_new(void) {
    te_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return NULL;
    ctx->next_chunk_size = CHUNK_MIN;
    ctx->next_id = 1;
    /* The first chunk up front, so cur/end are never NULL. */
    te__chunk *c = new_chunk(ctx, CHUNK_MIN);
    if (!c) {
        free(ctx);
        return NULL;
    }
    ctx->chunks = c;
    ctx->cur = (char *)c + TE__CHUNK_HDR;
    ctx->end = ctx->cur + c->size;
    return ctx;
}

void te_ctx_free(te_ctx *ctx) {
    if (!ctx) return;
    te__chunk *c = ctx->chunks;
    while (c) {
        te__chunk *n = c->next;
        free(c);
        c = n;
    }
    free(ctx->errmsg);
    free(ctx->owned.keys);
    free(ctx->owned.vals);
    free(ctx);
}

static te__chunk *new_chunk(te_ctx *ctx, size_t size) {
    if (size > SIZE_MAX - TE__CHUNK_HDR) return NULL;
    te__chunk *c = calloc(1, TE__CHUNK_HDR + size);
    if (!c) return NULL;
    c->size = size;
    ctx->arena_bytes += size;
    return c;
}

void *te__alloc_slow(te_ctx *ctx, size_t size) {
    size_t need = (size + 15u) & ~(size_t)15u;
    if (need < size) {
        te_error(ctx, "te_alloc: %zu bytes is too large", size);
        return NULL;
    }
    if (need == 0) need = 16;
    if (need > ctx->next_chunk_size / 4) {
        /* A dedicated chunk, linked behind the current one so that the
         * current chunk's free space keeps being used. */
        te__chunk *c = new_chunk(ctx, need);
        if (!c) {
            te_error(ctx, "te_alloc: out of memory allocating %zu bytes", size);
            return NULL;
        }
        c->next = ctx->chunks->next;
        ctx->chunks->next = c;
        return (char *)c + TE__CHUNK_HDR;
    }
    te__chunk *c = new_chunk(ctx, ctx->next_chunk_size);
    if (!c) {
        te_error(ctx, "te_alloc: out of memory allocating %zu bytes", size);
        return NULL;
    }
    if (ctx->next_chunk_size < CHUNK_MAX) ctx->next_chunk_size *= 2;
    c->next = ctx->chunks;
    ctx->chunks = c;
    ctx->cur = (char *)c + TE__CHUNK_HDR + need;
    ctx->end = (char *)c + TE__CHUNK_HDR + c->size;
    return (char *)c + TE__CHUNK_HDR;
}

void *te_alloc(te_ctx *ctx, size_t size) {
    if (!ctx) return NULL;
    return te__alloc(ctx, size);
}

char *te_strdup(te_ctx *ctx, const char *s) {
    if (!ctx || !s) return NULL;
    size_t n = strlen(s);
    char *d = te__alloc(ctx, n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

static char *vsprintf_arena(te_ctx *ctx, const char *fmt, va_list ap) {
    char small[256];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) {
        va_end(ap2);
        return NULL;
    }
    char *d = te__alloc(ctx, (size_t)n + 1);
    if (d) {
        if ((size_t)n < sizeof small) memcpy(d, small, (size_t)n + 1);
        else vsnprintf(d, (size_t)n + 1, fmt, ap2);
    }
    va_end(ap2);
    return d;
}

char *te_sprintf(te_ctx *ctx, const char *fmt, ...) {
    if (!ctx || !fmt) return NULL;
    va_list ap;
    va_start(ap, fmt);
    char *d = vsprintf_arena(ctx, fmt, ap);
    va_end(ap);
    return d;
}

int te_verror(te_ctx *ctx, const char *fmt, va_list ap) {
    if (!ctx || !fmt) return -1;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n >= 0) {
        /* Formatted into a new buffer before the old one is freed: the
         * arguments may point into the old message. */
        char *m = malloc((size_t)n + 1);
        if (m) {
            vsnprintf(m, (size_t)n + 1, fmt, ap2);
            free(ctx->errmsg);
            ctx->errmsg = m;
        }
    }
    va_end(ap2);
    return -1;
}

int te_error(te_ctx *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    te_verror(ctx, fmt, ap);
    va_end(ap);
    return -1;
}

const char *te_ctx_errmsg(const te_ctx *ctx) {
    return ctx && ctx->errmsg ? ctx->errmsg : "";
}

void te_ctx_clear_error(te_ctx *ctx) {
    if (!ctx) return;
    free(ctx->errmsg);
    ctx->errmsg = NULL;
}

int te_ctx_next_id(te_ctx *ctx) { return ctx ? ctx->next_id++ : 0; }

size_t te_ctx_arena_bytes(const te_ctx *ctx) { return ctx ? ctx->arena_bytes : 0; }

/* ---- axis ownership ---- */

static size_t ptr_hash(const void *p, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)p;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return (size_t)h & (cap - 1);
}

te_tensor *te__axis_owner(const te_ctx *ctx, const te_expr *axis) {
    const te__axis_map *m = &ctx->owned;
    if (!m->cap) return NULL;
    for (size_t i = ptr_hash(axis, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) return NULL;
        if (m->keys[i] == axis) return m->vals[i];
    }
}

int te__set_axis_owner(te_ctx *ctx, const te_expr *axis, te_tensor *t) {
    te__axis_map *m = &ctx->owned;
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 64;
        const te_expr **nk = calloc(ncap, sizeof *nk);
        te_tensor **nv = calloc(ncap, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return te_error(ctx, "compute: out of memory recording axes");
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i]) continue;
            size_t j = ptr_hash(m->keys[i], ncap);
            while (nk[j]) j = (j + 1) & (ncap - 1);
            nk[j] = m->keys[i];
            nv[j] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = nk;
        m->vals = nv;
        m->cap = ncap;
    }
    size_t i = ptr_hash(axis, m->cap);
    while (m->keys[i] && m->keys[i] != axis) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) m->n++;
    m->keys[i] = axis;
    m->vals[i] = t;
    return 0;
}
