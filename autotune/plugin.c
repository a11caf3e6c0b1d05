/*
 * autotune/plugin.c — loading a shared library of a user's operators
 * (tune_load_plugin): dlopen, then its entry point loom_register_ops,
 * which registers its builders. Runner processes (loom-runner, or the
 * program re-executed) are other processes, so the paths loaded go into
 * the environment (TUNE_PLUGINS_ENV) that runners inherit, and
 * tune_runner_maybe_run loads them again there before serving.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/tune_internal.h"

enum { MAX_PLUGINS = 16 };
static char *loaded[MAX_PLUGINS]; /* real paths, in load order */
static int nloaded;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Writes the loaded paths to the environment, ':'-separated. */
static int export_paths(void) {
    size_t len = 1;
    for (int i = 0; i < nloaded; i++) len += strlen(loaded[i]) + 1;
    char *v = malloc(len), *p = v;
    if (!v) return -1;
    *p = 0;
    for (int i = 0; i < nloaded; i++) {
        if (i) *p++ = ':';
        size_t n = strlen(loaded[i]);
        memcpy(p, loaded[i], n + 1);
        p += n;
    }
    int rc = setenv(TUNE_PLUGINS_ENV, v, 1);
    free(v);
    return rc;
}

static int load_locked(const char *path, char **err) {
    char real[PATH_MAX];
    if (!realpath(path, real)) {
        if (err) *err = tune__strdupf("plugin '%s': %s", path, strerror(errno));
        return -1;
    }
    for (int i = 0; i < nloaded; i++)
        if (!strcmp(loaded[i], real)) return 0; /* its builders are registered */
    if (strchr(real, ':')) {
        if (err)
            *err = tune__strdupf("plugin '%s': a path with ':' cannot be passed on to the runner "
                                 "processes (%s is ':'-separated)",
                                 path, TUNE_PLUGINS_ENV);
        return -1;
    }
    if (nloaded == MAX_PLUGINS) {
        if (err) *err = tune__strdupf("plugin '%s': at most %d plugins", path, MAX_PLUGINS);
        return -1;
    }
    void *h = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        if (err)
            *err = tune__strdupf("plugin '%s': cannot load it: %s", path,
                                 why ? why : "not a shared library");
        return -1;
    }
    dlerror();
    int (*entry)(void);
    *(void **)&entry = dlsym(h, TUNE_PLUGIN_ENTRY);
    if (!entry) {
        dlclose(h);
        if (err)
            *err = tune__strdupf("plugin '%s' has no entry point %s: it must define "
                                 "int %s(void), registering its builders with "
                                 "tune_register_builder",
                                 path, TUNE_PLUGIN_ENTRY, TUNE_PLUGIN_ENTRY);
        return -1;
    }
    /* The library stays loaded whatever the entry point returns: it may
     * have registered builders that point into it. */
    int rc = entry();
    if (rc) {
        if (err) *err = tune__strdupf("plugin '%s': %s() returned %d", path, TUNE_PLUGIN_ENTRY, rc);
        return -1;
    }
    if (!(loaded[nloaded] = strdup(real))) {
        if (err) *err = tune__strdupf("plugin '%s': out of memory", path);
        return -1;
    }
    nloaded++;
    if (export_paths()) {
        if (err) *err = tune__strdupf("plugin '%s': cannot set %s: %s", path, TUNE_PLUGINS_ENV,
                                      strerror(errno));
        return -1;
    }
    return 0;
}

int tune_load_plugin(const char *path, char **err) {
    if (err) *err = NULL;
    if (!path || !*path) {
        if (err) *err = tune__strdupf("plugin: no file named");
        return -1;
    }
    pthread_mutex_lock(&lock);
    int rc = load_locked(path, err);
    pthread_mutex_unlock(&lock);
    return rc;
}

bool tune__is_plugin_file(const char *path) {
    bool yes = false;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nloaded && !yes; i++) yes = !strcmp(loaded[i], path);
    pthread_mutex_unlock(&lock);
    return yes;
}

char *tune__load_env_plugins(void) {
    const char *v = getenv(TUNE_PLUGINS_ENV);
    if (!v || !*v) return NULL;
    char *list = strdup(v), *msg = NULL;
    if (!list) return tune__strdupf("out of memory");
    for (char *save = NULL, *p = strtok_r(list, ":", &save); p && !msg;
         p = strtok_r(NULL, ":", &save))
        tune_load_plugin(p, &msg);
    free(list);
    return msg;
}
