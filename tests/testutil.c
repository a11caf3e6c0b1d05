#include "testutil.h"

#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

uint64_t tu_seed(void) {
    static uint64_t seed;
    if (seed) return seed;
    const char *env = getenv("LOOM_TEST_SEED");
    if (env && *env) seed = strtoull(env, NULL, 0);
    else seed = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^ 0x9e3779b97f4a7c15ull;
    if (!seed) seed = 1;
    fprintf(stderr, "[testutil] LOOM_TEST_SEED=%llu\n", (unsigned long long)seed);
    return seed;
}

uint64_t tu_rand_u64(uint64_t *s) {
    uint64_t x = *s ? *s : 0x2545f4914f6cdd1dull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

double tu_rand_uniform(uint64_t *s, double lo, double hi) {
    double u = (double)(tu_rand_u64(s) >> 11) * (1.0 / 9007199254740992.0);
    return lo + (hi - lo) * u;
}

DLTensor *tu_rand_f32(uint64_t *state, int ndim, const int64_t *shape) {
    DLTensor *t = rt_tensor_alloc((DLDataType){kDLFloat, 32, 1}, ndim, shape);
    assert_non_null(t);
    float *p = t->data;
    int64_t n = rt_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) p[i] = (float)tu_rand_uniform(state, -1.0, 1.0);
    return t;
}

void tu_poison_f32(DLTensor *t) {
    float *p = t->data;
    int64_t n = rt_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) p[i] = NAN;
}

DLTensor *tu_nan_f32(int ndim, const int64_t *shape) {
    DLTensor *t = rt_tensor_alloc((DLDataType){kDLFloat, 32, 1}, ndim, shape);
    assert_non_null(t);
    tu_poison_f32(t);
    return t;
}

int64_t tu_compare_f32(const char *what, const float *got, const double *want, int64_t n,
                       double rtol, double atol) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        if (!(fabs(g - w) <= atol + rtol * fabs(w))) {
            if (bad < 5)
                fprintf(stderr, "%s: element %lld: got %.9g, want %.9g\n", what, (long long)i,
                        g, w);
            bad++;
        }
    }
    if (bad) fprintf(stderr, "%s: %lld of %lld elements differ\n", what, (long long)bad,
                     (long long)n);
    return bad;
}

void tu_assert_msg_has_(const char *msg, const char *file, int line, ...) {
    va_list ap;
    va_start(ap, line);
    const char *want;
    while ((want = va_arg(ap, const char *)) != NULL) {
        if (!msg || !strstr(msg, want)) {
            va_end(ap);
            fprintf(stderr, "%s:%d: message \"%s\" lacks \"%s\"\n", file, line,
                    msg ? msg : "(null)", want);
            _fail(file, line);
            return;
        }
    }
    va_end(ap);
}

int tu_read_suite(const char *path, tu_suite_line *lines, int cap) {
    FILE *f = fopen(path, "r");
    if (!f) fprintf(stderr, "%s: cannot open (run from the source tree)\n", path);
    assert_non_null(f);
    char buf[512];
    int n = 0;
    while (fgets(buf, sizeof buf, f)) {
        if (buf[0] == '#' || buf[0] == '\n') continue;
        assert_true(n < cap);
        tu_suite_line *l = &lines[n++];
        int got = sscanf(buf, "%63s %63s %255s", l->name, l->op, l->shape);
        if (got != 3) fprintf(stderr, "%s: a line without name, op and params: %s", path, buf);
        assert_int_equal(got, 3);
    }
    fclose(f);
    return n;
}

int tu_rmtree(const char *dir) {
    char cmd[4200];
    if (!dir || strchr(dir, '\'') || snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir) >= (int)sizeof cmd)
        return -1;
    return system(cmd) == 0 ? 0 : -1;
}

te_tensor *tu_matmul(te_ctx *ctx, te_dtype t, int64_t M, int64_t N, int64_t K, te_tensor **A,
                     te_tensor **B) {
    *A = te_placeholder(ctx, "A", t, TE_SHAPE(M, K));
    *B = te_placeholder(ctx, "B", t, TE_SHAPE(K, N));
    te_expr *i = te_axis(ctx, "i", M), *j = te_axis(ctx, "j", N);
    te_expr *k = te_reduce_axis(ctx, "k", K);
    te_expr *x = te_read(*A, i, k), *y = te_read(*B, k, j);
    if (t.bits != 32) {
        x = te_cast(TE_FLOAT32, x);
        y = te_cast(TE_FLOAT32, y);
    }
    return te_compute(ctx, "C", TE_AXES(i, j), te_sum(te_mul(x, y), k));
}

int tu_count_substr(const char *text, const char *what) {
    int n = 0;
    size_t len = strlen(what);
    for (const char *p = text; len && (p = strstr(p, what)); p += len) n++;
    return n;
}

const char *tu_bindir(void) {
    static char dir[PATH_MAX];
    if (dir[0]) return dir;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = 0;
    snprintf(dir, sizeof dir, "%s", dirname(self));
    return dir;
}

int tu_run(char *out, size_t size, const char *fmt, ...) {
    char cmd[16384];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(cmd, sizeof cmd - 8, fmt, ap);
    va_end(ap);
    assert_true(len >= 0 && (size_t)len < sizeof cmd - 8); /* not cut */
    strcat(cmd, " 2>&1");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, size - 1, p);
    out[n] = 0;
    char drain[4096]; /* the rest, so that the command never blocks on a full pipe */
    while (fread(drain, 1, sizeof drain, p) > 0) {}
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
