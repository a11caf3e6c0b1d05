/*
 * autotune/program.c — programs: a sketch with its holes filled. Random
 * annotation (Ansor §4.2: tile sizes from the factorisations of each
 * extent, parallel granularity, unroll depth, compute location), mutation
 * (Ansor §5.1: tile size, unroll, parallel granularity, compute
 * location) and applying a program to a fresh schedule with ordinary
 * primitives, so its step log replays on a rebuilt workload. Each is a
 * loop over the sketch's units that asks the unit's rule
 * (autotune/rules/); the CPU holes' own random draws and mutations, which
 * the CPU rules share, are here.
 *
 * Unlike Ansor, whose tile sizes are all divisors of the extent, the
 * innermost factor of a tailed split hole (a non-vectorized spatial axis
 * of a CPU tile) may be any integer up to TUNE_MAX_TAIL_INNER: the 6-row
 * register tile of sgemm kernels on 1024 rows. Lowering guards the last
 * tile and loop partitioning splits that guard off the hot loops.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/rules/rule.h"
#include "loom/codegen.h"

const int64_t tune__unroll_steps[TUNE__NUNROLL] = {0, 16, 64, 512};

uint64_t tune_rand(uint64_t *s) {
    uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

int64_t tune__rand_below(uint64_t *rng, int64_t n) {
    return n <= 1 ? 0 : (int64_t)(tune_rand(rng) % (uint64_t)n);
}

int tune__divisors(int64_t n, int64_t cap, int64_t *out, int max) {
    int k = 0;
    if (n < 1 || max < 1) return 0;
    /* Divisors come in pairs d <= sqrt(n) <= n/d: the small ones
     * ascending, then their cofactors ascending (d descending), so an
     * extent of 2^31 costs 46,341 steps, not 2^31. */
    int64_t d = 1;
    for (; d <= n / d && d <= cap && k < max; d++)
        if (n % d == 0) out[k++] = d;
    if (k == max || d > cap) return k;
    for (d--; d >= 1 && k < max; d--) {
        if (n % d) continue;
        int64_t q = n / d;
        if (q == d) continue; /* a square's root, counted once above */
        if (q > cap) break;
        out[k++] = q;
    }
    return k;
}

int64_t tune__rand_divisor(uint64_t *rng, int64_t n, int64_t cap) {
    int64_t divs[256];
    int nd = tune__divisors(n, cap, divs, 256);
    return nd ? divs[tune__rand_below(rng, nd)] : 1;
}

const tune_hole *tune__unit_hole(const tune_sketch *sk, int u, int k) {
    int seen = 0;
    for (int i = 0; i < sk->nholes; i++)
        if (sk->holes[i].unit == u && seen++ == k) return &sk->holes[i];
    return NULL;
}

/* Once per process: read by the search's threads (pthread_once). */
static int host_lanes = 4;
static pthread_once_t host_lanes_once = PTHREAD_ONCE_INIT;

static void detect_host_lanes(void) {
    cg_target t;
    if (!cg_target_parse("llvm", &t, NULL)) host_lanes = t.vector_lanes;
    cg_target_free(&t);
}

int tune_host_vector_lanes(void) {
    pthread_once(&host_lanes_once, detect_host_lanes);
    return host_lanes;
}

int tune_target_vector_bytes(const char *target) {
    return tune_target_is_cuda(target) ? 16 : 4 * tune_host_vector_lanes();
}

static int64_t ceil_div64(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool tune_split_valid(const tune_hole *h, const int64_t *v) {
    if (!h || !v || h->kind != TUNE_HOLE_SPLIT || h->nvals < 1 || h->extent < 1) return false;
    int m = h->nvals;
    int64_t f = v[m - 1], prod = 1;
    if (f < 1 || f > h->extent) return false;
    if (h->extent % f == 0 ? f > TUNE__MAX_INNER : !h->tail || f > TUNE_MAX_TAIL_INNER)
        return false;
    for (int j = 0; j < m - 1; j++) {
        if (v[j] < 1 || v[j] > h->extent) return false;
        prod *= v[j];
        if (prod > h->extent) return false;
    }
    return ceil_div64(h->extent, f) % prod == 0;
}

int64_t tune__rand_inner(const tune_hole *h, uint64_t *rng) {
    /* Uniform over the divisors <= TUNE__MAX_INNER, joined (tail) by every
     * integer <= TUNE_MAX_TAIL_INNER. */
    int64_t c[TUNE__MAX_INNER];
    int n = 0;
    for (int64_t d = 1; d <= h->extent && d <= TUNE__MAX_INNER; d++)
        if (h->extent % d == 0 || (h->tail && d <= TUNE_MAX_TAIL_INNER)) c[n++] = d;
    return c[tune__rand_below(rng, n)];
}

bool tune__vector_valid(const tune_hole *h, int64_t v) {
    if (!h || h->kind != TUNE_HOLE_VECTOR || v < 1 || v > h->extent) return false;
    if (h->extent % v == 0) return v <= TUNE__MAX_INNER;
    return h->tail && (v == 4 || v == 8 || v == 16);
}

int64_t tune__rand_vector(const tune_hole *h, uint64_t *rng) {
    int64_t c[TUNE__MAX_INNER + 3];
    int n = 0;
    for (int64_t d = 1; d <= h->extent && d <= TUNE__MAX_INNER; d++)
        if (h->extent % d == 0) c[n++] = d;
    for (int64_t d = 4; h->tail && d <= 16; d *= 2)
        if (h->extent % d && d < h->extent) c[n++] = d;
    return c[tune__rand_below(rng, n)];
}

void tune__random_hole_cpu(const tune_hole *h, uint64_t *rng, int64_t *v) {
    switch (h->kind) {
    case TUNE_HOLE_SPLIT: {
        /* Innermost first (tune__rand_inner), then a divisor of what is
         * left: the other levels split ceil(extent / innermost). */
        int m = h->nvals;
        v[m - 1] = tune__rand_inner(h, rng);
        int64_t left = ceil_div64(h->extent, v[m - 1]);
        for (int j = m - 2; j >= 0; j--) {
            v[j] = tune__rand_divisor(rng, left, left);
            left /= v[j];
        }
        break;
    }
    case TUNE_HOLE_VECTOR: v[0] = tune__rand_vector(h, rng); break;
    case TUNE_HOLE_PARALLEL:
    case TUNE_HOLE_LOCATION: v[0] = 1 + tune__rand_below(rng, h->extent); break;
    case TUNE_HOLE_UNROLL: v[0] = tune__rand_below(rng, TUNE__NUNROLL); break;
    default: break; /* GPU holes: program_gpu.c */
    }
}

/* Each hole by its unit's rule in sketch order, then the units that draw
 * as a whole (GPU tiles: their thread counts constrain several holes). */
void tune_program_random(const tune_sketch *sk, int sketch_index, uint64_t *rng,
                         tune_program *out) {
    memset(out, 0, sizeof *out);
    out->sketch = sketch_index;
    for (int i = 0; i < sk->nholes; i++) {
        const tune_hole *h = &sk->holes[i];
        const tune_rule *r = tune__hole_rule(sk, h);
        if (r->random_hole) r->random_hole(h, rng, out->vals + h->offset);
    }
    for (int u = 0; u < sk->nunits; u++) {
        const tune_rule *r = tune__unit_rule(sk->units[u].kind);
        if (r->random_unit) r->random_unit(sk, u, rng, out->vals);
    }
}

int tune__move_split_factor(const tune_hole *h, uint64_t *rng, int64_t *v) {
    int m = h->nvals;
    /* Levels 0..m; level 0 is implicit: what the outer factors leave of
     * ceil(extent / innermost), the extent itself without a tail. */
    int64_t lv[8], prod = 1;
    for (int j = 0; j < m - 1; j++) prod *= v[j];
    lv[0] = ceil_div64(h->extent, v[m - 1]) / prod;
    for (int j = 0; j < m; j++) lv[j + 1] = v[j];
    int src = (int)tune__rand_below(rng, m + 1), dst = (int)tune__rand_below(rng, m);
    if (dst >= src) dst++;
    if (lv[src] <= 1) return -1;
    int64_t cand[32];
    int nc = 0;
    for (int64_t x = lv[src], q = 2; x > 1 && nc < 32; q++)
        if (x % q == 0) {
            cand[nc++] = q;
            while (x % q == 0) x /= q;
        }
    int64_t p = cand[tune__rand_below(rng, nc)];
    lv[src] /= p;
    lv[dst] *= p;
    /* Moving into or out of a tailed innermost level changes what the
     * outer levels split: keep only moves that leave a valid split. */
    int64_t nv[8];
    for (int j = 0; j < m; j++) nv[j] = lv[j + 1];
    if (!tune_split_valid(h, nv)) return -1;
    for (int j = 0; j < m; j++) v[j] = nv[j];
    return 0;
}

/* Another innermost factor for a hole with a tail; each outer factor
 * keeps what still divides the new ceil(extent / innermost). */
static int change_inner(const tune_hole *h, uint64_t *rng, int64_t *v) {
    int m = h->nvals;
    int64_t f = tune__rand_inner(h, rng);
    if (f == v[m - 1]) return -1;
    v[m - 1] = f;
    int64_t left = ceil_div64(h->extent, f);
    for (int j = m - 2; j >= 0; j--) {
        int64_t a = v[j], b = left;
        while (b) { /* gcd */
            int64_t t = a % b;
            a = b;
            b = t;
        }
        v[j] = a;
        left /= a;
    }
    return 0;
}

/* A few tries of moving a prime factor between two levels of a split or,
 * for a tailed hole, of changing the innermost factor. */
static int mutate_split(const tune_hole *h, uint64_t *rng, int64_t *v) {
    for (int tries = 0; tries < 8; tries++) {
        if (h->tail && tune__rand_below(rng, 2) == 0) {
            if (change_inner(h, rng, v) == 0) return 0;
        } else if (tune__move_split_factor(h, rng, v) == 0)
            return 0;
    }
    return -1;
}

int tune__mutate_hole_cpu(const tune_sketch *sk, const tune_hole *h, uint64_t *rng,
                          int64_t *vals) {
    (void)sk;
    int64_t *v = vals + h->offset;
    switch (h->kind) {
    case TUNE_HOLE_SPLIT: return mutate_split(h, rng, v);
    case TUNE_HOLE_VECTOR: {
        int64_t old = v[0];
        v[0] = tune__rand_vector(h, rng);
        return v[0] != old ? 0 : -1;
    }
    case TUNE_HOLE_UNROLL: {
        int64_t old = v[0];
        v[0] = tune__rand_below(rng, TUNE__NUNROLL);
        return v[0] != old ? 0 : -1;
    }
    case TUNE_HOLE_PARALLEL:
    case TUNE_HOLE_LOCATION:
        if (h->extent > 1) {
            int64_t old = v[0];
            v[0] = 1 + tune__rand_below(rng, h->extent - 1);
            if (v[0] >= old) v[0]++;
            return 0;
        }
        return -1;
    default: return -1; /* GPU holes: program_gpu.c */
    }
}

/* A hole picked by the mutation weights of its unit's rule in the
 * target's list (autotune/rules/targets.c), mutated by that rule; a few
 * tries, since a try may change nothing. */
int tune_program_mutate(const tune_sketch *sk, uint64_t *rng, tune_program *p) {
    const tune_rule_list *l = tune__rules_of(sk);
    int weight[TUNE_MAX_HOLES], total = 0;
    for (int i = 0; i < sk->nholes; i++)
        total += weight[i] = tune__mutate_weight(l, tune__hole_rule(sk, &sk->holes[i]));
    if (total == 0) return -1;
    for (int tries = 0; tries < l->mutate_tries; tries++) {
        int64_t pick = tune__rand_below(rng, total);
        int i = 0;
        while (pick >= weight[i]) pick -= weight[i++];
        const tune_hole *h = &sk->holes[i];
        const tune_rule *r = tune__hole_rule(sk, h);
        if (r->mutate_hole && r->mutate_hole(sk, h, rng, p->vals) == 0) return 0;
    }
    return -1;
}

/* ---- applying ---- */

/* The passes of the target's list, each over the units in its order,
 * each unit decoded by its rule: stages first to last where a producer's
 * cache must exist before its consumers move (units were derived last
 * stage first). */
sch_schedule *tune_program_apply(te_ctx *ctx, const tune_workload *w, const tune_sketch *sk,
                                 const tune_program *p) {
    const tune_rule_list *l = tune__rules_of(sk);
    tune_decoder d;
    memset(&d, 0, sizeof d);
    d.s = sch_create(ctx, w->nouts, w->outs);
    d.w = w;
    d.sk = sk;
    d.p = p;
    if (!d.s) return NULL;
    int n = sch_num_stages(d.s);
    if (n > TUNE_MAX_STAGES) {
        te_error(ctx, "autotune: %d stages; at most %d", n, TUNE_MAX_STAGES);
        return NULL;
    }
    for (int i = 0; i < n; i++) d.stage[i] = sch_stage_tensor(d.s, i);
    for (int k = 0; k < l->nphases; k++) {
        tune_phase ph = l->phases[k];
        if (ph == TUNE_PHASE_INLINE) {
            for (int j = 0; j < sk->ninline; j++)
                if (sch_compute_inline(d.s, d.stage[sk->inlined[j]])) return NULL;
            continue;
        }
        for (int j = 0; j < sk->nunits; j++) {
            int u = l->phase_reverse[k] ? sk->nunits - 1 - j : j;
            int (*decode)(tune_decoder *, int) = tune__unit_rule(sk->units[u].kind)->decode[ph];
            if (decode && decode(&d, u)) return NULL;
        }
    }
    return d.s;
}

/* The log's one text is the database's (tdb_schedule_to_json), so a key
 * and a stored record of the same program are the same string. */
const char *tune_steps_key(te_ctx *ctx, const sch_schedule *s) {
    char *json = tdb_schedule_to_json(s);
    const char *key = json ? te_strdup(ctx, json) : NULL;
    free(json);
    return key;
}

uint64_t tune__log_hash(char *json) {
    uint64_t h = json ? tune_hash(json) : 0;
    free(json);
    return h;
}

uint64_t tune_hash(const char *s) { return te_hash_str(s); }
