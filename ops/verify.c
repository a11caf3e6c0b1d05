/*
 * ops/verify.c — the naive references run on DLPack tensors, the
 * comparison tolerance, and checking a compiled module against the
 * reference on fresh random data (on the GPU for a CUDA module).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/codegen.h"
#include "ops_internal.h"

static te_ctx *wctx(const ops_workload *w) { return w->args[0]->ctx; }

static int64_t numel(const te_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

/* Checks that tensor x can stand for t. */
static int check_tensor(const ops_workload *w, const te_tensor *t, const DLTensor *x) {
    te_ctx *ctx = wctx(w);
    if (!x || !x->data)
        return te_error(ctx, "ops: %s: tensor '%s' is missing or has no data", w->op, t->name);
    if (x->device.device_type != kDLCPU)
        return te_error(ctx, "ops: %s: tensor '%s' must be on the CPU", w->op, t->name);
    DLDataType want = cg_dl_type(w->dtype);
    if (x->dtype.code != want.code || x->dtype.bits != want.bits || x->dtype.lanes != 1)
        return te_error(ctx, "ops: %s: tensor '%s' must have dtype %s", w->op, t->name,
                        te_dtype_str(w->dtype));
    if (x->ndim != t->ndim)
        return te_error(ctx, "ops: %s: tensor '%s' has rank %d, expected %d", w->op, t->name,
                        x->ndim, t->ndim);
    int64_t stride = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (x->shape[d] != t->shape[d])
            return te_error(ctx, "ops: %s: tensor '%s' has extent %lld in dimension %d, "
                                 "expected %lld",
                            w->op, t->name, (long long)x->shape[d], d, (long long)t->shape[d]);
        if (x->strides && x->strides[d] != stride && t->shape[d] != 1)
            return te_error(ctx, "ops: %s: tensor '%s' must be compact row-major", w->op,
                            t->name);
        stride *= t->shape[d];
    }
    return 0;
}

int ops_reference(const ops_workload *w, DLTensor *const *ins, double *const *out) {
    if (!w || !ins || !out) return -1;
    const ops__priv *pv = w->priv;
    for (int i = 0; i < w->ninputs; i++)
        if (check_tensor(w, w->inputs[i], ins[i])) return -1;
    double *in[8] = {0};
    int rc = 0;
    for (int i = 0; i < w->ninputs && i < 8; i++) {
        int64_t n = numel(w->inputs[i]);
        in[i] = malloc(sizeof(double) * (size_t)n);
        if (!in[i]) {
            rc = te_error(wctx(w), "ops: %s: out of memory for the reference", w->op);
            goto done;
        }
        for (int64_t k = 0; k < n; k++) in[i][k] = rt_tensor_get(ins[i], k);
    }
    pv->impl->reference(w, w->param_values, (const double *const *)in, out);
done:
    for (int i = 0; i < 8; i++) free(in[i]);
    return rc;
}

void ops_tolerance(const ops_workload *w, double *rtol, double *atol) {
    const ops__priv *pv = w->priv;
    double L = (double)(pv->reduce_len > 0 ? pv->reduce_len : 1);
    /* Float32 sums of L terms of magnitude <= 1 in any order differ by
     * O(L eps) in the worst case; elementwise math by a few ulp. */
    bool f64 = w->dtype.bits == 64;
    if (rtol) *rtol = f64 ? 1e-9 : 1e-4;
    if (atol) *atol = f64 ? 1e-9 * (1 + L) : 1e-4 + 1e-6 * L;
    /* 16-bit outputs of a float32 sum (the reference sums the same 16-bit
     * inputs exactly): the float32 sum's error as above, then one
     * rounding to the output type, at most half an ulp = u |c| with
     * u = 2^-11 (float16), 2^-8 (bfloat16); rtol = 2u leaves room for the
     * sum's own relative error on top of that. */
    if (te_dtype_is_half(w->dtype) && rtol) *rtol = w->dtype.code == TE_BFLOAT ? 0x1p-7 : 0x1p-10;
    /* tf32 products (matmul tf32=1 on tensor cores): each operand cut to
     * 10 mantissa bits, rounded (WMMA's fragments, __float_to_tf32: u =
     * 2^-11) or truncated (wgmma reads the float32 bits from shared
     * memory and drops the low 13, as cuBLAS's sm_90 kernels do: u =
     * 2^-10), so a product of factors of magnitude <= 1 is off by at most
     * 2u and the sum by 2u L; a kernel that reads a wrong chunk is off by
     * O(sqrt(L)) in most outputs. */
    if (pv->tf32 && atol) *atol += 0x1p-9 * L;
}

static uint64_t next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

int64_t ops_check_module(const ops_workload *w, rt_module *m, const char *fn, uint64_t seed) {
    if (!w || !m) return -1;
    te_ctx *ctx = wctx(w);
    DLTensor *t[16] = {0}, *d[16] = {0};
    double *want[8] = {0};
    int64_t bad = -1;
    uint64_t st = seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL;
    if (!st) st = 1;
    DLDataType dt = cg_dl_type(w->dtype);
    if (w->nargs > 16 || w->nouts > 8) return te_error(ctx, "ops: %s: too many arguments", w->op);
    for (int i = 0; i < w->nargs; i++) {
        t[i] = rt_tensor_alloc(dt, w->args[i]->ndim, w->args[i]->shape);
        if (!t[i]) {
            te_error(ctx, "ops: %s: %s", w->op, rt_last_error());
            goto done;
        }
        int64_t n = rt_tensor_numel(t[i]);
        bool out = i >= w->ninputs;
        for (int64_t k = 0; k < n; k++) {
            double v = out ? NAN : (double)(next(&st) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
            rt_tensor_set(t[i], k, v);
        }
    }
    for (int o = 0; o < w->nouts; o++) {
        want[o] = malloc(sizeof(double) * (size_t)numel(w->outs[o]));
        if (!want[o]) {
            te_error(ctx, "ops: %s: out of memory", w->op);
            goto done;
        }
    }
    if (rt_module_device(m) == kDLCUDA) {
        /* Device copies of every argument (the poisoned outputs too), the
         * call, and the outputs copied back over the host tensors. */
        for (int i = 0; i < w->nargs; i++) {
            d[i] = rt_cuda_tensor_alloc(dt, w->args[i]->ndim, w->args[i]->shape, 0);
            if (!d[i] || rt_tensor_copy(d[i], t[i])) {
                te_error(ctx, "ops: %s: device tensor '%s': %s", w->op, w->args[i]->name,
                         rt_last_error());
                goto done;
            }
        }
        if (rt_call(m, fn ? fn : "default", w->nargs, d)) {
            te_error(ctx, "ops: %s: calling the module failed: %s", w->op, rt_module_errmsg(m));
            goto done;
        }
        for (int i = w->ninputs; i < w->nargs; i++)
            if (rt_tensor_copy(t[i], d[i])) {
                te_error(ctx, "ops: %s: copying '%s' back: %s", w->op, w->args[i]->name,
                         rt_last_error());
                goto done;
            }
    } else {
        /* Through rt_prepare: a module built with constant_args (as the
         * tuner and bench_suite build) takes its pre-computed tensors after
         * the arguments; for any other module this is rt_call. */
        rt_prepared *p = rt_prepare(m, fn ? fn : "default", w->nargs, t);
        int rc = p ? rt_prepared_call(p, w->nargs, t) : -1;
        if (rc) te_error(ctx, "ops: %s: calling the module failed: %s", w->op, rt_last_error());
        rt_prepared_free(p);
        if (rc) goto done;
    }
    if (ops_reference(w, t, want)) goto done;
    double rtol, atol;
    ops_tolerance(w, &rtol, &atol);
    bad = 0;
    for (int o = 0; o < w->nouts; o++) {
        const DLTensor *x = t[w->ninputs + o];
        int64_t n = rt_tensor_numel(x);
        for (int64_t k = 0; k < n; k++) {
            double got = rt_tensor_get(x, k);
            double d = fabs(got - want[o][k]);
            /* Equal infinities (a max over padding) match. */
            if (!(d <= atol + rtol * fabs(want[o][k])) && !(got == want[o][k])) bad++;
        }
    }
done:
    for (int i = 0; i < 16; i++) {
        rt_tensor_free(t[i]);
        rt_tensor_free(d[i]);
    }
    for (int o = 0; o < 8; o++) free(want[o]);
    return bad;
}
