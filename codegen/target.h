/*
 * codegen/target.h — the target strings cg_build takes, parsed in one
 * place for cg_build and cg_target_check.
 */
#ifndef LOOM_CG_TARGET_H
#define LOOM_CG_TARGET_H

typedef enum { CG_TARGET_LLVM, CG_TARGET_C, CG_TARGET_CUDA } cg_target_kind;

typedef struct {
    cg_target_kind kind;
    const char *mcpu;  /* llvm -mcpu=NAME; NULL: not given */
    const char *mattr; /* llvm -mattr=+F,-G; NULL: not given */
    const char *arch;  /* cuda -arch=sm_XX; NULL: not given */
    char *buf;         /* the strings above point into it; free it */
} cg_target;

/* Parses target (NULL: "llvm") and, for llvm, checks the CPU and feature
 * names against LLVM's tables. Returns 0 (free out->buf), or -1 with a
 * malloc'd message in *err naming the target and what is wrong ("target
 * 'llvm -mcpu=x': unknown CPU 'x' for ..."); nothing to free in out. */
int cg__target_parse(const char *target, cg_target *out, char **err);

#endif
