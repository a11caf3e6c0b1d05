/* graph/exec.c — a model compiled to kernels and run on preallocated
 * buffers (issue 32, part 6).
 *
 * Compiling: shapes are inferred; nodes whose outputs inference already
 * knows (Shape, Constant, folded integer arithmetic) are not run; the
 * others form groups, each written as its workload key (group.h), so
 * groups with the same key (repeated blocks) share one kernel: built once
 * from the key by the same builder the tuner uses, scheduled and compiled.
 * Each group instance keeps its own prepared call (rt_prepare), because
 * the fixed inputs (weights) it pre-computes from differ per instance.
 *
 * Running: groups in topological order, each on the buffers of its
 * values; the kernels' parallel loops use the runtime's thread pool. */
#include "graph/fuse.h"
#include "graph/group.h"
#include "graph/lower.h"
#include "graph/memory_plan.h"
#include "graph/rewrite.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "loom/autotune.h"
#include "loom/codegen.h"
#include "loom/runtime.h"
#include "loom/schedule.h"
#include "loom/tuning_db.h"

typedef struct {
    char *key;
    char *label;
    uint64_t constant; /* the first instance's fixed inputs */
    int uses;
    rt_module *mod;
    bool tuned;
    bool stale;        /* tuned, and its current default was never timed */
    char how[256];     /* the record applied, or the default schedule chosen */
    char *err;         /* a failed build's message */
    int first_node;    /* for messages */
} gr_kernel;

typedef struct {
    int kernel;
    int nnodes;
    int *nodes;
    gr_group_io io;
    rt_prepared *prep;
    DLTensor **args; /* io.ninputs + io.noutputs views */
} gr_instance;

/* A value's storage: a view with Loom's shape (rank 0 as [1]). */
typedef struct {
    DLTensor dl;
    int64_t shape[TE_MAX_DIMS];
    bool have;  /* the value has storage */
} gr_buf;

struct gr_exec {
    gr_model *m;
    void *arena;       /* the exchanged values' memory */
    size_t arena_bytes, unshared_bytes;
    int nkernels;
    gr_kernel *kernels;
    int ngroups;
    gr_instance *groups;
    gr_buf *bufs; /* per value of the main graph */
    int ninputs;
    int *inputs;
    int noutputs;
    int *outputs;
    double *profile; /* per kernel, when gr_exec_profile set it */
    char *db_note;   /* gr_exec_db_note */
};

/* A value's DLTensor; an empty one (a zero extent: no kernel reads or
 * writes it, gr_infer_shapes) too, with no storage. */
static bool buf_init(gr_buf *b, const gr_value *v, void *data)
{
    int nd = v->type.ndim;
    if (!gr_te_shape(&v->type, &nd, b->shape)) {
        if (!gr_type_empty(&v->type) || nd > TE_MAX_DIMS) return false;
        memcpy(b->shape, v->type.shape, (size_t)nd * sizeof *b->shape);
    }
    b->dl = (DLTensor){.data = data, .device = {kDLCPU, 0}, .ndim = nd, .dtype = v->type.dtype,
                       .shape = b->shape};
    b->have = true;
    return true;
}

static size_t buf_bytes(const gr_buf *b)
{
    size_t n = 1;
    for (int d = 0; d < b->dl.ndim; d++) n *= (size_t)b->dl.shape[d];
    size_t per = b->dl.dtype.bits == 1 ? 1 : (size_t)(b->dl.dtype.bits / 8) * b->dl.dtype.lanes;
    return n * per;
}

void gr_exec_free(gr_exec *e)
{
    if (!e) return;
    for (int i = 0; i < e->ngroups; i++) {
        rt_prepared_free(e->groups[i].prep);
        gr_group_io_free(&e->groups[i].io);
        free(e->groups[i].args);
        free(e->groups[i].nodes);
    }
    for (int i = 0; i < e->nkernels; i++) {
        free(e->kernels[i].key);
        free(e->kernels[i].label);
        free(e->kernels[i].err);
        rt_module_free(e->kernels[i].mod);
    }
    free(e->arena);
    free(e->bufs);
    free(e->groups);
    free(e->kernels);
    free(e->inputs);
    free(e->outputs);
    free(e->db_note);
    free(e);
}

/* ---------------- planning: groups, keys, kernels ---------------- */

/* The groups of the run nodes: group_of[node] (-1: not run), numbered in
 * a topological order (graph/fuse.c; without fusion one group per run
 * node). Returns the group count or -1. */
static int form_groups(const gr_model *m, bool fuse, int *group_of, char **err)
{
    gr_partition p;
    if (gr_fuse(m, fuse, &p, err) != 0) return -1;
    memcpy(group_of, p.group_of, (size_t)m->graph->n_nodes * sizeof *group_of);
    int n = p.ngroups;
    gr_partition_free(&p);
    return n;
}

static char *group_label(const gr_graph *g, const gr_instance *inst)
{
    char buf[512] = "", name[300];
    for (int i = 0; i < inst->nnodes; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, sizeof buf - l, "%s%s", i ? "+" : "", g->nodes[inst->nodes[i]].op_type);
    }
    const gr_node *first = &g->nodes[inst->nodes[0]];
    if (first->name && *first->name) snprintf(name, sizeof name, " (node '%s')", first->name);
    else snprintf(name, sizeof name, " (node #%d)", inst->nodes[0]);
    size_t l = strlen(buf);
    snprintf(buf + l, sizeof buf - l, "%s", name);
    return strdup(buf);
}

/* NCHW[x]c convolutions (graph/pass_alter_layout.c), x the target's
 * float32 lanes; CPU (llvm) targets only, as the block is a CPU vector. */
static bool alter_layout(gr_model *m, const cg_target *t, char **err)
{
    if (t->kind != CG_TARGET_LLVM) return true;
    if (gr_pass_alter_layout(m, t->vector_lanes, NULL, err) < 0) return false;
    gr_dump_graph(m, gr_pass_count(), "alter_layout");
    return true;
}

/* Fills e's groups and kernels (keys, uses, labels; nothing built). */
static bool plan(gr_exec *e, const gr_compile_options *o, const cg_target *t, char **err)
{
    gr_model *m = e->m;
    gr_graph *g = m->graph;
    if (gr_infer_shapes(m, o->nshapes, o->shapes, err) != 0) return false;
    /* Inference refuses every operator without a lowering (all at once,
     * with their nodes): gr_op_supported and the rule tables agree, which
     * test_graph_group checks. */
    if (!o->no_passes && gr_optimize(m, NULL, err) < 0) return false;
    if (!o->no_layout && !alter_layout(m, t, err)) return false;
    int *group_of = malloc((size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof *group_of);
    if (!group_of) goto oom;
    int ng = form_groups(m, !o->no_fuse, group_of, err);
    if (ng < 0) {
        free(group_of);
        return false;
    }
    e->groups = calloc((size_t)(ng ? ng : 1), sizeof *e->groups);
    e->kernels = calloc((size_t)(ng ? ng : 1), sizeof *e->kernels);
    if (!e->groups || !e->kernels) {
        free(group_of);
        goto oom;
    }
    e->ngroups = ng;
    for (int i = 0; i < g->n_nodes; i++) {
        if (group_of[i] < 0) continue;
        gr_instance *inst = &e->groups[group_of[i]];
        int *nodes = realloc(inst->nodes, (size_t)(inst->nnodes + 1) * sizeof *nodes);
        if (!nodes) {
            free(group_of);
            goto oom;
        }
        inst->nodes = nodes;
        inst->nodes[inst->nnodes++] = i;
    }
    free(group_of);
    for (int gi = 0; gi < ng; gi++) {
        gr_instance *inst = &e->groups[gi];
        char *key = gr_group_key(m, inst->nnodes, inst->nodes, &inst->io, err);
        if (!key) return false;
        int k = 0;
        while (k < e->nkernels && strcmp(e->kernels[k].key, key) != 0) k++;
        if (k == e->nkernels) {
            e->kernels[k].key = key;
            e->kernels[k].label = group_label(g, inst);
            e->kernels[k].constant = inst->io.constant;
            e->kernels[k].first_node = inst->nodes[0];
            if (!e->kernels[k].label) goto oom;
            e->nkernels++;
        } else {
            free(key);
            /* A fixed input of one instance may be a run-time one of another
             * (the same shapes, a weight here, an activation there): only
             * inputs fixed in every instance are built as constants. */
            e->kernels[k].constant &= inst->io.constant;
        }
        e->kernels[k].uses++;
        inst->kernel = k;
    }
    return true;
oom:
    gr_set_err(err, "%s: out of memory compiling the model", m->path);
    return false;
}

int gr_extract_tasks(gr_model *m, const gr_compile_options *o, gr_task **tasks, int *ntasks,
                     char **err)
{
    gr_compile_options none = {0};
    *tasks = NULL;
    *ntasks = 0;
    if (!m || !m->graph) {
        gr_set_err(err, "gr_extract_tasks: no model");
        return -1;
    }
    gr_exec *e = calloc(1, sizeof *e);
    if (!e) {
        gr_set_err(err, "%s: out of memory", m->path);
        return -1;
    }
    e->m = m;
    int rc = -1;
    if (!o) o = &none;
    cg_target t;
    bool ok = cg_target_parse(o->target, &t, err) == 0 && plan(e, o, &t, err);
    cg_target_free(&t);
    if (ok) {
        gr_task *t = calloc((size_t)(e->nkernels ? e->nkernels : 1), sizeof *t);
        if (t) {
            for (int k = 0; k < e->nkernels; k++) {
                t[k].key = e->kernels[k].key;
                t[k].label = e->kernels[k].label;
                t[k].uses = e->kernels[k].uses;
                e->kernels[k].key = e->kernels[k].label = NULL;
            }
            *tasks = t;
            *ntasks = e->nkernels;
            rc = 0;
        } else {
            gr_set_err(err, "%s: out of memory", m->path);
        }
    }
    gr_exec_free(e);
    return rc;
}

void gr_tasks_free(gr_task *tasks, int ntasks)
{
    for (int i = 0; tasks && i < ntasks; i++) {
        free(tasks[i].key);
        free(tasks[i].label);
    }
    free(tasks);
}

/* ---------------- building kernels ---------------- */

typedef struct {
    gr_exec *e;
    const char *target;
    const char *tkey; /* record key of the target, when there is a db */
    tdb_db *db;
    pthread_mutex_t lock;
    int next;
} build_queue;

/* The kernel from the best record of its key, when the database has one
 * that replays and builds. */
/* The best records of the kernel's key, tried in order (a record that no
 * longer replays or builds gives way to the next). Only the query holds
 * the lock (one SQLite handle); replaying and compiling, which is where
 * the time goes, run in parallel with the other workers. */
enum { TUNED_TRIES = 4 };

/* Whether the kernel's current default schedule is missing from the
 * database: its records were then tuned against an older default (a later
 * Loom derives a different one), and one of them may now be slower than
 * the default the kernel would run without it. loomrun cannot time both
 * while compiling; it says so (gr_exec_db_note) and autotune --resume
 * times the new default. */
static bool default_untimed(build_queue *q, const char *key)
{
    char *dflt = tune_default_steps(key, q->target);
    if (!dflt) return false;
    pthread_mutex_lock(&q->lock);
    int has = tdb_has_steps(q->db, key, q->tkey, dflt);
    pthread_mutex_unlock(&q->lock);
    free(dflt);
    return has == 0;
}

static rt_module *build_tuned(build_queue *q, gr_kernel *k, te_ctx *ctx)
{
    tdb_record *rec = NULL;
    pthread_mutex_lock(&q->lock);
    int n = tdb_best(q->db, k->key, q->tkey, TUNED_TRIES, &rec);
    pthread_mutex_unlock(&q->lock);
    rt_module *mod = NULL;
    ops_built w;
    if (n > 0 && ops_build_key(ctx, k->key, &w) == 0) {
        cg_build_options bo = {0};
        bo.constant_args = w.constant_args & k->constant;
        for (int i = 0; i < n && !mod; i++) {
            mod = tdb_build_record(ctx, w.nouts, w.outs, w.nargs, w.args, &rec[i], q->target, &bo);
            if (mod) {
                k->tuned = true;
                k->stale = default_untimed(q, k->key);
                snprintf(k->how, sizeof k->how, "tuned: record %" PRId64 ", %.3f ms%s%s", rec[i].id,
                         rec[i].median * 1e3, i ? " (better records did not build)" : "",
                         k->stale ? "; this Loom's default schedule was never timed against "
                                    "it (tuned with an older Loom, or with --skip-default)"
                                  : "");
            }
        }
    }
    tdb_records_free(rec, n > 0 ? n : 0);
    return mod;
}

static rt_module *build_default(build_queue *q, gr_kernel *k, te_ctx *ctx)
{
    ops_built w;
    if (ops_build_key(ctx, k->key, &w) != 0) {
        k->err = strdup(te_ctx_errmsg(ctx));
        return NULL;
    }
    /* Derived from the group's structure: its anchor's register tile, or
     * its stages' loops annotated (autotune/default_schedule.c). */
    const char *how = NULL;
    sch_schedule *s = tune_default_schedule(ctx, &w, q->target, &how);
    snprintf(k->how, sizeof k->how, "default schedule: %s", how ? how : "?");
    rt_module *mod = NULL;
    if (s) {
        cg_build_options bo = {0};
        bo.constant_args = w.constant_args & k->constant;
        mod = cg_build(s, w.nargs, w.args, q->target, &bo);
    }
    if (!mod) k->err = strdup(te_ctx_errmsg(ctx));
    return mod;
}

static void *build_worker(void *arg)
{
    build_queue *q = arg;
    for (;;) {
        pthread_mutex_lock(&q->lock);
        int i = q->next++;
        pthread_mutex_unlock(&q->lock);
        if (i >= q->e->nkernels) return NULL;
        gr_kernel *k = &q->e->kernels[i];
        te_ctx *ctx = te_ctx_new();
        if (!ctx) {
            k->err = strdup("out of memory");
            continue;
        }
        if (q->db) k->mod = build_tuned(q, k, ctx);
        if (!k->mod) {
            te_ctx_free(ctx);
            ctx = te_ctx_new();
            if (ctx) k->mod = build_default(q, k, ctx);
        }
        te_ctx_free(ctx);
    }
}

static bool same_machine(const char *a, const char *b)
{
    size_t n = tdb_key_machine_len(a);
    return n == tdb_key_machine_len(b) && strncmp(a, b, n) == 0;
}

/* Refuses a database whose records of this model's kernels are all for
 * other machines: running defaults silently would hide the mistake.
 * Records of this machine for another thread count only are no mistake
 * (a model tuned on 1 thread, run on 2): the kernels run their defaults,
 * which beat another count's records (tune_threads_key), and
 * gr_exec_db_note says so. tkey: the record key of this run's nt threads. */
static bool check_db_target(gr_exec *e, tdb_db *db, const char *tkey, int nt, char **err)
{
    tdb_summary *s = NULL;
    int n = tdb_list(db, NULL, &s);
    if (n < 0) {
        gr_set_err(err, "%s: the tuning database: %s", e->m->path, tdb_errmsg(db));
        return false;
    }
    bool here = false;
    const char *other = NULL, *threads = NULL;
    for (int i = 0; i < n; i++) {
        if (s[i].nvalid == 0) continue;
        bool ours = false;
        for (int k = 0; k < e->nkernels && !ours; k++)
            ours = strcmp(e->kernels[k].key, s[i].workload_key) == 0;
        if (!ours) continue;
        if (strcmp(s[i].target, tkey) == 0) here = true;
        else if (same_machine(s[i].target, tkey)) threads = threads ? threads : s[i].target;
        else if (!other) other = s[i].target;
    }
    bool ok = here || threads || !other;
    if (!ok)
        gr_set_err(err, "%s: the tuning database has records of this model's kernels only for "
                        "target '%s', none for this target '%s': tune the model on this machine "
                        "(autotune --model) or compile for that target",
                   e->m->path, other, tkey);
    else if (!here && threads) {
        char note[1024];
        snprintf(note, sizeof note,
                 "the tuning database has records of this model's kernels for '%s' and none "
                 "for this run's %d thread%s ('%s'): every kernel runs its default schedule; "
                 "tune with autotune --threads %d, or run on the records' thread count",
                 threads, nt, nt == 1 ? "" : "s", tkey, nt);
        e->db_note = strdup(note);
    }
    tdb_summaries_free(s, n);
    return ok;
}

/* gr_exec_db_note for records tuned against older defaults. */
static void stale_note(gr_exec *e)
{
    int nstale = 0, ntuned = 0;
    for (int k = 0; k < e->nkernels; k++) {
        ntuned += e->kernels[k].tuned;
        nstale += e->kernels[k].stale;
    }
    if (nstale == 0 || e->db_note) return;
    char note[1024];
    snprintf(note, sizeof note,
             "%d of the %d tuned kernels run records that were never timed against this "
             "Loom's default schedule (tuned with an older Loom, or with --skip-default), and "
             "the default may be the faster; autotune --model %s --resume, with this database "
             "and thread count, times the current defaults (one trial each, counted in --trials: "
             "give %d more than the database's trials); --explain names the kernels",
             nstale, ntuned, e->m->path, nstale);
    e->db_note = strdup(note);
}

static bool build_kernels(gr_exec *e, const gr_compile_options *o, const char *target, char **err)
{
    build_queue q = {.e = e, .target = target, .db = o->db};
    char *tkey = NULL;
    if (o->db) {
        /* The records of programs timed on the threads the kernels run on. */
        int nthreads = rt_num_threads();
        tkey = tune_record_key(target, nthreads, err);
        if (!tkey) return false;
        if (!check_db_target(e, o->db, tkey, nthreads, err)) {
            free(tkey);
            return false;
        }
        q.tkey = tkey;
    }
    pthread_mutex_init(&q.lock, NULL);
    int jobs = o->jobs > 0 ? o->jobs : rt_num_cores();
    if (jobs > e->nkernels) jobs = e->nkernels;
    pthread_t th[64];
    int started = 0;
    for (int j = 1; j < jobs && j < 64; j++)
        if (pthread_create(&th[started], NULL, build_worker, &q) == 0) started++;
    build_worker(&q);
    for (int j = 0; j < started; j++) pthread_join(th[j], NULL);
    pthread_mutex_destroy(&q.lock);
    free(tkey);
    stale_note(e);
    for (int k = 0; k < e->nkernels; k++)
        if (!e->kernels[k].mod) {
            char label[400];
            gr_set_err(err, "%s: %s: %s", e->m->path,
                       gr_node_label(e->m->graph, e->kernels[k].first_node, label, sizeof label),
                       e->kernels[k].err ? e->kernels[k].err : "out of memory");
            return false;
        }
    return true;
}

/* The values groups write (their outputs, graph outputs among them) get
 * offsets in one arena (gr_plan_memory): each lives from the group that
 * writes it to the last that reads it, a graph output to the end. */
static bool place_values(gr_exec *e)
{
    const gr_graph *g = e->m->graph;
    int nv = g->n_values, n = 0;
    int *which = malloc((size_t)(nv ? nv : 1) * sizeof *which);
    int *slot = malloc((size_t)(nv ? nv : 1) * sizeof *slot);
    gr_mem_value *mv = calloc((size_t)(nv ? nv : 1), sizeof *mv);
    size_t *off = calloc((size_t)(nv ? nv : 1), sizeof *off);
    bool ok = which && slot && mv && off;
    for (int v = 0; ok && v < nv; v++) slot[v] = -1;
    for (int gi = 0; ok && gi < e->ngroups; gi++) {
        const gr_group_io *io = &e->groups[gi].io;
        for (int o = 0; o < io->noutputs; o++) {
            int v = io->outputs[o];
            if (!e->bufs[v].have || slot[v] >= 0) continue;
            slot[v] = n;
            which[n] = v;
            mv[n] = (gr_mem_value){buf_bytes(&e->bufs[v]), gi, gi};
            n++;
        }
        for (int i = 0; i < io->ninputs; i++) {
            int v = io->inputs[i];
            if (slot[v] >= 0 && mv[slot[v]].last < gi) mv[slot[v]].last = gi;
        }
    }
    for (int i = 0; ok && i < g->n_outputs; i++)
        if (slot[g->outputs[i]] >= 0) mv[slot[g->outputs[i]]].last = e->ngroups;
    size_t arena = 0;
    ok = ok && gr_plan_memory(n, mv, off, &arena) == 0;
    if (ok) {
        e->arena = aligned_alloc(64, arena ? (arena + 63) / 64 * 64 : 64);
        ok = e->arena != NULL;
    }
    for (int i = 0; ok && i < n; i++) {
        e->bufs[which[i]].dl.data = (char *)e->arena + off[i];
        e->unshared_bytes += mv[i].size;
    }
    e->arena_bytes = arena;
    free(which), free(slot), free(mv), free(off);
    return ok;
}

gr_exec *gr_compile(gr_model *m, const gr_compile_options *o, char **err)
{
    gr_compile_options none = {0};
    if (!o) o = &none;
    const char *target = o->target ? o->target : "llvm";
    if (!m || !m->graph) {
        gr_set_err(err, "gr_compile: no model");
        return NULL;
    }
    cg_target t;
    if (cg_target_parse(target, &t, err) != 0) return NULL;
    if (gr_register_builder() != 0) {
        gr_set_err(err, "gr_compile: could not register the group builder");
        cg_target_free(&t);
        return NULL;
    }
    gr_graph *g = m->graph;
    gr_exec *e = calloc(1, sizeof *e);
    if (!e) {
        cg_target_free(&t);
        goto oom;
    }
    e->m = m;
    bool planned = plan(e, o, &t, err);
    cg_target_free(&t);
    if (!planned) goto fail;
    e->bufs = calloc((size_t)(g->n_values ? g->n_values : 1), sizeof *e->bufs);
    e->inputs = calloc((size_t)(g->n_inputs ? g->n_inputs : 1), sizeof(int));
    e->outputs = calloc((size_t)(g->n_outputs ? g->n_outputs : 1), sizeof(int));
    if (!e->bufs || !e->inputs || !e->outputs) goto oom;

    /* Storage: constants in place, inputs bound at run time, the values
     * groups exchange in one arena placed by liveness; values inside a
     * fused group have none. */
    for (int v = 0; v < g->n_values; v++) {
        const gr_value *val = &g->values[v];
        if (val->kind == GR_VALUE_OUTER) continue;
        if (val->type.kind != GR_TYPE_TENSOR || val->type.ndim < 0) continue;
        gr_buf *b = &e->bufs[v];
        if (!buf_init(b, val, NULL)) continue; /* no Loom form: checked where used */
        if (val->data) b->dl.data = val->data->data;
    }
    if (!place_values(e)) goto oom;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->values[g->inputs[i]].kind == GR_VALUE_INPUT) e->inputs[e->ninputs++] = g->inputs[i];
    for (int i = 0; i < g->n_outputs; i++) e->outputs[e->noutputs++] = g->outputs[i];
    char why[96];
    for (int i = 0; i < e->noutputs; i++)
        if (!e->bufs[e->outputs[i]].have) {
            const gr_value *val = &g->values[e->outputs[i]];
            gr_set_err(err, "%s: graph output '%s' has no shape Loom can hold: %s", m->path,
                       val->name, gr_shape_problem(&val->type, why, sizeof why));
            goto fail;
        }
    for (int gi = 0; gi < e->ngroups; gi++) {
        gr_instance *inst = &e->groups[gi];
        int na = inst->io.ninputs + inst->io.noutputs;
        inst->args = calloc((size_t)na, sizeof *inst->args);
        if (!inst->args) goto oom;
        for (int a = 0; a < na; a++) {
            int v = a < inst->io.ninputs ? inst->io.inputs[a] : inst->io.outputs[a - inst->io.ninputs];
            /* an empty value is known, never computed (gr_infer_shapes): a
             * kernel reads one only to make elements out of nothing
             * (ReduceSum over an empty axis), which Loom does not lower */
            if (e->bufs[v].have && gr_type_empty(&g->values[v].type)) {
                char label[400];
                int d = 0;
                while (g->values[v].type.shape[d]) d++;
                gr_set_err(err, "%s: %s: reads value '%s', an empty tensor (dimension %d is 0), "
                                "into elements: Loom runs no kernel over an empty tensor", m->path,
                           gr_node_label(g, inst->nodes[0], label, sizeof label), g->values[v].name, d);
                goto fail;
            }
            if (!e->bufs[v].have) {
                char label[400];
                gr_set_err(err, "%s: %s: value '%s' has no shape Loom can hold: %s", m->path,
                           gr_node_label(g, inst->nodes[0], label, sizeof label), g->values[v].name,
                           gr_shape_problem(&g->values[v].type, why, sizeof why));
                goto fail;
            }
            inst->args[a] = &e->bufs[v].dl;
        }
    }
    if (!build_kernels(e, o, target, err)) goto fail;
    if (o->explain)
        for (int k = 0; k < e->nkernels; k++)
            fprintf(o->explain, "kernel %d: %s, %d use%s, %s\n  %s\n", k, e->kernels[k].label,
                    e->kernels[k].uses, e->kernels[k].uses == 1 ? "" : "s", e->kernels[k].how,
                    e->kernels[k].key);
    return e;
oom:
    gr_set_err(err, "%s: out of memory compiling the model", m->path);
fail:
    gr_exec_free(e);
    return NULL;
}

int gr_exec_num_inputs(const gr_exec *e) { return e ? e->ninputs : 0; }
int gr_exec_input_value(const gr_exec *e, int i)
{
    return e && i >= 0 && i < e->ninputs ? e->inputs[i] : -1;
}
int gr_exec_num_outputs(const gr_exec *e) { return e ? e->noutputs : 0; }
int gr_exec_output_value(const gr_exec *e, int i)
{
    return e && i >= 0 && i < e->noutputs ? e->outputs[i] : -1;
}
int gr_exec_num_kernels(const gr_exec *e) { return e ? e->nkernels : 0; }
int gr_exec_num_groups(const gr_exec *e) { return e ? e->ngroups : 0; }

const DLTensor *gr_exec_output(const gr_exec *e, int i)
{
    if (!e || i < 0 || i >= e->noutputs) return NULL;
    return &e->bufs[e->outputs[i]].dl;
}

/* Whether a caller's tensor matches a value's type: dtype, shape (a scalar
 * as ndim 0 or [1]), CPU, compact. Describes the mismatch in why. */
static bool tensor_matches(const gr_value *v, const DLTensor *t, char *why, size_t size)
{
    const gr_type *ty = &v->type;
    int64_t numel = 1;
    for (int d = 0; t && d < t->ndim; d++) numel *= t->shape[d];
    if (!t || (!t->data && numel)) {
        snprintf(why, size, "no tensor (or no data)");
        return false;
    }
    if (t->device.device_type != kDLCPU) {
        snprintf(why, size, "is not on the CPU");
        return false;
    }
    if (t->dtype.code != ty->dtype.code || t->dtype.bits != ty->dtype.bits || t->dtype.lanes != 1) {
        snprintf(why, size, "has dtype code %d bits %d, the model's is %s", t->dtype.code,
                 t->dtype.bits, gr_elem_type_name(ty->elem_type));
        return false;
    }
    bool scalar_ok = ty->ndim == 0 && (t->ndim == 0 || (t->ndim == 1 && t->shape[0] == 1));
    bool same = t->ndim == ty->ndim;
    for (int d = 0; same && d < ty->ndim; d++) same = t->shape[d] == ty->shape[d];
    if (!scalar_ok && !same) {
        char want[256] = "[", got[256] = "[";
        for (int d = 0; d < ty->ndim; d++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%" PRId64, d ? "," : "",
                     ty->shape[d]);
        for (int d = 0; d < t->ndim && d < 16; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%" PRId64, d ? "," : "",
                     t->shape[d]);
        snprintf(why, size, "has shape %s], the model's is %s]", got, want);
        return false;
    }
    if (t->strides) {
        int64_t expect = 1;
        for (int d = t->ndim - 1; d >= 0; d--) {
            if (t->shape[d] != 1 && t->strides[d] != expect) {
                snprintf(why, size, "is not compact (strides)");
                return false;
            }
            expect *= t->shape[d];
        }
    }
    return true;
}

int gr_run(gr_exec *e, int ninputs, DLTensor *const *inputs, int noutputs,
           DLTensor *const *outputs, char **err)
{
    if (!e) {
        gr_set_err(err, "gr_run: no compiled model");
        return -1;
    }
    const gr_graph *g = e->m->graph;
    char why[512];
    if (ninputs != e->ninputs) {
        gr_set_err(err, "%s: gr_run: %d inputs given, the model takes %d", e->m->path, ninputs,
                   e->ninputs);
        return -1;
    }
    if (outputs && noutputs != e->noutputs) {
        gr_set_err(err, "%s: gr_run: %d outputs given, the model has %d", e->m->path, noutputs,
                   e->noutputs);
        return -1;
    }
    for (int i = 0; i < ninputs; i++) {
        const gr_value *v = &g->values[e->inputs[i]];
        if (!tensor_matches(v, inputs[i], why, sizeof why)) {
            gr_set_err(err, "%s: input %d ('%s') %s", e->m->path, i, v->name, why);
            return -1;
        }
        e->bufs[e->inputs[i]].dl.data =
            inputs[i]->data ? (char *)inputs[i]->data + inputs[i]->byte_offset : NULL;
    }
    for (int i = 0; outputs && i < noutputs; i++) {
        const gr_value *v = &g->values[e->outputs[i]];
        if (!tensor_matches(v, outputs[i], why, sizeof why)) {
            gr_set_err(err, "%s: output %d ('%s') %s", e->m->path, i, v->name, why);
            return -1;
        }
    }
    for (int gi = 0; gi < e->ngroups; gi++) {
        gr_instance *inst = &e->groups[gi];
        gr_kernel *k = &e->kernels[inst->kernel];
        int na = inst->io.ninputs + inst->io.noutputs;
        /* Prepared once, on the first run: the fixed inputs' data pointers
         * never change (initializers and folded constants). */
        if (!inst->prep) {
            inst->prep = rt_prepare(k->mod, "default", na, inst->args);
            if (!inst->prep) {
                gr_set_err(err, "%s: kernel %d (%.300s): %s", e->m->path, inst->kernel, k->key,
                           rt_last_error());
                return -1;
            }
        }
        double t0 = e->profile ? rt_now() : 0;
        int crc = rt_prepared_call(inst->prep, na, inst->args);
        if (e->profile) e->profile[inst->kernel] += rt_now() - t0;
        if (crc != 0) {
            gr_set_err(err, "%s: kernel %d (%.300s): %s", e->m->path, inst->kernel, k->key,
                       rt_last_error());
            return -1;
        }
    }
    for (int i = 0; outputs && i < noutputs; i++) {
        const gr_buf *b = &e->bufs[e->outputs[i]];
        if (buf_bytes(b)) /* an empty output may have no data */
            memcpy((char *)outputs[i]->data + outputs[i]->byte_offset, b->dl.data, buf_bytes(b));
    }
    return 0;
}

const char *gr_exec_kernel_key(const gr_exec *e, int k)
{
    return e && k >= 0 && k < e->nkernels ? e->kernels[k].key : NULL;
}

int gr_exec_kernel_uses(const gr_exec *e, int k)
{
    int n = 0;
    for (int i = 0; e && i < e->ngroups; i++) n += e->groups[i].kernel == k;
    return n;
}

bool gr_exec_kernel_tuned(const gr_exec *e, int k)
{
    return e && k >= 0 && k < e->nkernels && e->kernels[k].tuned;
}

bool gr_exec_kernel_stale(const gr_exec *e, int k)
{
    return e && k >= 0 && k < e->nkernels && e->kernels[k].stale;
}

const char *gr_exec_db_note(const gr_exec *e)
{
    return e ? e->db_note : NULL;
}

void gr_exec_profile(gr_exec *e, double *seconds)
{
    if (e) e->profile = seconds;
}

const char *gr_exec_kernel_label(const gr_exec *e, int k)
{
    return e && k >= 0 && k < e->nkernels ? e->kernels[k].label : NULL;
}

void gr_exec_memory(const gr_exec *e, size_t *arena_bytes, size_t *unshared_bytes)
{
    if (arena_bytes) *arena_bytes = e ? e->arena_bytes : 0;
    if (unshared_bytes) *unshared_bytes = e ? e->unshared_bytes : 0;
}
