/* graph/arena.c — the loader's memory: one arena per model or tensor. */
#include "graph/gr_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gr_block {
    struct gr_block *next;
    max_align_t data[]; /* the allocation, aligned for any type */
} gr_block;

struct gr_arena {
    gr_block *blocks;
};

gr_arena *gr_arena_new(void) { return calloc(1, sizeof(gr_arena)); }

void gr_arena_free(gr_arena *a)
{
    if (!a) return;
    for (gr_block *b = a->blocks; b;) {
        gr_block *next = b->next;
        free(b);
        b = next;
    }
    free(a);
}

/* One malloc per allocation keeps it simple; a model has thousands of
 * small pieces at most, and its weights are single large blocks. */
void *gr_arena_alloc(gr_arena *a, size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes) || bytes > SIZE_MAX - sizeof(gr_block) - 1)
        return NULL;
    gr_block *b = calloc(1, sizeof(gr_block) + (bytes ? bytes : 1));
    if (!b) return NULL;
    b->next = a->blocks;
    a->blocks = b;
    return b->data;
}

char *gr_arena_strndup(gr_arena *a, const char *s, size_t len)
{
    char *c = gr_arena_alloc(a, len + 1, 1);
    if (c && len) memcpy(c, s, len);
    return c;
}

char *gr_arena_strdup(gr_arena *a, const char *s)
{
    if (!s) s = "";
    return gr_arena_strndup(a, s, strlen(s));
}

void gr_set_err(char **err, const char *fmt, ...)
{
    if (!err || *err) return;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(err, fmt, ap) < 0) *err = NULL;
    va_end(ap);
}

unsigned char *gr_read_file(const char *path, size_t *len, char **err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        gr_set_err(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    unsigned char *buf = NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        gr_set_err(err, "%s: cannot read: %s", path, strerror(errno));
        fclose(f);
        return NULL;
    }
    buf = malloc((size_t)size + 1);
    if (!buf) {
        gr_set_err(err, "%s: out of memory reading %ld bytes", path, size);
        fclose(f);
        return NULL;
    }
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
        gr_set_err(err, "%s: cannot read: %s", path, ferror(f) ? strerror(errno) : "short read");
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len = (size_t)size;
    return buf;
}

char *gr_dirname(gr_arena *a, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return gr_arena_strdup(a, ".");
    if (slash == path) return gr_arena_strdup(a, "/");
    return gr_arena_strndup(a, path, (size_t)(slash - path));
}
