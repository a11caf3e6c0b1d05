/*
 * tir/pass_verify_gpu.c — build-time checks of a GPU function (TVM
 * VerifyGPUCode and the checks of SplitHostDevice), each message naming
 * the kernel, the stage (the first buffer stored under the loop) and the
 * loop:
 *  - threads per block over the device limit, a threadIdx dimension over
 *    its own limit (x, y: 1024, z: 64);
 *  - shared memory per block over the limit;
 *  - a loop inside a kernel that is neither bound nor serial (parallel);
 *  - a thread axis bound twice in one kernel with different extents;
 *  - a thread-bound loop with a non-constant extent;
 *  - a store to global memory outside any bound loop (host code only
 *    sequences kernels), a serial loop around a kernel, local or shared
 *    memory allocated outside any kernel.
 * A kernel is the subtree under an outermost thread-bound loop.
 */
#include <stdio.h>
#include <string.h>

#include "tir/tir_internal.h"

static const char *const tags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                                   "threadIdx.y", "threadIdx.z", "vthread"};

int tir__thread_tag_index(const char *tag) {
    for (int i = 0; tag && i < 7; i++)
        if (!strcmp(tag, tags[i])) return i;
    return -1;
}

/* The first buffer stored in s: names the stage a loop belongs to. */
static int first_store(tir_visitor *v, const tir_stmt *s) {
    const char **name = v->user;
    if (s->kind == TIR_STORE) *name = s->u.store.buffer->name;
    else if (s->kind == TIR_BUFFER_STORE) *name = s->u.bstore.buffer->name;
    return *name != NULL; /* found: the walk ends */
}

const char *tir__stage_of(const tir_stmt *s) {
    const char *name = NULL;
    tir_visitor v = {.user = &name, .pre = first_store};
    tir_visit(&v, s);
    return name ? name : "?";
}

static int is_thread_loop(tir_visitor *v, const tir_stmt *s) {
    (void)v;
    return s->kind == TIR_FOR && s->u.loop.for_kind == TIR_FOR_THREAD;
}

bool tir__has_thread_loop(const tir_stmt *s) {
    tir_visitor v = {.pre = is_thread_loop};
    return tir_visit(&v, s) != 0;
}

typedef struct {
    te_ctx *ctx;
    const tir_func *f;
    tir_gpu_limits lim;
    int kernel;                 /* index of the kernel being checked */
    const char *kernel_stage;
    int64_t ext[7];             /* extents of the tags seen in this kernel (0: none) */
    const tir_stmt *ext_loop[7];
    int64_t shared_bytes;
    char shared_list[512];
} verifier;

static const char *loop_name(const tir_stmt *s) { return s->u.loop.var->u.var.name; }

/* ---- inside a kernel: loops and allocations, wherever they are ---- */

static int kernel_loop(tir_visitor *w, const tir_stmt *s) {
    verifier *v = w->user;
    if (s->u.loop.for_kind == TIR_FOR_PARALLEL)
        return te_error(v->ctx,
                        "gpu: loop '%s' (stage '%s') in kernel %d of '%s' is parallel; a "
                        "loop inside a GPU kernel must be bound to a thread axis or serial",
                        loop_name(s), tir__stage_of(s), v->kernel, v->f->name);
    if (s->u.loop.for_kind == TIR_FOR_THREAD) {
        int t = tir__thread_tag_index(s->u.loop.thread_tag);
        int64_t e;
        if (t < 0)
            return te_error(v->ctx, "gpu: loop '%s' (stage '%s') has unknown thread tag '%s'",
                            loop_name(s), tir__stage_of(s),
                            s->u.loop.thread_tag ? s->u.loop.thread_tag : "(none)");
        if (!te_is_const_int(s->u.loop.extent, &e) || e < 1)
            return te_error(v->ctx,
                            "gpu: loop '%s' (stage '%s') is bound to %s but its extent %s is "
                            "not a positive constant",
                            loop_name(s), tir__stage_of(s), s->u.loop.thread_tag,
                            te_expr_str(v->ctx, s->u.loop.extent));
        if (t < 6) {
            if (v->ext[t] && v->ext[t] != e)
                return te_error(v->ctx,
                                "gpu: thread axis %s is bound twice with different extents "
                                "in kernel %d of '%s': loop '%s' (stage '%s') has %lld, loop "
                                "'%s' (stage '%s') has %lld",
                                tags[t], v->kernel, v->f->name, loop_name(v->ext_loop[t]),
                                tir__stage_of(v->ext_loop[t]), (long long)v->ext[t],
                                loop_name(s), tir__stage_of(s), (long long)e);
            v->ext[t] = e;
            v->ext_loop[t] = s;
        }
    }
    return tir_visit_children(w, s);
}

static int kernel_alloc(tir_visitor *w, const tir_stmt *s) {
    verifier *v = w->user;
    const tir_buffer *b = s->u.alloc.buffer;
    if (b->scope == TIR_SCOPE_SHARED) {
        int64_t bytes = tir_buffer_size(b) * te_dtype_bytes(b->dtype);
        v->shared_bytes += bytes;
        size_t n = strlen(v->shared_list);
        snprintf(v->shared_list + n, sizeof v->shared_list - n, "%s%s %lld",
                 n ? ", " : "", b->name, (long long)bytes);
    } else if (b->scope == TIR_SCOPE_GLOBAL) {
        return te_error(v->ctx,
                        "gpu: global buffer '%s' is allocated inside kernel %d of '%s'; "
                        "compute it at the root or give it 'shared' or 'local' scope",
                        b->name, v->kernel, v->f->name);
    }
    return tir_visit_children(w, s);
}

static int check_kernel_stmt(verifier *v, const tir_stmt *s) {
    tir_visitor w = {.user = v, .kind = {[TIR_FOR] = kernel_loop, [TIR_ALLOCATE] = kernel_alloc}};
    return tir_visit(&w, s);
}

static int check_kernel(verifier *v, const tir_stmt *root) {
    memset(v->ext, 0, sizeof v->ext);
    memset(v->ext_loop, 0, sizeof v->ext_loop);
    v->shared_bytes = 0;
    v->shared_list[0] = '\0';
    v->kernel_stage = tir__stage_of(root);
    if (check_kernel_stmt(v, root)) return -1;
    int64_t threads = 1;
    for (int t = 3; t < 6; t++) threads *= v->ext[t] ? v->ext[t] : 1;
    if (threads > v->lim.max_threads_per_block)
        return te_error(v->ctx,
                        "gpu: kernel %d of '%s' (stage '%s') has %lld threads per block "
                        "(threadIdx.x %lld, threadIdx.y %lld, threadIdx.z %lld); the device "
                        "limit is %lld",
                        v->kernel, v->f->name, v->kernel_stage, (long long)threads,
                        (long long)(v->ext[3] ? v->ext[3] : 1), (long long)(v->ext[4] ? v->ext[4] : 1),
                        (long long)(v->ext[5] ? v->ext[5] : 1),
                        (long long)v->lim.max_threads_per_block);
    static const int64_t dim_limit[6] = {2147483647, 65535, 65535, 1024, 1024, 64};
    for (int t = 0; t < 6; t++)
        if (v->ext[t] > dim_limit[t])
            return te_error(v->ctx,
                            "gpu: loop '%s' (stage '%s') binds %s with extent %lld; the limit of "
                            "%s is %lld",
                            loop_name(v->ext_loop[t]), tir__stage_of(v->ext_loop[t]), tags[t],
                            (long long)v->ext[t], tags[t], (long long)dim_limit[t]);
    if (v->shared_bytes > v->lim.max_shared_bytes)
        return te_error(v->ctx,
                        "gpu: kernel %d of '%s' (stage '%s') uses %lld bytes of shared memory "
                        "(%s); the limit per block is %lld",
                        v->kernel, v->f->name, v->kernel_stage, (long long)v->shared_bytes,
                        v->shared_list, (long long)v->lim.max_shared_bytes);
    return 0;
}

/* ---- host level: sequences, global allocations and kernels only ---- */

static int host_loop(tir_visitor *w, const tir_stmt *s) {
    verifier *v = w->user;
    if (s->u.loop.for_kind == TIR_FOR_THREAD) {
        int rc = check_kernel(v, s);
        v->kernel++;
        return rc;
    }
    if (tir__has_thread_loop(s->u.loop.body))
        return te_error(v->ctx,
                        "gpu: loop '%s' (stage '%s') of '%s' is not bound to a thread axis "
                        "but encloses bound loops; bind it (blockIdx/threadIdx) or move it "
                        "inside them",
                        loop_name(s), tir__stage_of(s), v->f->name);
    return te_error(v->ctx,
                    "gpu: stage '%s' of '%s' stores to global memory outside any bound "
                    "loop (loop '%s' is %s); bind its outer loops to blockIdx/threadIdx",
                    tir__stage_of(s), v->f->name, loop_name(s),
                    tir_for_kind_name(s->u.loop.for_kind));
}

static int host_alloc(tir_visitor *w, const tir_stmt *s) {
    verifier *v = w->user;
    if (s->u.alloc.buffer->scope != TIR_SCOPE_GLOBAL)
        return te_error(v->ctx,
                        "gpu: %s buffer '%s' of '%s' is allocated outside any kernel; "
                        "compute it at a loop inside the kernel (compute_at)",
                        tir_scope_name(s->u.alloc.buffer->scope), s->u.alloc.buffer->name,
                        v->f->name);
    return tir_visit_children(w, s);
}

static int host_store(tir_visitor *w, const tir_stmt *s) {
    verifier *v = w->user;
    return te_error(v->ctx,
                    "gpu: stage '%s' of '%s' stores to global memory outside any bound loop; "
                    "bind its outer loops to blockIdx/threadIdx",
                    tir__stage_of(s), v->f->name);
}

static int host_if(tir_visitor *w, const tir_stmt *s) {
    verifier *v = w->user;
    return te_error(v->ctx, "gpu: a condition around stage '%s' of '%s' is outside any bound loop",
                    tir__stage_of(s), v->f->name);
}

static int host_barrier(tir_visitor *w, const tir_stmt *s) {
    (void)s;
    verifier *v = w->user;
    return te_error(v->ctx, "gpu: a barrier in '%s' is outside any kernel", v->f->name);
}

static int host_let(tir_visitor *w, const tir_stmt *s) {
    verifier *v = w->user;
    return te_error(v->ctx,
                    "gpu: let '%s' in '%s' is outside any kernel (kernels take buffers only)",
                    s->u.let.var->u.var.name, v->f->name);
}

static int check_host(verifier *v, const tir_stmt *s) {
    tir_visitor w = {
        .user = v,
        .kind = {
            [TIR_FOR] = host_loop,
            [TIR_ALLOCATE] = host_alloc,
            [TIR_STORE] = host_store,
            [TIR_BUFFER_STORE] = host_store,
            [TIR_IF] = host_if,
            [TIR_BARRIER] = host_barrier,
            [TIR_LET] = host_let,
        },
    };
    return tir_visit(&w, s);
}

int tir_verify_gpu(te_ctx *ctx, const tir_func *f, const tir_gpu_limits *limits) {
    if (!ctx) return -1;
    if (!f || !f->body) {
        tir__null_operand(ctx, "verify_gpu");
        return -1;
    }
    verifier v;
    memset(&v, 0, sizeof v);
    v.ctx = ctx;
    v.f = f;
    v.lim.max_threads_per_block = limits && limits->max_threads_per_block > 0
                                      ? limits->max_threads_per_block
                                      : 1024;
    v.lim.max_shared_bytes =
        limits && limits->max_shared_bytes > 0 ? limits->max_shared_bytes : 48 * 1024;
    return check_host(&v, f->body);
}
