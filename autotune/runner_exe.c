/*
 * autotune/runner_exe.c — which program a measurer starts as its runner
 * processes. Re-executing the host program (/proc/self/exe) only works
 * when its main calls tune_runner_maybe_run first; a host that embeds
 * Loom (an interpreter, a server, an MPI rank) cannot promise that. So
 * runners are the small loom-runner program installed with the library
 * (tools/loom-runner), found beside libloom; it has every builder of
 * libloom (graph groups) and loads the plugins the host loaded
 * (TUNE_PLUGINS_ENV). Only a builder the host registered itself, outside
 * a plugin, exists nowhere but in the host: such a workload is measured
 * by re-executing the host, when the host serves runners.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autotune/tune_internal.h"

#ifndef LOOM_LIB_TO_RUNNER_DIR
#define LOOM_LIB_TO_RUNNER_DIR "../libexec"
#endif

/* An address inside libloom for dladdr (not an exported function: a
 * non-PIE program that takes its address makes that resolve to its own
 * PLT entry). */
static const char anchor;

/* The directory holding libloom (a real path), or false. */
static bool library_dir(char *dir, size_t cap) {
    Dl_info info;
    if (!dladdr(&anchor, &info) || !info.dli_fname) return false;
    char real[PATH_MAX];
    if (!realpath(info.dli_fname, real)) return false;
    char *slash = strrchr(real, '/');
    if (!slash) return false;
    *slash = 0;
    return snprintf(dir, cap, "%s", real[0] ? real : "/") < (int)cap;
}

/* Whether the builder of `key` exists only in the host program: a
 * function registered by it, living neither in libloom nor in a plugin. */
static bool host_only_builder(const char *key) {
    ops_builder_fn fn = ops_builder_for(key);
    if (!fn) return false; /* the ops registry, or no builder anywhere */
    Dl_info mine, its;
    if (!dladdr(&anchor, &mine) || !dladdr(*(void **)&fn, &its))
        return true;
    if (its.dli_fbase == mine.dli_fbase) return false;
    return !(its.dli_fname && tune__is_plugin_file(its.dli_fname));
}

/* Looks for loom-runner beside the library: the install's libexec
 * directory, bin, and the build tree (the library's own directory). */
static char *find_installed(char **err) {
    char dir[PATH_MAX];
    if (!library_dir(dir, sizeof dir)) {
        if (err)
            *err = tune__strdupf("autotune: cannot find loom-runner: the directory of libloom is "
                                 "unknown (set %s to the loom-runner program)",
                                 TUNE_RUNNER_ENV);
        return NULL;
    }
    const char *rel[] = {LOOM_LIB_TO_RUNNER_DIR "/", "../libexec/", "../bin/", ""};
    enum { NREL = sizeof rel / sizeof rel[0] };
    char tried[NREL][PATH_MAX + 32];
    int ntried = 0;
    for (int i = 0; i < NREL; i++) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/%s%s", dir, rel[i], TUNE_RUNNER_NAME);
        bool seen = false;
        for (int k = 0; k < ntried && !seen; k++) seen = !strcmp(tried[k], path);
        if (seen) continue;
        memcpy(tried[ntried++], path, sizeof path);
        if (!access(path, X_OK)) return strdup(path);
    }
    if (err) {
        size_t len = 1;
        for (int k = 0; k < ntried; k++) len += strlen(tried[k]) + 2;
        char *list = malloc(len);
        if (list) {
            list[0] = 0;
            for (int k = 0; k < ntried; k++) {
                if (k) strcat(list, ", ");
                strcat(list, tried[k]);
            }
        }
        *err = tune__strdupf("autotune: no %s program to measure with (tried %s): install it "
                             "beside libloom, or set %s to its path",
                             TUNE_RUNNER_NAME, list ? list : "?", TUNE_RUNNER_ENV);
        free(list);
    }
    return NULL;
}

char *tune__runner_exe(const char *key, char **err) {
    if (host_only_builder(key)) {
        if (tune__host_serves_runners()) return strdup("/proc/self/exe");
        if (err)
            *err = tune__strdupf(
                "autotune: workload '%s' is built by a builder this program registered "
                "(tune_register_builder), which the %s process cannot have: register it from a "
                "plugin (tune_load_plugin) or call tune_runner_maybe_run(argc, argv) first thing "
                "in main, so that measurement re-executes this program",
                key, TUNE_RUNNER_NAME);
        return NULL;
    }
    const char *env = getenv(TUNE_RUNNER_ENV);
    if (env && *env) {
        if (access(env, X_OK)) {
            if (err)
                *err = tune__strdupf("autotune: %s names '%s', which is no program to run: %s",
                                     TUNE_RUNNER_ENV, env, strerror(errno));
            return NULL;
        }
        return strdup(env);
    }
    char *found = find_installed(err);
    /* A host that serves runners measures without loom-runner as before. */
    if (!found && tune__host_serves_runners()) {
        if (err) {
            free(*err);
            *err = NULL;
        }
        return strdup("/proc/self/exe");
    }
    return found;
}
