/* graph/names.c — value names to indices while a graph loads. */
#include "graph/gr_internal.h"
#include "loom/te.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The library's one string hash (te_hash_str); the table's order is
 * never observed, so its values need only spread the names. */
static size_t hash(const char *s) { return (size_t)te_hash_str(s); }

bool gr_names_init(gr_names *t, size_t expect)
{
    size_t cap = 16;
    while (cap < expect * 2 + 1) cap *= 2;
    t->cap = cap;
    t->count = 0;
    t->keys = calloc(cap, sizeof *t->keys);
    t->vals = calloc(cap, sizeof *t->vals);
    if (!t->keys || !t->vals) {
        gr_names_free(t);
        return false;
    }
    return true;
}

void gr_names_free(gr_names *t)
{
    free(t->keys);
    free(t->vals);
    t->keys = NULL;
    t->vals = NULL;
    t->cap = t->count = 0;
}

int gr_names_get(const gr_names *t, const char *key)
{
    if (!t->cap) return -1;
    for (size_t i = hash(key) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        if (!t->keys[i]) return -1;
        if (strcmp(t->keys[i], key) == 0) return t->vals[i];
    }
}

bool gr_names_put(gr_names *t, const char *key, int val)
{
    if ((t->count + 1) * 2 > t->cap) {
        gr_names bigger;
        if (!gr_names_init(&bigger, t->cap)) return false;
        for (size_t i = 0; i < t->cap; i++)
            if (t->keys[i]) gr_names_put(&bigger, t->keys[i], t->vals[i]);
        gr_names_free(t);
        *t = bigger;
    }
    size_t i = hash(key) & (t->cap - 1);
    while (t->keys[i] && strcmp(t->keys[i], key) != 0) i = (i + 1) & (t->cap - 1);
    if (!t->keys[i]) t->count++;
    t->keys[i] = key;
    t->vals[i] = val;
    return true;
}

const char *gr_node_label(const gr_graph *g, int i, char *buf, size_t size)
{
    const gr_node *n = &g->nodes[i];
    if (n->name && *n->name) snprintf(buf, size, "node '%s' (%s)", n->name, n->op_type);
    else snprintf(buf, size, "node #%d (%s)", i, n->op_type);
    return buf;
}
