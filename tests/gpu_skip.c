/*
 * tests/gpu_skip.c — see gpu_skip.h.
 */
#include <stdio.h>

#include "gpu_skip.h"

static int skipped_tests, skipped_parts;

void tu_note_skip_test_(const char *why) {
    skipped_tests++;
    fprintf(stderr, "skipped: %s\n", why ? why : "");
}

void tu_skip_part(const char *what, const char *why) {
    skipped_parts++;
    fprintf(stderr, "%s skipped, the rest checked: %s\n", what, why ? why : "");
}

int tu_gpu_cc(void) {
    rt_cuda_props p;
    return rt_cuda_available() && !rt_cuda_get_props(0, &p) ? p.cc_major * 10 + p.cc_minor : 0;
}

void tu_check_on_gpu(const ops_workload *w, rt_module *m) {
    if (!rt_cuda_available()) {
        tu_skip_part("the GPU run", rt_last_error());
        return;
    }
    int64_t bad = ops_check_module(w, m, NULL, tu_seed());
    if (bad) fail_msg("%s on the GPU: %lld mismatches (%s)", w->key, (long long)bad, te_ctx_errmsg(w->args[0]->ctx));
}

int tu_exit_status_(int failed, int ntests) {
    /* cmocka returns the number of failures: 77 of them must not read as
     * "skipped". */
    if (failed) return 1;
    if (skipped_parts)
        fprintf(stderr, "passed; %d device part(s) not run (see above)\n", skipped_parts);
    if (ntests > 0 && skipped_tests == ntests) {
        fprintf(stderr, "all %d tests skipped: exit %d (SKIPPED)\n", ntests, TU_SKIP_RETURN_CODE);
        return TU_SKIP_RETURN_CODE;
    }
    return 0;
}
