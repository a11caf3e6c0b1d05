/*
 * tests/plugin_example.c — an example plugin of a user's operator, built
 * as a loadable module (libloom_plugin_example.so) for
 * `autotune --plugin` and `tunedb --plugin`, and for tune_load_plugin.
 *
 *   user.sqnorm_rows(M=<rows>,N=<columns>)
 *       X[M, N] -> Y[M] = sum_j X[i, j]^2 + 1    (float32)
 *
 * `autotune --plugin ./libloom_plugin_example.so --op user.sqnorm_rows
 * --shape M=64,N=256` tunes the key "user.sqnorm_rows(M=64,N=256)": the
 * tools form "OP(SHAPE)" and the builder parses the text in parentheses.
 * Built with -DPLUGIN_FAIL its entry point fails, with -DPLUGIN_NO_ENTRY
 * it has none (the tests of the error messages).
 */
#include <stdio.h>
#include <string.h>

#include <loom/autotune.h>

#define PREFIX "user.sqnorm_rows"

static int build(te_ctx *ctx, const char *key, tune_workload *out) {
    long long m = 0, n = 0;
    int used = 0;
    if (sscanf(key, PREFIX "(M=%lld,N=%lld)%n", &m, &n, &used) != 2 || key[used] || m < 1 ||
        n < 1)
        return te_error(ctx, "%s: bad key '%s': expected %s(M=<rows>,N=<columns>), both >= 1",
                        PREFIX, key, PREFIX);
    te_tensor *X = te_placeholder(ctx, "X", TE_FLOAT32, TE_SHAPE(m, n));
    te_expr *i = te_axis(ctx, "i", m), *j = te_reduce_axis(ctx, "j", n);
    te_expr *x = te_read(X, i, j);
    te_tensor *S = te_compute(ctx, "S", TE_AXES(i), te_sum(te_mul(x, x), j));
    te_expr *i2 = te_axis(ctx, "i2", m);
    te_tensor *Y = te_compute(ctx, "Y", TE_AXES(i2), te_add(te_read(S, i2), te_float(ctx, 1.0)));
    if (!Y) return -1;
    out->nargs = 2;
    out->args = te_alloc(ctx, 2 * sizeof(te_tensor *));
    if (!out->args) return -1;
    out->args[0] = X, out->args[1] = Y;
    out->nouts = 1;
    out->outs = out->args + 1;
    out->flops = 2.0 * (double)m * (double)n + (double)m;
    return 0;
}

#ifdef PLUGIN_NO_ENTRY
int not_the_entry_point(void) { return tune_register_builder(PREFIX, build); }
#else
int loom_register_ops(void) {
#ifdef PLUGIN_FAIL
    (void)build;
    return 3;
#else
    return tune_register_builder(PREFIX, build);
#endif
}
#endif
