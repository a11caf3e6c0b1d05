/*
 * autotune/decode.c — mapping a stored step log back to a program (sketch
 * index and hole values), so that the best records of a database can seed
 * a resumed search. The log carries every hole value only implicitly
 * (split factors, fuse counts, pragma values, the consumer's split
 * structure), so instead of parsing it with a mirror of every apply rule
 * the program is searched for: per sketch a coordinate search over the
 * holes, each hole's candidates limited to values the log can hold (split
 * tuples made of the log's split factors), scored by the multiset overlap
 * of step hashes, and accepted only on an exact match of the whole log.
 */
#include <stdlib.h>
#include <string.h>

#include "autotune/rules/rule.h"

typedef struct {
    const char *key;
    te_ctx *ctx;
    tune_workload w;
    int uses;
} dscratch;

static int dfresh(dscratch *d) {
    te_ctx_free(d->ctx);
    d->ctx = te_ctx_new();
    d->uses = 0;
    return d->ctx ? tune_build_workload(d->ctx, d->key, &d->w) : -1;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Similarity of p's log to the target: first -(size of the symmetric
 * difference) of the step-hash multisets (target's sorted), then the count
 * of steps equal at the same position (which orders the values within a
 * hole: a split's factors give the same steps in any order). Very
 * negative for an invalid program. *exact: the logs are equal. */
static long score(dscratch *d, const tune_sketch *sk, const tune_program *p, const uint64_t *tsorted,
                  const uint64_t *tseq, int tn, bool *exact, int *common_out) {
    *exact = false;
    *common_out = 0;
    if (++d->uses > 256 && dfresh(d)) return -1000000000L;
    sch_schedule *s = tune_program_apply(d->ctx, &d->w, sk, p);
    if (!s) return -1000000000L;
    int n = sch_num_steps(s);
    uint64_t buf[512], *h = n <= 512 ? buf : malloc(sizeof *h * (size_t)n);
    if (!h) return -1000000000L;
    int pos = 0; /* steps equal at the same position: orders the values within a hole */
    for (int i = 0; i < n; i++) {
        h[i] = tune__log_hash(tdb_steps_to_json(1, sch_get_step(s, i)));
        pos += i < tn && h[i] == tseq[i];
    }
    bool same = n == tn && pos == tn;
    qsort(h, (size_t)n, sizeof *h, cmp_u64);
    int i = 0, j = 0, common = 0;
    while (i < n && j < tn) {
        if (h[i] == tsorted[j]) common++, i++, j++;
        else if (h[i] < tsorted[j]) i++;
        else j++;
    }
    if (h != buf) free(h);
    *exact = same;
    *common_out = common;
    return (-(long)(n - common) - (long)(tn - common)) * 4096 + pos;
}

/* The candidate value vectors of one hole: appends rows of h->nvals
 * values to cand (at most max rows). */
static int hole_candidates(const tune_hole *h, const int64_t *factors, int nf, int64_t *cand,
                           int max) {
    int n = 0;
    switch (h->kind) {
    case TUNE_HOLE_SPLIT:
    case TUNE_HOLE_VECTOR: {
        int m = h->kind == TUNE_HOLE_SPLIT ? h->nvals : 1;
        if (m > 4 || m < 1) return 0; /* 4: GPU spatial tiles */
        int idx[4] = {0, 0, 0, 0};
        /* every valid m-tuple of the log's factors (tune_split_valid:
         * a tailed innermost factor included) */
        for (;;) {
            int64_t prod = 1, row[4];
            for (int k = 0; k < m; k++) row[k] = factors[idx[k]], prod *= row[k];
            bool ok = h->kind == TUNE_HOLE_SPLIT
                          ? tune_split_valid(h, row)
                          : tune__vector_valid(h, row[0]);
            if (ok && n < max) {
                memcpy(cand + (size_t)n * (size_t)m, row, sizeof(int64_t) * (size_t)m);
                n++;
            }
            int k = m - 1;
            while (k >= 0 && ++idx[k] == nf) idx[k--] = 0;
            if (k < 0) break;
        }
        break;
    }
    case TUNE_HOLE_UNROLL:
        for (int v = 0; v < TUNE__NUNROLL && n < max; v++) cand[n++] = v;
        break;
    case TUNE_HOLE_PARALLEL:
    case TUNE_HOLE_LOCATION:
        for (int64_t v = 1; v <= h->extent && n < max; v++) cand[n++] = v;
        break;
    case TUNE_HOLE_GPU_UNROLL:
    case TUNE_HOLE_GPU_THREADS:
    case TUNE_HOLE_GPU_FETCH: /* table indices 0..extent-1 */
        for (int64_t v = 0; v < h->extent && n < max; v++) cand[n++] = v;
        break;
    case TUNE_HOLE_GPU_TC: /* a flag or depth (extent <= 4), else a tile: a factor of the log */
        if (h->extent <= 4)
            for (int64_t v = 0; v <= h->extent && n < max; v++) cand[n++] = v;
        else
            for (int k = 0; k < nf && n < max; k++)
                if (factors[k] > 0 && h->extent % factors[k] == 0) cand[n++] = factors[k];
        break;
    }
    return n;
}

int tune__program_nearest(const char *key, const tune_sketch *sketches, int nsketches,
                          const char *steps_json, tune_program *out, int *common_out,
                          int *total_out, char **err) {
    dscratch d = {key, NULL, {0}, 0};
    int rc = -1;
    uint64_t *tseq = NULL, *tsorted = NULL;
    int64_t *cand = NULL;
    if (dfresh(&d)) {
        if (err) *err = tune__strdupf("autotune: resume: %s", d.ctx ? te_ctx_errmsg(d.ctx) : "out of memory");
        goto done;
    }
    int tn;
    sch_step *steps;
    if (tdb_steps_from_json(d.ctx, steps_json, &tn, &steps)) {
        if (err) *err = tune__strdupf("autotune: resume: %s", te_ctx_errmsg(d.ctx));
        goto done;
    }
    if (!sch_replay(d.ctx, d.w.nouts, d.w.outs, tn, steps)) {
        if (err) *err = tune__strdupf("autotune: resume: %s", te_ctx_errmsg(d.ctx));
        goto done;
    }
    tseq = malloc(sizeof *tseq * (size_t)(tn + 1));
    tsorted = malloc(sizeof *tsorted * (size_t)(tn + 1));
    /* The split and pack factors of the log (distinct), the alphabet of
     * split holes. */
    int64_t factors[64];
    int nf = 0;
    enum { MAXC = 4096 };
    cand = malloc(sizeof *cand * MAXC * 4); /* rows of up to 4 factors */
    if (!tseq || !tsorted || !cand) {
        if (err) *err = tune__strdupf("autotune: resume: out of memory");
        goto done;
    }
    for (int i = 0; i < tn; i++) {
        tseq[i] = tsorted[i] = tune__log_hash(tdb_steps_to_json(1, &steps[i]));
        /* A pack factor is an innermost tile factor too (packed tiles). */
        if ((steps[i].kind == SCH_STEP_SPLIT && !steps[i].nparts) ||
            steps[i].kind == SCH_STEP_PACK) {
            bool have = false;
            for (int k = 0; k < nf; k++) have |= factors[k] == steps[i].value;
            if (!have && nf < 64) factors[nf++] = steps[i].value;
        }
    }
    if (nf == 0) factors[nf++] = 1;
    qsort(tsorted, (size_t)tn, sizeof *tsorted, cmp_u64);
    rc = 0;
    long nearest = 0; /* the score of *out when rc == 2 */
    for (int k = 0; k < nsketches && rc != 1; k++) {
        const tune_sketch *sk = &sketches[k];
        tune_program p;
        memset(&p, 0, sizeof p);
        p.sketch = k;
        /* Start from the smallest values: factors 1, level 1; but every
         * outer loop parallel, since a parallel loop takes in more loops
         * while its extent is 1 (tune__fuse_parallel): from 1, the fused
         * count would follow each split tried, and no single move would
         * reach a log whose loops were fused that way. */
        for (int i = 0; i < sk->nholes; i++) {
            const tune_hole *h = &sk->holes[i];
            for (int j = 0; j < h->nvals; j++)
                p.vals[h->offset + j] = h->kind == TUNE_HOLE_UNROLL || h->kind >= TUNE_HOLE_GPU_UNROLL ? 0
                                        : h->kind == TUNE_HOLE_PARALLEL                               ? h->extent
                                                                                                      : 1;
        }
        /* A tensor-core unit's knobs constrain each other (the warp tile
         * divides the block tile...), so moving one hole at a time from
         * 1s finds no valid program: its tiles are read from the log (the
         * WMMA template splits by bm, wm, 16, bn, wn, 16, then its
         * accumulator by 16, 16, kc; the wgmma one by bm, wm, 64, bn, wn,
         * group_m where over 1, then 64, kc, 16: the first splits of a
         * sketch with no other tile), its flags and depth tried; else it
         * starts from its structural program. */
        for (int u = 0; u < sk->nunits; u++) {
            if (sk->units[u].kind != TUNE_UNIT_GPU_TENSORCORE) continue;
            tune_heur c = {sk, NULL, 1, false};
            tune__unit_rule(sk->units[u].kind)->structural(&c, u, &p);
            int64_t sv[9];
            int nsv = 0;
            for (int i = 0; i < tn && nsv < 9; i++)
                if (steps[i].kind == SCH_STEP_SPLIT && !steps[i].nparts) sv[nsv++] = steps[i].value;
            bool engines = sk->units[u].vec_dim & 16; /* the engine and group_m holes */
            tune_program t = p;
            bool hit = false;
#define TC_SET(k, v) (t.vals[tune__unit_hole(sk, u, (k))->offset] = (v))
            if (nsv >= 9) {
                const int64_t tiles[5] = {sv[0], sv[3], sv[1], sv[4], sv[8]};
                for (int k = 0; k < 5; k++) TC_SET(k, tiles[k]);
                if (engines) TC_SET(7, 0), TC_SET(8, 0);
                for (int f = 0; f < 8 && !hit; f++) {
                    TC_SET(5, f & 1);
                    TC_SET(6, 1 + f / 2);
                    bool ex;
                    int cm;
                    score(&d, sk, &t, tsorted, tseq, tn, &ex, &cm);
                    hit = ex;
                }
            }
            if (engines && nsv >= 8)
                for (int f = 0; f < 12 && !hit; f++) {
                    int64_t g = (int64_t[]){1, 4, 8}[f / 4];
                    const int64_t tiles[5] = {sv[0], sv[3], sv[1], sv[4], g > 1 ? sv[7] : sv[6]};
                    for (int k = 0; k < 5; k++) TC_SET(k, tiles[k]);
                    TC_SET(5, 1), TC_SET(6, 1 + f % 4), TC_SET(7, 1), TC_SET(8, g);
                    bool ex;
                    int cm;
                    score(&d, sk, &t, tsorted, tseq, tn, &ex, &cm);
                    hit = ex;
                }
#undef TC_SET
            if (hit) p = t;
        }
        bool exact;
        int common, best_common;
        long best = score(&d, sk, &p, tsorted, tseq, tn, &exact, &common);
        best_common = common;
        for (int sweep = 0; sweep < 4 && !exact; sweep++) {
            bool moved = false;
            for (int i = 0; i < sk->nholes && !exact; i++) {
                const tune_hole *h = &sk->holes[i];
                int m = h->kind == TUNE_HOLE_SPLIT ? h->nvals : 1;
                int nc = hole_candidates(h, factors, nf, cand, MAXC);
                int64_t keep[4];
                memcpy(keep, p.vals + h->offset, sizeof(int64_t) * (size_t)m);
                int64_t bestv[4];
                memcpy(bestv, keep, sizeof bestv);
                for (int c = 0; c < nc && !exact; c++) {
                    memcpy(p.vals + h->offset, cand + (size_t)c * (size_t)m, sizeof(int64_t) * (size_t)m);
                    if (!memcmp(p.vals + h->offset, keep, sizeof(int64_t) * (size_t)m)) continue;
                    long sc = score(&d, sk, &p, tsorted, tseq, tn, &exact, &common);
                    if (sc > best || exact) {
                        best = sc, best_common = common, moved = true;
                        memcpy(bestv, p.vals + h->offset, sizeof(int64_t) * (size_t)m);
                    }
                }
                memcpy(p.vals + h->offset, bestv, sizeof(int64_t) * (size_t)m);
            }
            if (!moved) break;
        }
        if (exact) {
            *out = p;
            rc = 1;
        } else if (best > -1000000000L && (rc == 0 || best > nearest)) {
            /* A valid program that shares steps with the log. */
            *out = p;
            nearest = best, rc = 2;
            if (common_out) *common_out = best_common;
        }
    }
    if (rc == 1 && common_out) *common_out = tn;
    if (total_out) *total_out = tn;
done:
    free(tseq), free(tsorted), free(cand);
    te_ctx_free(d.ctx);
    return rc;
}

int tune_program_from_steps(const char *key, const tune_sketch *sketches, int nsketches,
                            const char *steps_json, tune_program *out, char **err) {
    tune_program p;
    int r = tune__program_nearest(key, sketches, nsketches, steps_json, &p, NULL, NULL, err);
    if (r == 1) *out = p;
    return r == 2 ? 0 : r;
}
