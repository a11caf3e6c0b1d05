/* graph/fuse.c — the fusion partition of a model's main graph, TVM's
 * FuseOps (src/relay/analysis/graph_partitioner.cc) on ONNX nodes.
 *
 * The graph: one vertex per run node; an edge p -> c for each input of c
 * that p writes and whose contents are not known (known contents are
 * constants baked into the kernel, not data flow). An edge's pattern is its
 * consumer's kind, except that a broadcast consumer reading a value of its
 * own output shape is elementwise along that edge (so conv -> Add(bias)
 * is an elementwise edge). A node whose output is a graph output, or that
 * has no consumer, post-dominates nothing beyond itself: its value must be
 * materialized.
 *
 * Post-dominator tree: nodes are in topological order, so walking them
 * backwards each node's immediate post-dominator is the least common
 * ancestor of its consumers in the tree built so far; with it we keep the
 * max edge pattern over every path from the node to that post-dominator.
 *
 * Fusion, two phases over the nodes in order (TVM's phases 0 and 1; its
 * phase 2 fuses tuples, which ONNX graphs do not have). A node is tried
 * only while it is the last node (root) of its group; it then fuses into
 * its immediate post-dominator d when the rule of its group's kind allows,
 * pulling every node on a path from it to d (and their groups) into d's
 * group:
 *   out-fusable (phase 0): every path to d is elementwise and every group
 *     on it, d's included, is at most broadcast: Conv+Add(bias)+Relu;
 *   reduce (phase 0): the same, its epilogue (DESIGN.md: a reduction takes
 *     its elementwise neighbours; TVM's kCommReduce takes no consumers);
 *   elementwise/broadcast (both phases): the paths are at most injective or
 *     d is reached through a reduce edge, the groups between are at most
 *     injective and d's group is anything but opaque: producers inline into
 *     a reduction, side branches join an anchor's group through its
 *     elementwise Add, but an elementwise node before a Conv (its edge is
 *     out-fusable) stays outside it, as in TVM;
 *   injective (phase 1, after anchors are done): every group on the paths,
 *     d's included, is at most injective.
 * Why the groups are sound: d post-dominates the node, so every consumer of
 * a node pulled in lies on a path to d and is pulled in too; by induction
 * every member of a group reaches its root inside the group and only the
 * root's outputs are read outside it. Then a path leaving a group G (from
 * its root r) and coming back would reach r again, a cycle: groups are
 * convex, and an edge G -> H goes from r_G to a member of H, which reaches
 * r_H, so numbering groups by their root's node index is topological.
 * The rules admit at most one node of kind >= reduce per group (an anchor
 * fuses only into groups of kind <= broadcast; a node of kind <= broadcast
 * brings none).
 *
 * The kind a group's rule and the path checks see is TVM's group pattern:
 * its root's own kind, or its anchor's (out-fusable or reduce) once one
 * has joined; so a Transpose fused into an elementwise Add leaves the Add
 * free to join a Softmax after it. The kind reported per group is the max
 * of its members'.
 *
 * Where this differs from TVM on purpose: reductions take elementwise
 * consumers (above); the node limit counts exactly the nodes of the merged
 * groups (TVM may count a group twice). On a ResNet residual
 * block this gives TVM's groups: [Conv+BN+Relu], [Conv+BN+Add+Relu] (the
 * skip value feeds a Conv, an out-fusable edge, so it ends its own group);
 * on a BERT layer: [MatMul+Add(bias)], [Reshape+Transpose] per head split,
 * [MatMul+Div+Add(mask)+Softmax+MatMul] (attention, a third phase of
 * Loom's: TVM's rules give [MatMul+Div+Add], [Softmax], [MatMul], and the
 * scores between them go through memory), [Transpose+Reshape],
 * [MatMul+Add+Add(residual)], [LayerNormalization], [MatMul+Add+Gelu
 * chain], ...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/fuse.h"
#include "graph/gr_internal.h"

typedef struct {
    int node;
    gr_op_kind pat;
} fz_edge;

typedef struct {
    const gr_graph *g;
    int n;
    bool *run;
    bool *ext;         /* an output is a graph output */
    gr_op_kind *nkind; /* per node */
    int *eoff;         /* consumers of node i: edges[eoff[i] .. eoff[i+1]) */
    fz_edge *edges;
    int *ipdom;        /* -1: none (the exit) */
    int *depth;
    gr_op_kind *ppat;  /* max edge pattern on the paths to ipdom */
    int *uf;           /* union-find parent; attributes below at roots */
    int *size;
    gr_op_kind *gkind; /* the max of the members' kinds */
    gr_op_kind *rkind; /* the kind the rules see (TVM's group pattern) */
    int *mark;         /* visit stamps */
    int stamp;
    int *stack;
    int *visited;      /* the nodes of the last path check */
    int nvisited;
} fz;

static gr_op_kind kmax(gr_op_kind a, gr_op_kind b) { return a > b ? a : b; }

/* Whether value v carries data between run nodes. */
static bool is_edge_value(const gr_graph *g, int v)
{
    return v >= 0 && g->values[v].kind == GR_VALUE_NODE && !g->values[v].data &&
           g->values[v].producer >= 0;
}

static bool node_runs(const gr_graph *g, const gr_node *n)
{
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0 && !g->values[n->outputs[k]].data) return true;
    return false;
}

static bool same_shape(const gr_type *a, const gr_type *b)
{
    if (a->ndim < 0 || a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

static gr_op_kind edge_pattern(const fz *f, int v, int consumer)
{
    gr_op_kind k = f->nkind[consumer];
    const gr_node *c = &f->g->nodes[consumer];
    if (k == GR_KIND_BROADCAST && c->n_outputs > 0 && c->outputs[0] >= 0 &&
        same_shape(&f->g->values[v].type, &f->g->values[c->outputs[0]].type))
        return GR_KIND_ELEMWISE;
    return k;
}

static void fz_free(fz *f)
{
    free(f->run);
    free(f->ext);
    free(f->nkind);
    free(f->eoff);
    free(f->edges);
    free(f->ipdom);
    free(f->depth);
    free(f->ppat);
    free(f->uf);
    free(f->size);
    free(f->gkind);
    free(f->rkind);
    free(f->mark);
    free(f->stack);
    free(f->visited);
}

static bool fz_alloc(fz *f)
{
    size_t n = (size_t)f->n + 1;
    f->run = calloc(n, sizeof *f->run);
    f->ext = calloc(n, sizeof *f->ext);
    f->nkind = calloc(n, sizeof *f->nkind);
    f->eoff = calloc(n + 1, sizeof *f->eoff);
    f->ipdom = calloc(n, sizeof *f->ipdom);
    f->depth = calloc(n, sizeof *f->depth);
    f->ppat = calloc(n, sizeof *f->ppat);
    f->uf = calloc(n, sizeof *f->uf);
    f->size = calloc(n, sizeof *f->size);
    f->gkind = calloc(n, sizeof *f->gkind);
    f->rkind = calloc(n, sizeof *f->rkind);
    f->mark = calloc(n, sizeof *f->mark);
    f->stack = calloc(n, sizeof *f->stack);
    f->visited = calloc(n, sizeof *f->visited);
    return f->run && f->ext && f->nkind && f->eoff && f->ipdom && f->depth && f->ppat && f->uf &&
           f->size && f->gkind && f->rkind && f->mark && f->stack && f->visited;
}

/* The consumer lists (CSR): counted, then filled. */
static bool build_edges(fz *f)
{
    const gr_graph *g = f->g;
    size_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int c = 0; c < f->n; c++) {
            if (!f->run[c]) continue; /* a folded node (Shape) reads no data */
            const gr_node *n = &g->nodes[c];
            for (int k = 0; k < n->n_inputs; k++) {
                int v = n->inputs[k];
                /* A read of the type alone moves no data: no edge. */
                if (!is_edge_value(g, v) || gr_input_type_only(n, k)) continue;
                int p = g->values[v].producer;
                if (pass == 0) {
                    f->eoff[p + 1]++;
                } else {
                    f->edges[f->stack[p]++] = (fz_edge){c, edge_pattern(f, v, c)};
                }
            }
        }
        if (pass == 0) {
            for (int i = 0; i < f->n; i++) f->eoff[i + 1] += f->eoff[i];
            total = (size_t)f->eoff[f->n];
            f->edges = malloc((total ? total : 1) * sizeof *f->edges);
            if (!f->edges) return false;
            for (int i = 0; i < f->n; i++) f->stack[i] = f->eoff[i]; /* fill cursors */
        }
    }
    return true;
}

static int lca(const fz *f, int a, int b, gr_op_kind *pat)
{
    while (a != b) {
        if (a < 0 || b < 0) return -1;
        if (f->depth[a] < f->depth[b]) {
            *pat = kmax(*pat, f->ppat[b]);
            b = f->ipdom[b];
        } else if (f->depth[b] < f->depth[a]) {
            *pat = kmax(*pat, f->ppat[a]);
            a = f->ipdom[a];
        } else {
            *pat = kmax(*pat, kmax(f->ppat[a], f->ppat[b]));
            a = f->ipdom[a];
            b = f->ipdom[b];
        }
    }
    return a;
}

static void post_dominators(fz *f)
{
    for (int i = f->n - 1; i >= 0; i--) {
        f->ipdom[i] = -1;
        f->depth[i] = 1;
        f->ppat[i] = GR_KIND_OPAQUE;
        if (!f->run[i] || f->ext[i] || f->eoff[i] == f->eoff[i + 1]) continue;
        gr_op_kind pat = GR_KIND_ELEMWISE;
        int d = f->edges[f->eoff[i]].node;
        for (int e = f->eoff[i]; e < f->eoff[i + 1]; e++) {
            if (e > f->eoff[i]) d = lca(f, d, f->edges[e].node, &pat);
            pat = kmax(pat, f->edges[e].pat);
            if (d < 0) break;
        }
        if (d < 0) continue;
        f->ipdom[i] = d;
        f->depth[i] = f->depth[d] + 1;
        f->ppat[i] = pat;
    }
}

static int find(fz *f, int i)
{
    int r = i;
    while (f->uf[r] != r) r = f->uf[r];
    while (f->uf[i] != r) {
        int next = f->uf[i];
        f->uf[i] = r;
        i = next;
    }
    return r;
}

typedef enum { COND_ANCHOR, COND_ELEMWISE, COND_INJECTIVE } fz_cond;

static bool cond_ok(fz_cond c, gr_op_kind k, bool is_sink)
{
    switch (c) {
    case COND_ANCHOR: return k <= GR_KIND_BROADCAST;
    case COND_ELEMWISE: return is_sink ? k != GR_KIND_OPAQUE : k <= GR_KIND_INJECTIVE;
    case COND_INJECTIVE: return k <= GR_KIND_INJECTIVE;
    }
    return false;
}

/* Visits every node on a path from src to sink (src and sink included,
 * nothing past sink) into f->visited; false when a group on the way breaks
 * the condition or the merged group would exceed GR_FUSE_MAX_NODES. */
static bool check_paths(fz *f, int src, int sink, fz_cond cond)
{
    f->stamp++;
    f->nvisited = 0;
    int top = 0;
    f->mark[src] = f->stamp;
    f->visited[f->nvisited++] = src;
    f->stack[top++] = src;
    while (top > 0) {
        int v = f->stack[--top];
        for (int e = f->eoff[v]; e < f->eoff[v + 1]; e++) {
            int c = f->edges[e].node;
            if (f->mark[c] == f->stamp) continue;
            f->mark[c] = f->stamp;
            f->visited[f->nvisited++] = c;
            if (!cond_ok(cond, f->rkind[find(f, c)], c == sink)) return false;
            if (c != sink) f->stack[top++] = c;
        }
    }
    /* The merged size: each group touched once (roots stamped anew). */
    f->stamp++;
    int total = 0;
    for (int k = 0; k < f->nvisited; k++) {
        int r = find(f, f->visited[k]);
        if (f->mark[r] == f->stamp) continue;
        f->mark[r] = f->stamp;
        total += f->size[r];
    }
    return total <= GR_FUSE_MAX_NODES;
}

static void commit(fz *f, int sink)
{
    int target = find(f, sink);
    for (int k = 0; k < f->nvisited; k++) {
        int r = find(f, f->visited[k]);
        if (r == target) continue;
        f->uf[r] = target;
        f->size[target] += f->size[r];
        f->gkind[target] = kmax(f->gkind[target], f->gkind[r]);
        if (f->rkind[r] == GR_KIND_REDUCE || f->rkind[r] == GR_KIND_OUT_FUSABLE)
            f->rkind[target] = f->rkind[r];
    }
}

static void run_phase(fz *f, int phase)
{
    for (int i = 0; i < f->n; i++) {
        if (!f->run[i] || find(f, i) != i) continue; /* absorbed: its root decides */
        gr_op_kind k = f->rkind[i];
        int d = f->ipdom[i];
        if (k == GR_KIND_OPAQUE || d < 0) continue;
        gr_op_kind p = f->ppat[i];
        fz_cond cond;
        if (k == GR_KIND_OUT_FUSABLE || k == GR_KIND_REDUCE) {
            if (phase != 0 || p != GR_KIND_ELEMWISE) continue;
            cond = COND_ANCHOR;
        } else if (k <= GR_KIND_BROADCAST) {
            if (p > GR_KIND_INJECTIVE && p != GR_KIND_REDUCE) continue;
            cond = COND_ELEMWISE;
        } else {
            if (phase != 1) continue; /* anchors first, so they keep their chains */
            cond = COND_INJECTIVE;
        }
        if (check_paths(f, i, d, cond)) commit(f, d);
    }
}

/* Phase 2 (Loom's, after TVM's two): each attention chain
 * (gr_attention_chain) and the groups its nodes are in become one group,
 * when that keeps the invariants: every node of the union but its last
 * group's root reads only into the union (and is no graph output), so
 * following readers from any member ends at that root, the only node
 * read outside; then the union is convex and its root still orders it. */
static void fuse_attention(fz *f, const gr_model *m)
{
    for (int s = 0; s < f->n; s++) {
        int chain[5], len = f->run[s] ? gr_attention_chain(m, s, chain) : 0;
        if (len < 3) continue;
        int root = find(f, chain[len - 1]);
        bool ok = true;
        for (int k = 0; k < len && ok; k++) ok = f->run[chain[k]];
        if (!ok) continue;
        /* Mark the chain's groups' roots, then check every member. */
        f->stamp++;
        for (int k = 0; k < len; k++) f->mark[find(f, chain[k])] = f->stamp;
        int total = 0;
        for (int i = 0; i < f->n && ok; i++) {
            if (!f->run[i] || f->mark[find(f, i)] != f->stamp) continue;
            total++;
            if (i == root) continue;
            if (f->ext[i] || f->eoff[i] == f->eoff[i + 1]) ok = false;
            for (int e = f->eoff[i]; ok && e < f->eoff[i + 1]; e++)
                ok = f->mark[find(f, f->edges[e].node)] == f->stamp;
        }
        if (!ok || total > GR_FUSE_MAX_NODES) continue;
        for (int k = 0; k < len; k++) {
            int r = find(f, chain[k]);
            if (r == root) continue;
            f->uf[r] = root;
            f->size[root] += f->size[r];
            f->gkind[root] = kmax(f->gkind[root], f->gkind[r]);
        }
    }
}

/* Numbers the groups by their root's node index and fills *out. */
static bool emit(fz *f, gr_partition *out)
{
    int n = f->n, ngroups = 0;
    out->group_of = malloc(((size_t)n + 1) * sizeof *out->group_of);
    if (!out->group_of) return false;
    for (int i = 0; i < n; i++) {
        out->group_of[i] = -1;
        if (f->run[i] && find(f, i) == i) f->stack[i] = ngroups++;
    }
    out->ngroups = ngroups;
    out->anchor = malloc(((size_t)ngroups + 1) * sizeof *out->anchor);
    out->kind = malloc(((size_t)ngroups + 1) * sizeof *out->kind);
    if (!out->anchor || !out->kind) return false;
    for (int i = 0; i < n; i++) {
        if (!f->run[i]) continue;
        int r = find(f, i), gid = f->stack[r];
        out->group_of[i] = gid;
        if (i == r) {
            out->kind[gid] = f->gkind[r];
            out->anchor[gid] = r;
        }
    }
    for (int i = 0; i < n; i++)
        if (f->run[i] && (f->nkind[i] == GR_KIND_REDUCE || f->nkind[i] == GR_KIND_OUT_FUSABLE))
            out->anchor[out->group_of[i]] = i;
    return true;
}

int gr_fuse(const gr_model *m, bool fuse, gr_partition *out, char **err)
{
    if (out) memset(out, 0, sizeof *out);
    if (!m || !m->graph || !out) {
        gr_set_err(err, "gr_fuse: %s is NULL", !out ? "the partition" : "the model");
        return -1;
    }
    const gr_graph *g = m->graph;
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (v < 0 || g->values[v].data || g->values[v].type.ndim >= 0) continue;
            char label[96];
            if (n->name && *n->name)
                snprintf(label, sizeof label, "'%.80s'", n->name);
            else
                snprintf(label, sizeof label, "#%d", i);
            gr_set_err(err, "%s: node %s (%s) output '%s' has no inferred shape: fusion runs "
                       "after gr_infer_shapes", m->path ? m->path : "model", label, n->op_type,
                       g->values[v].name);
            return -1;
        }
    }
    /* The post-dominator walk needs producers before consumers, as ONNX
     * requires and the loader checks; a graph built by hand may not. */
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            if (v < 0 || g->values[v].kind != GR_VALUE_NODE || g->values[v].producer < i) continue;
            gr_set_err(err, "%s: node #%d (%s) reads '%s' before node #%d writes it: nodes must "
                       "be in topological order", m->path ? m->path : "model", i, n->op_type,
                       g->values[v].name, g->values[v].producer);
            return -1;
        }
    }
    fz f = {.g = g, .n = g->n_nodes};
    if (!fz_alloc(&f)) goto oom;
    for (int i = 0; i < f.n; i++) {
        f.run[i] = node_runs(g, &g->nodes[i]);
        f.nkind[i] = gr_node_kind(g, i);
        f.uf[i] = i;
        f.size[i] = 1;
        f.gkind[i] = f.nkind[i];
        f.rkind[i] = f.nkind[i];
    }
    for (int o = 0; o < g->n_outputs; o++) {
        int v = g->outputs[o];
        if (is_edge_value(g, v)) f.ext[g->values[v].producer] = true;
    }
    if (!build_edges(&f)) goto oom;
    if (fuse) {
        post_dominators(&f);
        run_phase(&f, 0);
        run_phase(&f, 1);
        fuse_attention(&f, m);
    }
    if (!emit(&f, out)) goto oom;
    fz_free(&f);
    return 0;
oom:
    fz_free(&f);
    gr_partition_free(out);
    gr_set_err(err, "gr_fuse: out of memory partitioning %d nodes", g->n_nodes);
    return -1;
}

void gr_partition_free(gr_partition *p)
{
    if (!p) return;
    free(p->group_of);
    free(p->anchor);
    free(p->kind);
    memset(p, 0, sizeof *p);
}

void gr_partition_print(const gr_model *m, const gr_partition *p, FILE *out)
{
    if (!m || !m->graph || !p || !out) return;
    const gr_graph *g = m->graph;
    /* Groups in id order; members in node order: one scan per group keeps
     * this allocation-free. */
    for (int gid = 0; gid < p->ngroups; gid++) {
        fprintf(out, "g%d %s %s:", gid, gr_op_kind_name(p->kind[gid]),
                g->nodes[p->anchor[gid]].op_type);
        bool first = true;
        for (int i = 0; i < g->n_nodes; i++) {
            if (p->group_of[i] != gid) continue;
            fprintf(out, "%s%s", first ? " " : "+", g->nodes[i].op_type);
            first = false;
        }
        fputc('\n', out);
    }
}
