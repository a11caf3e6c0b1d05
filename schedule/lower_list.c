/*
 * schedule/lower_list.c — the lowering list: every step from a schedule
 * to a target's code generation input, in the one function whose body is
 * their order (model: Halide's Lower.cpp). The build (cg_build), the
 * tuner's scorer, cm_extract_schedule, sch_lower and tir_run_pipeline all
 * run this list; what differs between them is a flag, never a list of
 * their own, so the cost model scores the program that gets built up to
 * the flags it names (train/serve skew, issue 31).
 *
 * Every step runs through STEP or PASS, so that LOOM_DUMP_IR
 * (lower_dump.c) and the IR verifier (tir/verify.c) see each one: a step
 * added outside them would be missing from both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/lower_internal.h"

/* One function going through the passes: its dump and verification. */
typedef struct {
    tir_func *f;
    sch__dump dump;
    bool gpu_stores; /* verify "no store outside a thread loop" */
    bool ranges;     /* verify that accesses stay inside their buffers */
} track;

typedef struct {
    te_ctx *ctx;
    lower_state L;   /* L.s NULL: tir_run_pipeline, from a lowered function */
    int nargs;
    te_tensor *const *args;
    const char *name, *pname;
    uint64_t constant_args;
    bool *pre, *rest; /* per stage: pre-computed, computed in main */
    int npre;
    tir_pipeline_options po;
    bool model_view, loop_nest_only, verify;
    bool nodump; /* sch_lower: its caller dumps the passes it runs */
    int nfuncs;
    track t[2];      /* main, then precompute */
    tir_device_program *device;
} list_run;

static bool verify_enabled(void) {
    const char *e = getenv("LOOM_VERIFY_IR");
    if (e && *e) return strcmp(e, "0") != 0;
#ifdef NDEBUG
    return false;
#else
    return true;
#endif
}

/* Runs the verifier on g after `step`; g, or NULL with the error. */
static tir_func *verified(list_run *r, track *t, const char *step, tir_func *g) {
    if (!g || !r->verify) return g;
    tir_verify_options o = {.gpu = t->gpu_stores, .skip_ranges = !t->ranges};
    if (!tir_verify(r->ctx, g, &o)) return g;
    char why[1024];
    snprintf(why, sizeof why, "%s", te_ctx_errmsg(r->ctx));
    te_error(r->ctx, "IR verifier: after step '%s' of function '%s': %s", step, g->name, why);
    return NULL;
}

/* The first function of a track. The verifier blames a step for what it
 * broke, not for the user's mistakes the loop nests inherit: an access
 * the computation itself makes outside a tensor (what cg_build's
 * bounds_check reports at run time), and on gpu a stage left unbound
 * (verify_gpu names its stage and loop). A rule the first function
 * already breaks that way is not verified after the later steps. */
static tir_func *first(list_run *r, track *t, const char *name, const char *step, tir_func *g,
                       double t0) {
    if (!r->nodump && !t->dump.dir) sch__dump_begin(&t->dump, name);
    t->ranges = true;
    if (g && r->verify) {
        char saved[1024];
        snprintf(saved, sizeof saved, "%s", te_ctx_errmsg(r->ctx));
        if (tir_verify(r->ctx, g, NULL) &&
            !tir_verify(r->ctx, g, &(tir_verify_options){.skip_ranges = true}))
            t->ranges = false;
        t->gpu_stores = r->po.gpu &&
                        !tir_verify(r->ctx, g,
                                    &(tir_verify_options){.gpu = true, .skip_ranges = !t->ranges});
        if (*saved) te_error(r->ctx, "%s", saved);
        else te_ctx_clear_error(r->ctx);
    }
    sch__dump_func(&t->dump, step, g, sch__dump_now() - t0);
    return verified(r, t, step, g);
}

/* A step before loop nests exist: runs `call` (0 or -1), dumps what
 * `print` writes of the lowering state. */
#define STEP(name, call, print)                                      \
    do {                                                             \
        double t0_ = sch__dump_now();                                \
        int rc_ = (call);                                            \
        step_text(r, (name), rc_, (print), sch__dump_now() - t0_);   \
        if (rc_) return -1;                                          \
    } while (0)

/* A pass on the function of track t (g its current program). */
#define PASS(name, call)                                             \
    do {                                                             \
        if (g) {                                                     \
            double t0_ = sch__dump_now();                            \
            g = (call);                                              \
            sch__dump_func(&t->dump, (name), g, sch__dump_now() - t0_); \
            g = verified(r, t, (name), g);                           \
        }                                                            \
    } while (0)

typedef void (*state_printer)(const list_run *r, te_str *out);

static void step_text(list_run *r, const char *name, int rc, state_printer print, double ms) {
    sch__dump *d = &r->t[0].dump;
    if (!d->dir) return;
    te_str text;
    te_str_init(&text);
    if (!rc && print) print(r, &text);
    sch__dump_text(d, name, rc ? NULL : text.data ? text.data : "", ms);
    te_str_free(&text);
}

static void print_args(const list_run *r, te_str *out) {
    for (int i = 0; i < r->L.nargs; i++)
        te_str_printf(out, "argument %d: %s\n", i, r->L.args[i]->name);
}
static void print_bodies(const list_run *r, te_str *out) { sch__lower_print_bodies(&r->L, out); }
static void print_bounds(const list_run *r, te_str *out) { sch__lower_print_bounds(&r->L, out); }
static void print_precomputed(const list_run *r, te_str *out) {
    for (int i = 0; i < r->L.s->nstages; i++)
        if (r->pre[i]) te_str_printf(out, "pre-computed: %s\n", r->L.s->stages[i].op->name);
}
static void print_buffers(const list_run *r, te_str *out) {
    for (int i = 0; i < r->L.s->nstages; i++) {
        const tir_buffer *b = r->L.ls[i].buf;
        if (!b) continue;
        te_str_printf(out, "%s %s %s[", tir_scope_name(b->scope), te_dtype_str(b->dtype), b->name);
        for (int d = 0; d < b->ndim; d++)
            te_str_printf(out, "%s%lld", d ? ", " : "", (long long)b->shape[d]);
        te_str_printf(out, "]%s\n", b->is_param ? " (parameter)" : "");
    }
}
static void print_ok(const list_run *r, te_str *out) {
    (void)r;
    te_str_append(out, "every stage is read only inside the loop it is computed at\n");
}

static int precompute_split(list_run *r) {
    lower_state *L = &r->L;
    int n = L->s->nstages;
    r->pre = te_alloc(r->ctx, sizeof(bool) * (size_t)n);
    r->rest = te_alloc(r->ctx, sizeof(bool) * (size_t)n);
    if (!r->pre || !r->rest || sch__lower_check_constants(L, r->constant_args)) return -1;
    r->npre = sch__lower_precomputed(L, r->constant_args, r->pre);
    if (r->npre == 0) {
        r->rest = NULL;
        return 0;
    }
    te_tensor **extra = te_alloc(r->ctx, sizeof(te_tensor *) * (size_t)r->npre);
    size_t len = strlen(r->name) + sizeof "__precompute";
    char *pname = te_alloc(r->ctx, len);
    if (!extra || !pname) return -1;
    snprintf(pname, len, "%s__precompute", r->name);
    r->pname = pname;
    int k = 0;
    for (int i = 0; i < n; i++) {
        r->rest[i] = !r->pre[i];
        if (r->pre[i]) extra[k++] = L->s->stages[i].op;
    }
    return sch__lower_add_args(L, k, extra);
}

static int split_device(list_run *r) {
    r->device = tir_split_host_device(r->ctx, r->t[0].f);
    return r->device ? 0 : -1;
}

static void print_device(const list_run *r, te_str *out) {
    const tir_device_program *p = r->device;
    for (int i = 0; i < p->nworkspace; i++)
        te_str_printf(out, "workspace %s\n", p->workspace[i]->name);
    for (int k = 0; k < p->nkernels; k++) {
        const tir_kernel *kn = &p->kernels[k];
        te_str_printf(out, "// grid (%lld, %lld, %lld), block (%lld, %lld, %lld)\n",
                      (long long)kn->grid[0], (long long)kn->grid[1], (long long)kn->grid[2],
                      (long long)kn->block[0], (long long)kn->block[1], (long long)kn->block[2]);
        tir_func_print(out, kn->func);
    }
}

/* The list. */
static int lower_list(list_run *r) {
    te_ctx *ctx = r->ctx;
    lower_state *L = &r->L;
    const tir_pipeline_options *po = &r->po;
    bool gpu = po->gpu;

    /* From the schedule to loop nests (schedule/lower.c, bound.c). */
    if (L->s) {
        if (!r->nodump) sch__dump_begin(&r->t[0].dump, r->name);
        STEP("check_arguments", sch__lower_args(L, r->nargs, r->args), print_args);
        STEP("inline", sch__lower_inline(L), print_bodies);
        if (r->constant_args) STEP("precompute_split", precompute_split(r), print_precomputed);
        STEP("bound_inference", sch__lower_bounds(L), print_bounds);
        STEP("check_attach", sch__lower_check_attach(L), print_ok);
        STEP("buffers", sch__lower_buffers(L), print_buffers);
        double t0 = sch__dump_now();
        r->t[0].f = first(r, &r->t[0], r->name, "schedule_ops",
                          sch__lower_nests(L, r->name, r->rest), t0);
        if (!r->t[0].f) return -1;
        r->nfuncs = 1;
        if (r->rest) {
            t0 = sch__dump_now();
            r->t[1].f = first(r, &r->t[1], r->pname, "schedule_ops",
                              sch__lower_nests(L, r->pname, r->pre), t0);
            if (!r->t[1].f) return -1;
            r->nfuncs = 2;
        }
        if (r->loop_nest_only) return 0;
    }

    /* The passes, on each function (tir/pass_*.c). */
    for (int i = 0; i < r->nfuncs; i++) {
        track *t = &r->t[i];
        tir_func *g = t->f;
        PASS("storage_flatten", tir_pass_storage_flatten(ctx, g));
        if (tir_func_uses_half(g)) PASS("legalize_half", tir_pass_legalize_half(ctx, g));
        PASS("simplify", tir_pass_simplify(ctx, g));
        if (!po->skip_loop_partition) {
            PASS("loop_partition", tir_pass_loop_partition(ctx, g));
            PASS("simplify", tir_pass_simplify(ctx, g));
            PASS("remove_noop", tir_pass_remove_noop(ctx, g));
        }
        if (po->skip_vectorize) PASS("devectorize", tir_pass_devectorize(ctx, g));
        else PASS("vectorize", tir_pass_vectorize(ctx, g, po->vectorize_why));
        if (gpu) {
            PASS("inject_vthread", tir_pass_inject_vthread(ctx, g));
            PASS("simplify", tir_pass_simplify(ctx, g));
        }
        if (po->unroll_hints_only) PASS("unroll_hinted", tir_pass_unroll_hinted(ctx, g));
        else PASS("unroll", tir_pass_unroll(ctx, g));
        PASS("storage_rewrite", tir_pass_storage_rewrite(ctx, g));
        PASS("simplify", tir_pass_simplify(ctx, g));
        PASS("remove_noop", tir_pass_remove_noop(ctx, g));
        PASS("double_buffer", tir_pass_double_buffer(ctx, g));
        if (gpu) {
            PASS("thread_sync", tir_pass_thread_sync(ctx, g));
            PASS("verify_gpu", tir_verify_gpu(ctx, g, &po->gpu_limits) ? NULL : g);
        }
        if (!(t->f = g)) return -1;
    }

    /* The target's input: on gpu, the kernels and their launches. */
    if (gpu && !r->model_view) {
        double t0 = sch__dump_now();
        int rc = split_device(r);
        sch__dump *d = &r->t[0].dump;
        if (d->dir) {
            te_str text;
            te_str_init(&text);
            if (!rc) print_device(r, &text);
            sch__dump_text(d, "split_host_device", rc ? NULL : text.data ? text.data : "",
                           sch__dump_now() - t0);
            te_str_free(&text);
        }
        if (rc) return -1;
    }
    return 0;
}

static void run_end(list_run *r) {
    for (int i = 0; i < 2; i++) sch__dump_end(&r->t[i].dump);
    te_analyzer_free(r->L.an);
}

int sch_lower_program(sch_schedule *s, int nargs, te_tensor *const *args,
                      const sch_lower_options *opts, sch_lowered *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!s) return -1;
    te_ctx *ctx = s->ctx;
    if (!out) return te_error(ctx, "lower: the output is NULL");
    sch_lower_options defaults;
    memset(&defaults, 0, sizeof defaults);
    if (!opts) opts = &defaults;
    list_run r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.nargs = nargs;
    r.args = args;
    r.name = opts->name && *opts->name ? opts->name : "default";
    r.constant_args = opts->constant_args;
    r.po = opts->passes;
    r.model_view = opts->model_view;
    r.loop_nest_only = opts->loop_nest_only;
    r.nodump = opts->loop_nest_only;
    r.verify = verify_enabled();
    if (r.model_view) {
        r.po.unroll_hints_only = true;
        if (!r.po.gpu) r.po.skip_loop_partition = true;
    }
    if (r.po.gpu && r.constant_args)
        return te_error(ctx, "lower: constant arguments (pre-computed stages) are not supported "
                             "on the GPU");
    r.L = (lower_state){.s = s, .ctx = ctx, .gpu = r.po.gpu};
    r.L.ls = te_alloc(ctx, sizeof(lower_stage) * (size_t)(s->nstages > 0 ? s->nstages : 1));
    r.L.an = r.L.ls ? te_analyzer_new(ctx) : NULL;
    if (!r.L.an) return -1;
    int rc = lower_list(&r);
    run_end(&r);
    if (rc) return -1;
    out->main = r.t[0].f;
    out->precompute = r.nfuncs > 1 ? r.t[1].f : NULL;
    out->nstages = r.nfuncs > 1 ? r.npre : 0;
    out->stages = r.nfuncs > 1 ? (te_tensor **)r.L.args + nargs : NULL;
    out->device = r.device;
    return 0;
}

tir_func *sch_lower(sch_schedule *s, int nargs, te_tensor *const *args, const char *name) {
    sch_lower_options o = {.name = name, .loop_nest_only = true};
    sch_lowered r;
    return sch_lower_program(s, nargs, args, &o, &r) ? NULL : r.main;
}

tir_func *tir_run_pipeline(te_ctx *ctx, const tir_func *f, const tir_pipeline_options *opts) {
    if (!ctx) return NULL;
    if (!f || !f->body) {
        if (!*te_ctx_errmsg(ctx)) te_error(ctx, "pipeline: NULL operand");
        return NULL;
    }
    list_run r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    if (opts) r.po = *opts;
    r.verify = verify_enabled();
    r.nfuncs = 1;
    tir_func *g = (tir_func *)f;
    r.t[0].f = first(&r, &r.t[0], f->name, "input", g, sch__dump_now());
    int rc = r.t[0].f ? lower_list(&r) : -1;
    run_end(&r);
    return rc ? NULL : r.t[0].f;
}

const char *sch_lower_text(sch_schedule *s, int nargs, te_tensor *const *args) {
    if (!s) return NULL;
    sch_lowered r;
    if (sch_lower_program(s, nargs, args, NULL, &r)) return NULL;
    return tir_func_str(s->ctx, r.main);
}
