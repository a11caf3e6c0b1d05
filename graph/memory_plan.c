/* graph/memory_plan.c — buffers of a model's intermediate values placed in
 * one arena, reusing memory between values whose lifetimes do not overlap
 * (issue 32, part 4).
 *
 * The placement is TFLite's "greedy by size" offset calculation (Pisarchyk
 * and Lee, "Efficient Memory Management for Deep Neural Net Inference",
 * 2020): values in decreasing size, each at the lowest offset where it
 * overlaps no already-placed value that is alive at the same time. ONNX
 * Runtime's allocation planner and TVM's GraphPlanMemory reuse by liveness
 * too; sorting by size keeps large activations from fragmenting the arena.
 * Lifetimes are group indices: a value lives from the group that writes
 * it to the last group that reads it, inclusive, so a group's outputs
 * never share memory with its own inputs. */
#include "graph/memory_plan.h"

#include <stdlib.h>

#define ALIGN 64

typedef struct {
    int idx;
    size_t size;
} by_size;

static int cmp_size(const void *a, const void *b)
{
    const by_size *x = a, *y = b;
    if (x->size != y->size) return x->size < y->size ? 1 : -1;
    return x->idx - y->idx; /* deterministic */
}

typedef struct {
    size_t off, end;
} span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

int gr_plan_memory(int n, const gr_mem_value *v, size_t *offsets, size_t *arena)
{
    *arena = 0;
    if (n <= 0) return 0;
    by_size *order = malloc((size_t)n * sizeof *order);
    int *placed = malloc((size_t)n * sizeof *placed);
    span *busy = malloc((size_t)n * sizeof *busy);
    if (!order || !placed || !busy) {
        free(order), free(placed), free(busy);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        order[i].idx = i;
        order[i].size = (v[i].size + ALIGN - 1) / ALIGN * ALIGN;
    }
    qsort(order, (size_t)n, sizeof *order, cmp_size);
    int nplaced = 0;
    for (int j = 0; j < n; j++) {
        int i = order[j].idx;
        size_t size = order[j].size ? order[j].size : ALIGN;
        int nb = 0;
        for (int p = 0; p < nplaced; p++) {
            const gr_mem_value *o = &v[placed[p]];
            if (o->first <= v[i].last && v[i].first <= o->last)
                busy[nb++] = (span){offsets[placed[p]], offsets[placed[p]] + (o->size + ALIGN - 1) / ALIGN * ALIGN};
        }
        qsort(busy, (size_t)nb, sizeof *busy, cmp_span);
        size_t off = 0;
        for (int b = 0; b < nb; b++) {
            if (busy[b].off >= off + size) break; /* the gap before it fits */
            if (busy[b].end > off) off = busy[b].end;
        }
        offsets[i] = off;
        if (off + size > *arena) *arena = off + size;
        placed[nplaced++] = i;
    }
    free(order), free(placed), free(busy);
    return 0;
}
