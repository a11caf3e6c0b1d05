/*
 * codegen/c/c_build.c — compiles the C source into a shared object with
 * the system compiler and loads it as an rt_module.
 *
 * The compiler runs through posix_spawnp (no shell: names and flags are
 * split on whitespace, nothing is interpreted), in a private mkdtemp
 * directory that is removed once the object is loaded. The object links
 * against the libloom.so this process uses, so rt_parallel_for resolves
 * even when libloom itself was loaded RTLD_LOCAL.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/c/c_internal.h"

extern char **environ;

#define CG_C_DEFAULT_FLAGS "-O3 -march=native -ffp-contract=fast"
#define CG_C_LOG_LIMIT 2048

typedef struct {
    char *argv[256];
    int argc;
    char *storage[4]; /* strdup'd strings the words point into */
    int nstorage;
} arg_list;

/* Appends the whitespace-separated words of s. Returns -1 when full. */
static int add_words(arg_list *a, const char *s) {
    if (!s) return 0;
    if (a->nstorage == 4) return -1;
    char *copy = strdup(s);
    if (!copy) return -1;
    a->storage[a->nstorage++] = copy;
    for (char *tok = strtok(copy, " \t\n"); tok; tok = strtok(NULL, " \t\n")) {
        if (a->argc >= 254) return -1;
        a->argv[a->argc++] = tok;
    }
    return 0;
}

static int add_word(arg_list *a, char *w) {
    if (a->argc >= 254) return -1;
    a->argv[a->argc++] = w;
    return 0;
}

static void free_args(arg_list *a) {
    for (int i = 0; i < a->nstorage; ++i) free(a->storage[i]);
}

/* The shared library that defines rt_parallel_for, or NULL when it is
 * part of the executable. */
static const char *runtime_library(void) {
    Dl_info info;
    if (!dladdr((void *)rt_parallel_for, &info) || !info.dli_fname) return NULL;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    return strstr(base, ".so") ? info.dli_fname : NULL;
}

static char *read_file_prefix(const char *path, size_t limit) {
    FILE *f = fopen(path, "rb");
    char *buf = calloc(limit + 1, 1);
    if (!buf) {
        if (f) fclose(f);
        return NULL;
    }
    if (f) {
        size_t n = fread(buf, 1, limit, f);
        buf[n] = '\0';
        fclose(f);
    }
    return buf;
}

static void remove_dir(const char *dir, const char *const *files, int nfiles) {
    char path[4096];
    for (int i = 0; i < nfiles; ++i) {
        if (snprintf(path, sizeof path, "%s/%s", dir, files[i]) < (int)sizeof path) unlink(path);
    }
    rmdir(dir);
}

static void close_handle(void *h) {
    if (h) dlclose(h);
}

/* Runs the compiler; 0 on success, else -1 with the error in ctx. */
static int run_compiler(te_ctx *ctx, const cg_c_options *opts, const char *dir,
                        const char *src_path, const char *so_path, const char *log_path) {
    const char *cc = opts && opts->cc ? opts->cc : getenv("CC");
    if (!cc || !*cc) cc = "cc";
    const char *cflags = opts && opts->cflags ? opts->cflags : CG_C_DEFAULT_FLAGS;
    arg_list a;
    memset(&a, 0, sizeof a);
    const char *lib = runtime_library();
    int bad = add_words(&a, cc);
    if (!bad && a.argc == 0) {
        free_args(&a);
        return te_error(ctx, "c: the C compiler name is empty");
    }
    bad = bad || add_words(&a, cflags) || add_words(&a, "-shared -fPIC -std=c11 -o") ||
          add_word(&a, (char *)so_path) || add_word(&a, (char *)src_path);
    if (!bad && lib) bad = add_word(&a, (char *)lib);
    bad = bad || add_word(&a, "-lm");
    if (bad) {
        free_args(&a);
        return te_error(ctx, "c: too many compiler arguments (or no memory) in cc '%s' cflags '%s'",
                        cc, cflags);
    }
    a.argv[a.argc] = NULL;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int err = posix_spawnp(&pid, a.argv[0], &fa, NULL, a.argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err) {
        te_error(ctx, "c: cannot run the C compiler '%s': %s", a.argv[0], strerror(err));
        free_args(&a);
        return -1;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            te_error(ctx, "c: waiting for the C compiler '%s': %s", a.argv[0], strerror(errno));
            free_args(&a);
            return -1;
        }
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        free_args(&a);
        return 0;
    }
    char *log = read_file_prefix(log_path, CG_C_LOG_LIMIT);
    if (WIFEXITED(status))
        te_error(ctx, "c: the C compiler '%s' failed with exit status %d:\n%s", a.argv[0],
                 WEXITSTATUS(status), log ? log : "");
    else if (WIFSIGNALED(status))
        te_error(ctx, "c: the C compiler '%s' was killed by signal %d:\n%s", a.argv[0],
                 WTERMSIG(status), log ? log : "");
    else
        te_error(ctx, "c: the C compiler '%s' failed:\n%s", a.argv[0], log ? log : "");
    free(log);
    free_args(&a);
    return -1;
}

rt_module *cg_c_build(te_ctx *ctx, int nfuncs, const tir_func *const *funcs,
                      const cg_c_options *opts) {
    if (!ctx) return NULL;
    const char *src = cg_c_source(ctx, nfuncs, funcs);
    if (!src) return NULL;

    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/loom-c-XXXXXX", tmp);
    if (!mkdtemp(dir)) {
        te_error(ctx, "c: cannot create a temporary directory under '%s': %s", tmp, strerror(errno));
        return NULL;
    }
    static const char *const files[] = {"kernel.c", "kernel.so", "cc.log"};
    char src_path[4200], so_path[4200], log_path[4200];
    snprintf(src_path, sizeof src_path, "%s/%s", dir, files[0]);
    snprintf(so_path, sizeof so_path, "%s/%s", dir, files[1]);
    snprintf(log_path, sizeof log_path, "%s/%s", dir, files[2]);

    FILE *f = fopen(src_path, "wb");
    size_t len = strlen(src);
    if (!f || fwrite(src, 1, len, f) != len || fclose(f) != 0) {
        te_error(ctx, "c: cannot write '%s': %s", src_path, strerror(errno));
        remove_dir(dir, files, 3);
        return NULL;
    }
    if (run_compiler(ctx, opts, dir, src_path, so_path, log_path)) {
        remove_dir(dir, files, 3);
        return NULL;
    }
    void *h = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    remove_dir(dir, files, 3); /* the mapping outlives the file */
    if (!h) {
        const char *e = dlerror();
        te_error(ctx, "c: cannot load the compiled object: %s", e ? e : "unknown dlopen error");
        return NULL;
    }
    rt_module *m = rt_module_new("c", h, close_handle);
    if (!m) {
        dlclose(h);
        te_error(ctx, "c: %s", rt_last_error());
        return NULL;
    }
    for (int i = 0; i < nfuncs; ++i) {
        const tir_func *fn = funcs[i];
        const char *sym = cg_c_symbol(ctx, fn->name);
        void *p = sym ? dlsym(h, sym) : NULL;
        if (!p) {
            te_error(ctx, "c: the compiled object has no symbol '%s' for function '%s'",
                     sym ? sym : "?", fn->name);
            rt_module_free(m);
            return NULL;
        }
        rt_packed_fn entry;
        memcpy(&entry, &p, sizeof entry); /* object pointer to function pointer */
        int rc = cg_module_add_tir_func(m, fn, entry);
        if (rc) {
            te_error(ctx, "c: %s", rt_module_errmsg(m));
            rt_module_free(m);
            return NULL;
        }
    }
    rt_module_set_text(m, "source", src);
    return m;
}
