/* graph/memory_plan.h — intermediate values placed in one arena by
 * liveness (memory_plan.c says how). */
#ifndef LOOM_GR_MEMORY_PLAN_H
#define LOOM_GR_MEMORY_PLAN_H

#include <stddef.h>

typedef struct {
    size_t size; /* bytes */
    int first;   /* the group that writes it */
    int last;    /* the last group that reads it (>= first) */
} gr_mem_value;

/* Places n values: offsets[i] (64-byte aligned) such that two values
 * whose [first, last] intervals intersect never overlap in memory;
 * *arena is the bytes the arena needs. Returns 0, or -1 when out of
 * memory. */
int gr_plan_memory(int n, const gr_mem_value *v, size_t *offsets, size_t *arena);

#endif
