/*
 * bench/search_space.c — the tuner's search space as text: for each
 * workload key (a built-in list when none is given), every CPU and CUDA
 * sketch (description, units, holes), its heuristic and structural
 * programs, random programs and their mutations for fixed seeds with their step logs, the
 * log decoder's answer on a few, and the default schedule. Two builds of
 * the library that print the same text generate, fill, mutate and decode
 * the same programs: a refactoring of the search rules (autotune/rules/)
 * is checked without tuning anything (issue 31, part 3). CUDA sketches
 * need no GPU. The default schedule and the packed tiles follow the
 * host's vector width: compare builds on one machine.
 * Usage: bench_search_space [--random N] [KEY...]   (N: 6 by default)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <loom/loom.h>

/* The default workloads: every kind of unit, CPU and CUDA, between them. */
static const char *KEYS[] = {
    "matmul(M=1024,N=1024,K=1024)",
    "matmul(M=37,N=32,K=16)",
    "conv2d(N=1,C=128,H=28,W=28,K=128,R=3,S=3,stride=1,pad=1)",
    "conv2d(N=1,C=8,H=14,W=14,K=32,R=3,S=3,pad=1)",
    "conv2d_nchw(N=1,C=8,H=15,W=15,K=16,R=3,S=3,stride=2,pad=1)",
    "conv2d_nhwc(N=1,H=6,W=6,C=4,K=16,R=3,S=3,pad=1)",
    "depthwise_conv2d_nchw(N=1,C=16,H=14,W=14,R=3,S=3,pad=1)",
    "softmax(M=4,N=1000)",
    "softmax(M=6,N=100)",
    "layer_norm(M=6,N=96)",
    "conv2d_bias_relu(N=1,C=8,H=14,W=14,K=32,R=3,S=3,pad=1)",
    "dense_bias_gelu(M=16,N=32,K=24)",
    "max_pool2d(N=1,C=4,H=15,W=15,R=3,S=3,stride=2,pad=1)",
    "add(D0=2,D1=3,D2=5,D3=16,a_bcast=2,b_bcast=13)",
    "max(D0=5,D1=6,D2=70,axes=5)",
    "onnx(opset=13;x v0:float[12,24];w v1:float[24,32];w v2:float[32];n v3=MatMul(v0,v1);"
    "n v4=Add(v3,v2);n v5=Relu(v4);out v5)",
    "onnx(opset=13;x v0:float[1,4,6,6];w v1:float[16,4,3,3];w v2:float[16];"
    "x v3:float[1,16,6,6];n v4=Conv(v0,v1,v2){kernel_shape=I[3,3],pads=I[1,1,1,1]};"
    "n v5=Add(v4,v3);n v6=Relu(v5);out v6)",
};

/* The program's values and the step log of applying it. */
static void show(te_ctx *ctx, const tune_workload *w, const tune_sketch *sk, const tune_program *p,
                 const char *what) {
    printf("  %s vals", what);
    for (int i = 0; i < sk->nvals; i++) printf(" %lld", (long long)p->vals[i]);
    sch_schedule *s = tune_program_apply(ctx, w, sk, p);
    printf("\n    %s\n", s ? tune_steps_key(ctx, s) : te_ctx_errmsg(ctx));
}

/* Every sketch of key on one target: description, units, holes and
 * inlined stages; its heuristic programs (4, 8 and 16 lanes); nrand
 * random programs, each mutated 3 times in a row; the log decoder on a
 * random program of the first 3 sketches. */
static void run(const char *key, int gpu, int nrand) {
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    printf("== %s %s\n", gpu ? "cuda" : "llvm", key);
    if (tune_build_workload(ctx, key, &w)) {
        printf("build: %s\n", te_ctx_errmsg(ctx));
        te_ctx_free(ctx);
        return;
    }
    tune_sketch sk[TUNE_MAX_SKETCHES];
    int dropped = -1;
    int n = gpu ? tune_generate_sketches_gpu_ex(ctx, &w, sk, TUNE_MAX_SKETCHES, &dropped)
                : tune_generate_sketches_ex(ctx, &w, sk, TUNE_MAX_SKETCHES, &dropped);
    printf("sketches %d dropped %d %s\n", n, dropped, n < 0 ? te_ctx_errmsg(ctx) : "");
    for (int k = 0; k < n; k++) {
        printf("[%d] %s\n  units", k, sk[k].desc);
        for (int u = 0; u < sk[k].nunits; u++)
            printf(" %d/%d/%d/%d", sk[k].units[u].kind, sk[k].units[u].stage,
                   sk[k].units[u].consumer, sk[k].units[u].vec_dim);
        printf("\n  holes");
        for (int h = 0; h < sk[k].nholes; h++) {
            const tune_hole *x = &sk[k].holes[h];
            printf(" %d/%d/%d/%d/%lld/%d/%d", x->kind, x->unit, x->offset, x->nvals,
                   (long long)x->extent, x->reduce, x->tail);
        }
        printf(" inline");
        for (int i = 0; i < sk[k].ninline; i++) printf(" %d", sk[k].inlined[i]);
        printf("\n");
        for (int vlen = 4; vlen <= 16; vlen *= 2) {
            tune_program hp[TUNE_MAX_HEURISTIC];
            int nh = tune_program_heuristic(&sk[k], k, &w, vlen, hp, TUNE_MAX_HEURISTIC);
            for (int i = 0; i < nh; i++) {
                char what[64];
                snprintf(what, sizeof what, "heur vlen %d #%d", vlen, i);
                show(ctx, &w, &sk[k], &hp[i], what);
            }
            if (tune_program_structural(&sk[k], k, &w, vlen, hp)) {
                char what[64];
                snprintf(what, sizeof what, "structural vlen %d", vlen);
                show(ctx, &w, &sk[k], &hp[0], what);
            }
        }
        uint64_t rng = 1234567 + (uint64_t)k;
        for (int r = 0; r < nrand; r++) {
            tune_program p;
            tune_program_random(&sk[k], k, &rng, &p);
            show(ctx, &w, &sk[k], &p, "rand");
            for (int m = 0; m < 3; m++) {
                int rc = tune_program_mutate(&sk[k], &rng, &p);
                char what[32];
                snprintf(what, sizeof what, "mut%d rc %d", m, rc);
                show(ctx, &w, &sk[k], &p, what);
            }
        }
        printf("  rng %llu\n", (unsigned long long)rng);
        uint64_t r2 = 99 + (uint64_t)k;
        tune_program p, q;
        tune_program_random(&sk[k], k, &r2, &p);
        sch_schedule *s = tune_program_apply(ctx, &w, &sk[k], &p);
        if (s && k < 3) {
            char *js = tdb_schedule_to_json(s), *err = NULL;
            memset(&q, 0, sizeof q);
            int rc = tune_program_from_steps(key, sk, n, js, &q, &err);
            printf("  decode rc %d sketch %d vals", rc, q.sketch);
            for (int i = 0; rc == 1 && i < sk[q.sketch].nvals; i++)
                printf(" %lld", (long long)q.vals[i]);
            printf(" %s\n", err ? err : "");
            free(js); free(err);
        }
    }
    te_ctx_free(ctx);
}

static void default_schedule(const char *key) {
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    if (tune_build_workload(ctx, key, &w) == 0) {
        const char *how = NULL;
        sch_schedule *s = tune_default_schedule(ctx, &w, "llvm", &how);
        printf("default %s: %s\n  %s\n", key, how ? how : "-",
               s ? tune_steps_key(ctx, s) : te_ctx_errmsg(ctx));
    }
    te_ctx_free(ctx);
}

int main(int argc, char **argv) {
    int nrand = 6, first = 1;
    if (argc > 2 && !strcmp(argv[1], "--random")) nrand = atoi(argv[2]), first = 3;
    const char *const *keys = first < argc ? (const char *const *)argv + first : KEYS;
    int nkeys = first < argc ? argc - first : (int)(sizeof KEYS / sizeof *KEYS);
    for (int i = 0; i < nkeys; i++) {
        run(keys[i], 0, nrand);
        run(keys[i], 1, nrand);
    }
    for (int i = 0; i < nkeys; i++) default_schedule(keys[i]);
    return 0;
}
