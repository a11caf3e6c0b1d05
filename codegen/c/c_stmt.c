/*
 * codegen/c/c_stmt.c — statements as C, parallel loops outlined into
 * closures for rt_parallel_for, and cg_c_source.
 *
 * A PARALLEL loop (the outermost of a nest) becomes a static function
 * `int loom_par_N(begin, end, env)` plus a struct holding every variable
 * and buffer the loop body uses but does not define (TVM's LLVM backend
 * outlines parallel loops the same way: CodeGenCPU::CreateParallelLaunch).
 * Heap allocations open in a C function are freed on every error exit.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/c/c_internal.h"

static void put(cg_c_emitter *em, const char *s) { te_str_append(em->out, s); }

static void ind(cg_c_emitter *em) {
    for (int i = 0; i < em->indent; ++i) put(em, "    ");
}

void cg_c_line(cg_c_emitter *em, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ind(em);
    put(em, buf);
    put(em, "\n");
}

/* `{ free(open heap buffers); return rc; }` */
static void error_exit(cg_c_emitter *em, const char *rc) {
    put(em, "{ ");
    for (int i = em->nheap - 1; i >= 0; --i) te_str_printf(em->out, "free(%s); ", em->heap[i]);
    te_str_printf(em->out, "return %s; }", rc);
}

static void push_heap(cg_c_emitter *em, const char *name) {
    if (em->nheap == em->cap_heap) {
        int cap = em->cap_heap ? 2 * em->cap_heap : 8;
        const char **h = realloc(em->heap, (size_t)cap * sizeof *h);
        if (!h) {
            cg_c_fail(em, "out of memory");
            return;
        }
        em->heap = h;
        em->cap_heap = cap;
    }
    em->heap[em->nheap++] = name;
}

/* ---------------- names captured by a parallel closure ---------------- */

typedef struct {
    const void **keys;
    int n, cap;
} key_list;

static void key_add(key_list *l, const void *k) {
    for (int i = 0; i < l->n; ++i)
        if (l->keys[i] == k) return;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        const void **p = realloc(l->keys, (size_t)cap * sizeof *p);
        if (!p) return; /* a missing capture is then reported as an unbound name */
        l->keys = p;
        l->cap = cap;
    }
    l->keys[l->n++] = k;
}

/* ---------------- statements ---------------- */

static bool is_zero(const te_expr *e) { return e && e->kind == TE_INT_IMM && e->u.ival == 0; }

static const char *loop_var_type(cg_c_emitter *em, const te_expr *v) {
    const char *t = cg_c_type(v->dtype);
    if (!t || v->dtype.code != TE_INT) {
        cg_c_fail(em, "loop variable '%s' in function '%s' has type %s; loops need an integer",
                  v->u.var.name, em->func, te_dtype_str(v->dtype));
        return "int64_t";
    }
    return t;
}

static void emit_serial_for(cg_c_emitter *em, const tir_stmt *s) {
    const te_expr *v = s->u.loop.var;
    const char *ty = loop_var_type(em, v);
    const char *name = cg_c_name_of(em, v, v->u.var.name);
    int64_t ext;
    if (s->u.loop.for_kind == TIR_FOR_UNROLLED) {
        bool c = s->u.loop.extent->kind == TE_INT_IMM;
        ext = c ? s->u.loop.extent->u.ival : 8;
        cg_c_line(em, "#pragma GCC unroll %lld", (long long)(ext < 1 ? 1 : ext > 65534 ? 65534 : ext));
    }
    ind(em);
    te_str_printf(em->out, "for (%s %s = ", ty, name);
    cg_c_expr(em, s->u.loop.min);
    te_str_printf(em->out, "; %s < ", name);
    if (is_zero(s->u.loop.min)) {
        cg_c_expr(em, s->u.loop.extent);
    } else {
        cg_c_expr(em, s->u.loop.min);
        put(em, " + ");
        cg_c_expr(em, s->u.loop.extent);
    }
    te_str_printf(em->out, "; ++%s) {\n", name);
    bool bound = tir_bind_loop(em->an, s->u.loop.var, s->u.loop.min, s->u.loop.extent);
    em->indent++;
    cg_c_stmt(em, s->u.loop.body);
    em->indent--;
    if (bound) te_analyzer_unbind(em->an, v);
    cg_c_line(em, "}");
}

static void emit_parallel_for(cg_c_emitter *em, const tir_stmt *s) {
    const te_expr *v = s->u.loop.var;
    const char *ty = loop_var_type(em, v);
    const char *vname = cg_c_name_of(em, v, v->u.var.name);
    int id = em->nclosures++;

    /* What the body needs from outside. */
    tir_free_vars fv;
    if (tir_stmt_free_vars(s->u.loop.body, 1, (const void *[]){v}, &fv)) {
        cg_c_fail(em, "out of memory outlining parallel loop '%s'", v->u.var.name);
        return;
    }
    key_list caps;
    memset(&caps, 0, sizeof caps);
    te_str members;
    te_str_init(&members);
    te_str unpack;
    te_str_init(&unpack);
    te_str init;
    te_str_init(&init);
    /* Buffers first, so a buffer's data VAR dedupes against its pointer. */
    for (int pass = 0; pass < 2; ++pass)
        for (int i = 0; i < fv.n; ++i) {
            const void *k = fv.keys[i];
            bool is_buf = fv.is_buffer[i];
            if (is_buf != (pass == 0)) continue;
            const char *name;
            const char *type;
            if (is_buf) {
                const tir_buffer *b = k;
                name = cg_c_buffer_name(em, b);
                type = cg_c_type(b->dtype);
                if (!type) {
                    cg_c_fail(em, "buffer '%s' has type %s; no C equivalent", b->name,
                              te_dtype_str(b->dtype));
                    type = "int";
                }
            } else {
                const te_expr *var = k;
                name = cg_c_name_lookup(em, var);
                if (!name) continue; /* unbound: reported when the body prints it */
                type = cg_c_type(var->dtype);
                if (!type) type = "int64_t";
            }
            bool dup = false;
            for (int j = 0; j < caps.n; ++j)
                if (!strcmp((const char *)caps.keys[j], name)) dup = true;
            if (dup) continue;
            key_add(&caps, name);
            if (is_buf) {
                te_str_printf(&members, "    %s *%s;\n", type, name);
                te_str_printf(&unpack, "    %s *restrict %s = loom_env->%s;\n", type, name, name);
            } else {
                te_str_printf(&members, "    %s %s;\n", type, name);
                te_str_printf(&unpack, "    const %s %s = loom_env->%s;\n", type, name, name);
            }
            te_str_printf(&init, ".%s = %s, ", name, name);
        }
    tir_free_vars_release(&fv);
    free(caps.keys);

    /* The call site, in the enclosing function. */
    cg_c_line(em, "{");
    em->indent++;
    ind(em);
    te_str_printf(em->out, "struct loom_env_%d loom_e = {%s.loom_min = ", id,
                  init.data ? init.data : "");
    cg_c_expr(em, s->u.loop.min);
    put(em, "};\n");
    ind(em);
    te_str_printf(em->out, "int loom_rc = rt_parallel_for(");
    cg_c_expr(em, s->u.loop.extent);
    te_str_printf(em->out, ", loom_par_%d, &loom_e);\n", id);
    ind(em);
    put(em, "if (loom_rc != 0) ");
    error_exit(em, "loom_rc");
    put(em, "\n");
    em->indent--;
    cg_c_line(em, "}");

    /* The closure, written to the declarations before the function. */
    te_str body;
    te_str_init(&body);
    te_str *saved_out = em->out;
    int saved_indent = em->indent;
    const char **saved_heap = em->heap;
    int saved_nheap = em->nheap, saved_cap = em->cap_heap;
    em->out = &body;
    em->indent = 2;
    em->heap = NULL;
    em->nheap = em->cap_heap = 0;
    em->in_parallel = true;
    bool bound = tir_bind_loop(em->an, s->u.loop.var, s->u.loop.min, s->u.loop.extent);
    cg_c_stmt(em, s->u.loop.body);
    if (bound) te_analyzer_unbind(em->an, v);
    em->in_parallel = false;
    free(em->heap);
    em->out = saved_out;
    em->indent = saved_indent;
    em->heap = saved_heap;
    em->nheap = saved_nheap;
    em->cap_heap = saved_cap;

    te_str *d = em->decls;
    te_str_printf(d, "struct loom_env_%d {\n%s    int64_t loom_min;\n};\n\n", id,
                  members.data ? members.data : "");
    te_str_printf(d, "/* parallel loop '%s' of function '%s' */\n", v->u.var.name, em->func);
    te_str_printf(d,
                  "static int loom_par_%d(int64_t loom_begin, int64_t loom_end, void *loom_envp) {\n"
                  "    const struct loom_env_%d *loom_env = (const struct loom_env_%d *)loom_envp;\n"
                  "%s"
                  "    for (%s %s = loom_env->loom_min + loom_begin; %s < loom_env->loom_min + "
                  "loom_end; ++%s) {\n%s    }\n    return 0;\n}\n\n",
                  id, id, id, unpack.data ? unpack.data : "", ty, vname, vname, vname,
                  body.data ? body.data : "");
    te_str_free(&body);
    te_str_free(&members);
    te_str_free(&unpack);
    te_str_free(&init);
}

static void emit_for(cg_c_emitter *em, const tir_stmt *s) {
    const te_expr *v = s->u.loop.var;
    if (!v || v->kind != TE_VAR || !s->u.loop.min || !s->u.loop.extent) {
        cg_c_fail(em, "malformed loop in function '%s'", em->func);
        return;
    }
    if (s->u.loop.for_kind == TIR_FOR_THREAD) {
        cg_c_fail(em, "loop '%s' is bound to %s; the c target has no GPU threads",
                  v->u.var.name, s->u.loop.thread_tag ? s->u.loop.thread_tag : "a GPU thread axis");
        return;
    }
    if (s->u.loop.for_kind == TIR_FOR_PARALLEL && !em->in_parallel)
        emit_parallel_for(em, s);
    else
        emit_serial_for(em, s); /* nested PARALLEL, surviving VECTORIZED: serial */
}

static bool loads_buffer(const te_expr *e, const tir_buffer *b) {
    if (!e) return false;
    switch (e->kind) {
    case TE_VAR:
    case TE_INT_IMM:
    case TE_FLOAT_IMM: return false;
    case TE_NOT:
    case TE_CAST: return loads_buffer(e->u.un.a, b);
    case TE_SELECT:
        return loads_buffer(e->u.sel.cond, b) || loads_buffer(e->u.sel.t, b) ||
               loads_buffer(e->u.sel.f, b);
    case TE_CALL:
        for (int i = 0; i < e->u.call.nargs; ++i)
            if (loads_buffer(e->u.call.args[i], b)) return true;
        return false;
    case TE_LOAD:
        return e->u.load.buffer == b || loads_buffer(e->u.load.index, b) ||
               loads_buffer(e->u.load.predicate, b);
    case TE_RAMP: return loads_buffer(e->u.ramp.base, b) || loads_buffer(e->u.ramp.stride, b);
    case TE_BROADCAST: return loads_buffer(e->u.bcast.value, b);
    case TE_READ:
    case TE_REDUCE:
    case TE_BUFFER_LOAD: return false;
    default: return loads_buffer(e->u.bin.a, b) || loads_buffer(e->u.bin.b, b);
    }
}

static void emit_store(cg_c_emitter *em, const tir_stmt *s) {
    const tir_buffer *b = s->u.store.buffer;
    const te_expr *idx = s->u.store.index, *val = s->u.store.value, *pred = s->u.store.predicate;
    if (!b || !idx || !val) {
        cg_c_fail(em, "malformed store in function '%s'", em->func);
        return;
    }
    const char *name = cg_c_buffer_name(em, b);
    int lanes = idx->dtype.lanes > val->dtype.lanes ? idx->dtype.lanes : val->dtype.lanes;
    if (lanes == 1) {
        ind(em);
        if (pred) {
            put(em, "if (");
            cg_c_expr(em, pred);
            put(em, ") ");
        }
        te_str_printf(em->out, "%s[", name);
        cg_c_expr(em, idx);
        put(em, "] = ");
        cg_c_expr(em, val);
        put(em, ";\n");
        return;
    }
    if (idx->dtype.lanes != lanes) {
        cg_c_fail(em, "store of %d lanes to buffer '%s' in function '%s' has a scalar index",
                  lanes, b->name, em->func);
        return;
    }
    const char *ty = cg_c_type(b->dtype);
    if (!ty) {
        cg_c_fail(em, "buffer '%s' has type %s; no C equivalent", b->name, te_dtype_str(b->dtype));
        return;
    }
    /* A vector store reads all lanes before writing any: when the value
     * reads the stored buffer, go through a temporary so a lane never sees
     * another lane's write. */
    bool temp = loads_buffer(val, b) || loads_buffer(idx, b) || loads_buffer(pred, b);
    const char *lane = "loom_l";
    cg_c_line(em, "{");
    em->indent++;
    int t = em->ntemps++;
    if (temp) {
        cg_c_line(em, "%s loom_t%d[%d];", ty, t, lanes);
        ind(em);
        te_str_printf(em->out, "for (int64_t %s = 0; %s < %d; ++%s) loom_t%d[%s] = ", lane, lane,
                      lanes, lane, t, lane);
        em->lane = lane;
        cg_c_expr(em, val);
        em->lane = NULL;
        put(em, ";\n");
    }
    ind(em);
    te_str_printf(em->out, "for (int64_t %s = 0; %s < %d; ++%s) ", lane, lane, lanes, lane);
    em->lane = lane;
    if (pred) {
        put(em, "if (");
        cg_c_expr(em, pred);
        put(em, ") ");
    }
    te_str_printf(em->out, "%s[", name);
    cg_c_expr(em, idx);
    put(em, "] = ");
    if (temp)
        te_str_printf(em->out, "loom_t%d[%s]", t, lane);
    else
        cg_c_expr(em, val);
    em->lane = NULL;
    put(em, ";\n");
    em->indent--;
    cg_c_line(em, "}");
}

static void emit_allocate(cg_c_emitter *em, const tir_stmt *s) {
    const tir_buffer *b = s->u.alloc.buffer;
    const char *ty = cg_c_type(b->dtype);
    if (!ty || b->dtype.code == TE_HANDLE) {
        cg_c_fail(em, "allocation '%s' in function '%s' has type %s; no C equivalent", b->name,
                  em->func, te_dtype_str(b->dtype));
        return;
    }
    int64_t n = tir_buffer_size(b);
    int64_t esize = te_dtype_bytes(b->dtype);
    if (n <= 0 || n > INT64_MAX / 64 / (esize > 0 ? esize : 1)) {
        cg_c_fail(em, "allocation '%s' in function '%s' has %lld elements", b->name, em->func,
                  (long long)n);
        return;
    }
    const char *name = cg_c_buffer_name(em, b);
    int64_t bytes = n * esize;
    cg_c_line(em, "{");
    em->indent++;
    bool heap = bytes > CG_C_STACK_LIMIT;
    if (!heap) {
        cg_c_line(em, "_Alignas(64) %s %s[%lld]; /* %s scope */", ty, name, (long long)n,
                  tir_scope_name(b->scope));
    } else {
        int64_t rounded = (bytes + 63) / 64 * 64;
        cg_c_line(em, "%s *restrict %s = (%s *)aligned_alloc(64, %lld);", ty, name, ty,
                  (long long)rounded);
        ind(em);
        te_str_printf(em->out, "if (!%s) ", name);
        error_exit(em, "-1");
        put(em, "\n");
        push_heap(em, name);
    }
    cg_c_stmt(em, s->u.alloc.body);
    if (heap) {
        em->nheap--;
        cg_c_line(em, "free(%s);", name);
    }
    em->indent--;
    cg_c_line(em, "}");
}

static void stmt_cb(void *em, const tir_stmt *s) { cg_c_stmt(em, s); }

bool cg_c_control_stmt(cg_c_emitter *em, const tir_stmt *s, cg_c_stmt_fn emit, void *user) {
    switch (s->kind) {
    case TIR_IF:
        ind(em);
        put(em, "if (");
        cg_c_expr(em, s->u.if_.cond);
        put(em, ") {\n");
        em->indent++;
        emit(user, s->u.if_.then_s);
        em->indent--;
        if (s->u.if_.else_s && s->u.if_.else_s->kind != TIR_NOOP) {
            cg_c_line(em, "} else {");
            em->indent++;
            emit(user, s->u.if_.else_s);
            em->indent--;
        }
        cg_c_line(em, "}");
        return true;
    case TIR_SEQ:
        for (int i = 0; i < s->u.seq.n && !em->failed; ++i) emit(user, s->u.seq.stmts[i]);
        return true;
    case TIR_EVALUATE:
        ind(em);
        put(em, "(void)(");
        cg_c_expr(em, s->u.eval.value);
        put(em, ");\n");
        return true;
    case TIR_NOOP: return true;
    case TIR_LET: {
        const te_expr *v = s->u.let.var;
        const char *ty = cg_c_type(v->dtype);
        if (!ty) {
            cg_c_fail(em, "let variable '%s' in function '%s' has type %s; no C equivalent",
                      v->u.var.name, em->func, te_dtype_str(v->dtype));
            return true;
        }
        cg_c_line(em, "{");
        em->indent++;
        ind(em);
        te_str_printf(em->out, "const %s %s = ", ty, cg_c_name_of(em, v, v->u.var.name));
        cg_c_expr(em, s->u.let.value);
        put(em, ";\n");
        emit(user, s->u.let.body);
        em->indent--;
        cg_c_line(em, "}");
        return true;
    }
    case TIR_ATTR: emit(user, s->u.attr.body); return true;
    default: return false;
    }
}

void cg_c_stmt(cg_c_emitter *em, const tir_stmt *s) {
    if (em->failed || !s || cg_c_control_stmt(em, s, stmt_cb, em)) return;
    switch (s->kind) {
    case TIR_FOR: emit_for(em, s); return;
    case TIR_STORE: emit_store(em, s); return;
    case TIR_ALLOCATE: emit_allocate(em, s); return;
    case TIR_BARRIER:
        cg_c_fail(em, "barrier (__syncthreads) in function '%s'; the c target has no GPU threads",
                  em->func);
        return;
    case TIR_BUFFER_STORE:
        cg_c_fail(em, "BUFFER_STORE to '%s' in function '%s' reached code generation; run "
                      "tir_pass_storage_flatten (tir_run_pipeline) first",
                  s->u.bstore.buffer ? s->u.bstore.buffer->name : "?", em->func);
        return;
    case TIR_TENSOR_CALL:
        if (s->u.tcall.intrin == TIR_X86_DPBF16)
            cg_c_fail(em, "tensor intrinsic x86.dpbf16 in function '%s' is emitted by the llvm "
                          "target only; the c target does not emit it (build for llvm)",
                      em->func);
        else
            cg_c_fail(em, "tensor intrinsic %s in function '%s' runs only on the GPU (target "
                          "cuda); the c target has no tensor cores (remove the tensorize step)",
                      tir_tensor_intrin_name(s->u.tcall.intrin), em->func);
        return;
    default:
        cg_c_fail(em, "statement kind %d in function '%s' is not supported by the c target",
                  (int)s->kind, em->func);
        return;
    }
}

/* ---------------- whole source ---------------- */

static const char prelude[] =
    "/* Generated by Loom's C backend. */\n"
    "#include <stdint.h>\n"
    "#include <math.h>\n"
    "#include <stdbool.h>\n"
    "#include <stdlib.h>\n"
    "\n"
    "extern int rt_parallel_for(int64_t, int (*)(int64_t, int64_t, void *), void *);\n"
    "\n"
    "/* Helpers a kernel may not use: keep -Wunused-function quiet. */\n"
    "#if defined(__GNUC__)\n"
    "#define LOOM_HELPER static inline __attribute__((unused))\n"
    "#else\n"
    "#define LOOM_HELPER static inline\n"
    "#endif\n"
    "\n"
    "\n";

/* Shared with the CUDA backend, after its own LOOM_HELPER. */
const char cg_c_helper_defs[] =
    "/* Floor division and modulo (the remainder has the divisor's sign). */\n"
    "LOOM_HELPER int64_t loom_floordiv_i64(int64_t a, int64_t b) {\n"
    "    int64_t q = a / b, r = a % b;\n"
    "    return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;\n"
    "}\n"
    "LOOM_HELPER int64_t loom_floormod_i64(int64_t a, int64_t b) {\n"
    "    int64_t r = a % b;\n"
    "    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n"
    "}\n"
    "LOOM_HELPER float loom_fmod_floor_f32(float a, float b) { return a - b * floorf(a / b); }\n"
    "LOOM_HELPER double loom_fmod_floor_f64(double a, double b) { return a - b * floor(a / b); }\n"
    "LOOM_HELPER float loom_sigmoid_f32(float x) { return 1.0f / (1.0f + expf(-x)); }\n"
    "LOOM_HELPER double loom_sigmoid_f64(double x) { return 1.0 / (1.0 + exp(-x)); }\n"
    "#define LOOM_MINMAX(S, T) \\\n"
    "    LOOM_HELPER T loom_min_##S(T a, T b) { return a < b ? a : b; } \\\n"
    "    LOOM_HELPER T loom_max_##S(T a, T b) { return a > b ? a : b; }\n"
    "LOOM_MINMAX(f32, float)\n"
    "LOOM_MINMAX(f64, double)\n"
    "LOOM_MINMAX(i8, int8_t)\n"
    "LOOM_MINMAX(i16, int16_t)\n"
    "LOOM_MINMAX(i32, int32_t)\n"
    "LOOM_MINMAX(i64, int64_t)\n"
    "LOOM_MINMAX(u8, uint8_t)\n"
    "LOOM_MINMAX(u16, uint16_t)\n"
    "LOOM_MINMAX(u32, uint32_t)\n"
    "LOOM_MINMAX(u64, uint64_t)\n"
    "LOOM_MINMAX(b, bool)\n"
    "\n";


/* Emits one function into out (closures first). Returns 0 or -1. */
static int emit_func(te_ctx *ctx, const tir_func *f, int *nclosures, te_str *out) {
    if (!f || !f->name || !f->body || f->nparams < 0 || (f->nparams > 0 && !f->params))
        return te_error(ctx, "c: function %s is malformed (NULL name, body or params)",
                        f && f->name ? f->name : "(null)");
    cg_c_emitter em;
    memset(&em, 0, sizeof em);
    te_str decls, body;
    te_str_init(&decls);
    te_str_init(&body);
    em.ctx = ctx;
    em.func = f->name;
    em.decls = &decls;
    em.out = &body;
    em.nclosures = *nclosures;
    em.an = te_analyzer_new(ctx);
    if (!em.an) cg_c_fail(&em, "no memory for the analyser");

    const char *sym = cg_c_symbol(ctx, f->name);
    if (!em.failed) {
        te_str_printf(&body, "int32_t %s(void **loom_args) {\n", sym ? sym : "loom_func");
        em.indent = 1;
        for (int i = 0; i < f->nparams && !em.failed; ++i) {
            const tir_buffer *b = f->params[i];
            if (!b) {
                cg_c_fail(&em, "parameter %d of function '%s' is NULL", i, f->name);
                break;
            }
            const char *ty = cg_c_type(b->dtype);
            if (!ty || b->dtype.code == TE_HANDLE) {
                cg_c_fail(&em, "parameter '%s' of function '%s' has type %s; no C equivalent",
                          b->name, f->name, te_dtype_str(b->dtype));
                break;
            }
            const char *name = cg_c_buffer_name(&em, b);
            cg_c_line(&em, "%s *restrict %s = (%s *)loom_args[%d];", ty, name, ty, i);
        }
        cg_c_stmt(&em, f->body);
        te_str_append(&body, "    return 0;\n}\n\n");
    }
    if (!em.failed) {
        te_str_append(out, decls.data ? decls.data : "");
        te_str_append(out, body.data ? body.data : "");
    }
    *nclosures = em.nclosures;
    te_str_free(&decls);
    te_str_free(&body);
    if (em.an) te_analyzer_free(em.an);
    free(em.names);
    free(em.heap);
    return em.failed ? -1 : 0;
}

const char *cg_c_source(te_ctx *ctx, int nfuncs, const tir_func *const *funcs) {
    if (!ctx) return NULL;
    if (nfuncs < 1 || !funcs) {
        te_error(ctx, "c: cg_c_source needs at least one function (got %d)", nfuncs);
        return NULL;
    }
    for (int i = 0; i < nfuncs; ++i) {
        if (!funcs[i] || !funcs[i]->name) {
            te_error(ctx, "c: function %d is NULL or unnamed", i);
            return NULL;
        }
        for (int j = 0; j < i; ++j)
            if (!strcmp(cg_c_symbol(ctx, funcs[i]->name), cg_c_symbol(ctx, funcs[j]->name))) {
                te_error(ctx, "c: functions '%s' and '%s' have the same C name", funcs[j]->name,
                         funcs[i]->name);
                return NULL;
            }
    }
    te_str out;
    te_str_init(&out);
    te_str_append(&out, prelude);
    te_str_append(&out, cg_c_helper_defs);
    int nclosures = 0;
    for (int i = 0; i < nfuncs; ++i)
        if (emit_func(ctx, funcs[i], &nclosures, &out)) {
            te_str_free(&out);
            return NULL;
        }
    const char *src = te_strdup(ctx, out.data ? out.data : "");
    te_str_free(&out);
    return src;
}
