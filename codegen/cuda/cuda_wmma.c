/*
 * codegen/cuda/cuda_wmma.c — tensor-core statements (TENSOR_CALL) and
 * fragment buffers as CUDA WMMA (nvcuda::wmma, <mma.h>).
 *
 * A fragment buffer (scope wmma.*) of shape R x C becomes an array of
 * (R / TR) * (C / TC) fragments, TR x TC its operand's tile (16 x 16; for
 * tf32, a is 16 x 8 and b 8 x 16). A fragment's template needs what the
 * buffer's declaration does not say: an a or b fragment's layout comes
 * from the memory tiles loaded into it, an accumulator's k from the mma
 * that adds into it. So the emitter first reads every TENSOR_CALL of the
 * kernel (cg_cuda__wmma_scan) and keeps that per buffer.
 *
 * Fragment index of a tile whose first element is at flat offset o of an
 * R x C buffer: (o / (C * TR)) * (C / TC) + (o % C) / TC. Tensorize
 * (schedule/tensorize.c) has checked that tiles start on that grid and
 * that memory tiles meet WMMA's rules (ld a multiple of 16 bytes, tile
 * starts 32-byte aligned).
 */
#include <string.h>

#include "codegen/cuda/cuda_internal.h"

#define WMMA "nvcuda::wmma::"

static cg_cuda_frag *frag_of(cg_cuda_wmma *w, const tir_buffer *b) {
    for (int i = 0; i < w->n; i++)
        if (w->frags[i].b == b) return &w->frags[i];
    if (w->n == CG_CUDA_MAX_FRAGS) return NULL;
    cg_cuda_frag *f = &w->frags[w->n++];
    memset(f, 0, sizeof *f);
    f->b = b;
    f->layout = -1;
    return f;
}

static const tir_buffer *arg_buffer(const te_expr *e) {
    return e->kind == TE_LOAD ? e->u.load.buffer : e->u.bload.buffer;
}


typedef struct {
    cg_cuda_wmma *w;
    cg_c_emitter *em;
} scan_ctx;

static void scan_stmt(const tir_stmt *s, void *user) {
    scan_ctx *sc = user;
    if (s->kind != TIR_TENSOR_CALL || sc->em->failed || s->u.tcall.intrin > TIR_WMMA_STORE) return;
    sc->w->used = true;
    const te_expr *const *a = (const te_expr *const *)s->u.tcall.args;
    cg_cuda_frag *f;
    switch (s->u.tcall.intrin) {
    case TIR_WMMA_STORE:
        if (arg_buffer(a[0])->dtype.code == TE_BFLOAT) sc->w->staged = true;
        return;
    case TIR_WMMA_LOAD_A:
    case TIR_WMMA_LOAD_B: {
        if (!(f = frag_of(sc->w, arg_buffer(a[0])))) break;
        int layout = s->u.tcall.col_major[1] ? 1 : 0;
        if (f->layout >= 0 && f->layout != layout) {
            cg_c_fail(sc->em,
                      "fragment buffer '%s' in kernel '%s' is loaded from both row-major and "
                      "column-major tiles; WMMA fixes one layout per fragment",
                      f->b->name, sc->em->func);
            return;
        }
        f->layout = layout;
        return;
    }
    case TIR_WMMA_MMA:
        if (!(f = frag_of(sc->w, arg_buffer(a[0])))) break;
        int k = tir_wmma_k(arg_buffer(a[1])->dtype);
        if (f->k && f->k != k) {
            cg_c_fail(sc->em, "accumulator '%s' in kernel '%s' is used by mma of k %d and %d",
                      f->b->name, sc->em->func, f->k, k);
            return;
        }
        f->k = k;
        return;
    default: return;
    }
    cg_c_fail(sc->em, "kernel '%s' has more than %d fragment buffers", sc->em->func,
              CG_CUDA_MAX_FRAGS);
}

/* A fragment is opaque: only tensor intrinsics may read or write it. */
static int stray_access(tir_visitor *v, const tir_stmt *s) {
    scan_ctx *sc = v->user;
    if (sc->em->failed) return 1;
    if (s->kind == TIR_TENSOR_CALL) return TIR_VISIT_SKIP; /* its operands are addresses */
    if (s->kind == TIR_STORE && tir_scope_is_fragment(s->u.store.buffer->scope)) {
        cg_c_fail(sc->em,
                  "fragment buffer '%s' (scope %s) in kernel '%s' is written element by element; "
                  "only tensor intrinsics may touch it (tensorize the stage that computes it)",
                  s->u.store.buffer->name, tir_scope_name(s->u.store.buffer->scope), sc->em->func);
        return 1;
    }
    return 0;
}

static void fragment_load(const te_expr *e, void *user) {
    scan_ctx *sc = user;
    if (!e || sc->em->failed) return;
    if (e->kind == TE_LOAD && tir_scope_is_fragment(e->u.load.buffer->scope)) {
        cg_c_fail(sc->em,
                  "fragment buffer '%s' (scope %s) in kernel '%s' is read element by element; "
                  "only tensor intrinsics may touch it (tensorize the stage that reads it)",
                  e->u.load.buffer->name, tir_scope_name(e->u.load.buffer->scope), sc->em->func);
        return;
    }
    te_expr_visit_children(e, fragment_load, user);
}

static int stray_load(tir_visitor *v, const te_expr *e) {
    fragment_load(e, v->user);
    return ((scan_ctx *)v->user)->em->failed;
}

void cg_cuda__wmma_scan(cg_c_emitter *em, const tir_stmt *body, const int64_t block[3],
                        cg_cuda_wmma *w) {
    memset(w, 0, sizeof *w);
    w->warps = (block[0] * block[1] * block[2] + 31) / 32;
    scan_ctx sc = {w, em};
    tir_stmt_visit(body, scan_stmt, NULL, &sc);
    tir_visitor v = {.user = &sc, .pre = stray_access, .expr = stray_load};
    tir_visit(&v, body);
}

/* Tile rows and columns of fragment buffer b (k: its mma's k). */
static void tile_of(const tir_buffer *b, int k, int *tr, int *tc) {
    *tr = *tc = 16;
    if (b->scope == TIR_SCOPE_WMMA_A) *tc = k;
    if (b->scope == TIR_SCOPE_WMMA_B) *tr = k;
}

static const char *elem_type(cg_c_emitter *em, te_dtype t) {
    if (t.code == TE_FLOAT && t.bits == 32) return WMMA "precision::tf32";
    if (t.code == TE_FLOAT && t.bits == 16) return "__half";
    if (t.bits == 16 && te_dtype_is_float(t)) return "__nv_bfloat16";
    cg_c_fail(em, "no WMMA fragment of element type %s", te_dtype_str(t));
    return "float";
}

void cg_cuda__wmma_declare(cg_c_emitter *em, const cg_cuda_wmma *w, const tir_buffer *b) {
    const cg_cuda_frag *f = NULL;
    for (int i = 0; i < w->n; i++)
        if (w->frags[i].b == b) f = &w->frags[i];
    int k = 16;
    if (b->scope == TIR_SCOPE_WMMA_ACC) {
        k = f && f->k ? f->k : 16;
    } else {
        k = tir_wmma_k(b->dtype);
        if (!f || f->layout < 0) {
            cg_c_fail(em, "fragment buffer '%s' in kernel '%s' is never loaded (wmma.load_%c)",
                      b->name, em->func, b->scope == TIR_SCOPE_WMMA_A ? 'a' : 'b');
            return;
        }
    }
    int tr, tc;
    tile_of(b, k, &tr, &tc);
    if (b->ndim != 2 || b->shape[0] % tr || b->shape[1] % tc) {
        cg_c_fail(em, "fragment buffer '%s' in kernel '%s' is not a 2-D grid of %dx%d tiles", b->name,
                  em->func, tr, tc);
        return;
    }
    long long n = (long long)(b->shape[0] / tr) * (b->shape[1] / tc);
    const char *name = cg_c_buffer_name(em, b);
    if (b->scope == TIR_SCOPE_WMMA_ACC) {
        cg_c_line(em, WMMA "fragment<" WMMA "accumulator, 16, 16, %d, float> %s[%lld];", k, name, n);
    } else {
        cg_c_line(em, WMMA "fragment<" WMMA "%s, 16, 16, %d, %s, " WMMA "%s> %s[%lld];",
                  b->scope == TIR_SCOPE_WMMA_A ? "matrix_a" : "matrix_b", k, elem_type(em, b->dtype),
                  f->layout ? "col_major" : "row_major", name, n);
    }
}

/* WMMA has no bfloat16 accumulator: a bfloat16 store goes through a
 * 16x16 float32 tile of shared memory per warp, rounded lane by lane. */
#define STAGE_FLOATS 256

void cg_cuda__wmma_prologue(cg_c_emitter *em, const cg_cuda_wmma *w) {
    if (!w->staged) return;
    cg_c_line(em, "__shared__ __align__(32) float loom_wmma_stage[%lld];",
              (long long)(w->warps * STAGE_FLOATS));
    cg_c_line(em, "const int loom_tid = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + "
                  "threadIdx.x;");
}

/* Prints the fragment of buffer b holding the tile at flattened load e. */
static void print_frag(cg_c_emitter *em, const cg_cuda_wmma *w, const te_expr *e) {
    const tir_buffer *b = arg_buffer(e);
    int k = 16;
    if (b->scope == TIR_SCOPE_WMMA_ACC) {
        for (int i = 0; i < w->n; i++)
            if (w->frags[i].b == b && w->frags[i].k) k = w->frags[i].k;
    } else {
        k = tir_wmma_k(b->dtype);
    }
    int tr, tc;
    tile_of(b, k, &tr, &tc);
    long long cols = (long long)b->shape[1];
    te_str_printf(em->out, "%s[((", cg_c_buffer_name(em, b));
    cg_c_expr(em, e->u.load.index);
    te_str_printf(em->out, ") / %lld) * %lld + ((", cols * tr, cols / tc);
    cg_c_expr(em, e->u.load.index);
    te_str_printf(em->out, ") %% %lld) / %d]", cols, tc);
}

static void print_ptr(cg_c_emitter *em, const te_expr *e) {
    te_str_printf(em->out, "&%s[", cg_c_buffer_name(em, e->u.load.buffer));
    cg_c_expr(em, e->u.load.index);
    te_str_append(em->out, "]");
}

static void indent(cg_c_emitter *em) {
    for (int i = 0; i < em->indent; ++i) te_str_append(em->out, "    ");
}

void cg_cuda__wmma_call(cg_c_emitter *em, const cg_cuda_wmma *w, const tir_stmt *s) {
    const te_expr *const *a = (const te_expr *const *)s->u.tcall.args;
    for (int i = 0; i < s->u.tcall.nargs; i++)
        if (a[i]->kind != TE_LOAD || a[i]->u.load.predicate || a[i]->dtype.lanes != 1) {
            cg_c_fail(em, "%s in kernel '%s': operand %d is not a flat scalar load",
                      tir_tensor_intrin_name(s->u.tcall.intrin), em->func, i);
            return;
        }
    indent(em);
    switch (s->u.tcall.intrin) {
    case TIR_WMMA_FILL:
        te_str_append(em->out, WMMA "fill_fragment(");
        print_frag(em, w, a[0]);
        te_str_append(em->out, ", 0.0f);\n");
        return;
    case TIR_WMMA_LOAD_A:
    case TIR_WMMA_LOAD_B: {
        /* bfloat16 and tf32 fragments from shared memory: load_matrix_sync
         * compiles them to the generic-address wmma.load, which cannot
         * use ldmatrix (float16's gets the .shared form); the helper
         * issues the .shared form itself (cg_cuda__wmma_helpers) */
        const tir_buffer *fb = arg_buffer(a[0]), *src = a[1]->u.load.buffer;
        int layout = 0;
        for (int i = 0; i < w->n; i++)
            if (w->frags[i].b == fb && w->frags[i].layout > 0) layout = 1;
        bool own = src->scope == TIR_SCOPE_SHARED &&
                   (fb->dtype.code == TE_BFLOAT || (fb->dtype.code == TE_FLOAT && fb->dtype.bits == 32));
        if (own)
            te_str_printf(em->out, "loom_wmma_ld_%c_%s_%s(",
                          s->u.tcall.intrin == TIR_WMMA_LOAD_A ? 'a' : 'b',
                          layout ? "col" : "row", fb->dtype.bits == 32 ? "tf32" : "bf16");
        else
            te_str_append(em->out, WMMA "load_matrix_sync(");
        print_frag(em, w, a[0]);
        te_str_append(em->out, ", ");
        print_ptr(em, a[1]);
        te_str_printf(em->out, ", %lld);\n", (long long)s->u.tcall.ld[1]);
        if (arg_buffer(a[0])->dtype.bits == 32) {
            /* tf32 fragments are loaded as float: round each element once
             * here, not at every mma that reads it. */
            indent(em);
            te_str_append(em->out, "{ auto &loom_f = ");
            print_frag(em, w, a[0]);
            te_str_append(em->out, "; for (int loom_t = 0; loom_t < loom_f.num_elements; "
                                   "loom_t++) loom_f.x[loom_t] = " WMMA
                                   "__float_to_tf32(loom_f.x[loom_t]); }\n");
        }
        return;
    }
    case TIR_WMMA_MMA:
        te_str_append(em->out, WMMA "mma_sync(");
        print_frag(em, w, a[0]);
        for (int i = 1; i <= 3; i++) {
            te_str_append(em->out, ", ");
            print_frag(em, w, a[i == 3 ? 0 : i]);
        }
        te_str_append(em->out, ");\n");
        return;
    case TIR_WMMA_STORE:
        if (arg_buffer(a[0])->dtype.code == TE_BFLOAT) {
            te_str_printf(em->out, "{ float *loom_s = &loom_wmma_stage[(loom_tid / 32) * %d]; " WMMA
                                   "store_matrix_sync(loom_s, ",
                          STAGE_FLOATS);
            print_frag(em, w, a[1]);
            te_str_append(em->out, ", 16, " WMMA "mem_row_major); __syncwarp(); "
                                   "for (int loom_e = loom_tid % 32; loom_e < 256; loom_e += 32) ");
            te_str_printf(em->out, "%s[(", cg_c_buffer_name(em, arg_buffer(a[0])));
            cg_c_expr(em, a[0]->u.load.index);
            if (s->u.tcall.col_major[0])
                te_str_printf(em->out, ") + (loom_e %% 16) * %lld + loom_e / 16]",
                              (long long)s->u.tcall.ld[0]);
            else
                te_str_printf(em->out, ") + (loom_e / 16) * %lld + loom_e %% 16]",
                              (long long)s->u.tcall.ld[0]);
            te_str_append(em->out, " = __float2bfloat16_rn(loom_s[loom_e]); __syncwarp(); }\n");
            return;
        }
        if (arg_buffer(a[0])->dtype.bits == 16) {
            /* float16 out: the sums rounded into a float16 accumulator,
             * whose elements sit where the float32 one's do (the mma's
             * accumulator layout is the same for both; the device tests
             * check it). */
            te_str_append(em->out, "{ " WMMA "fragment<" WMMA
                                   "accumulator, 16, 16, 16, __half> loom_h; const auto &loom_f = ");
            print_frag(em, w, a[1]);
            te_str_append(em->out, "; for (int loom_t = 0; loom_t < loom_h.num_elements; loom_t++) "
                                   "loom_h.x[loom_t] = __float2half_rn(loom_f.x[loom_t]); ");
            te_str_append(em->out, WMMA "store_matrix_sync(");
            print_ptr(em, a[0]);
            te_str_printf(em->out, ", loom_h, %lld, " WMMA "%s); }\n", (long long)s->u.tcall.ld[0],
                          s->u.tcall.col_major[0] ? "mem_col_major" : "mem_row_major");
            return;
        }
        te_str_append(em->out, WMMA "store_matrix_sync(");
        print_ptr(em, a[0]);
        te_str_append(em->out, ", ");
        print_frag(em, w, a[1]);
        te_str_printf(em->out, ", %lld, " WMMA "%s);\n", (long long)s->u.tcall.ld[0],
                      s->u.tcall.col_major[0] ? "mem_col_major" : "mem_row_major");
        return;
    default:
        cg_c_fail(em, "tensor intrinsic %d in kernel '%s' has no CUDA form",
                  (int)s->u.tcall.intrin, em->func);
    }
}

/* The .shared forms of wmma.load for bfloat16 (m16n16k16) and tf32
 * (m16n16k8) fragments: 4 words a lane each (PTX ISA, wmma.load). */
const char cg_cuda__wmma_helpers[] =
    "#if __CUDA_ARCH__ >= 800\n"
    "#define LOOM_WMMA_LD(name, ptx) template <class F> LOOM_HELPER void name(F &f, const void *p, unsigned ldm) { \\\n"
    "    static_assert(sizeof(f.x) == 16, \"a fragment of 4 words\"); \\\n"
    "    unsigned *r = reinterpret_cast<unsigned *>(&f.x[0]); \\\n"
    "    asm volatile(ptx \" {%0, %1, %2, %3}, [%4], %5;\\n\" : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) \\\n"
    "                 : \"r\"((unsigned)__cvta_generic_to_shared(p)), \"r\"(ldm) : \"memory\"); }\n"
    "LOOM_WMMA_LD(loom_wmma_ld_a_row_bf16, \"wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16\")\n"
    "LOOM_WMMA_LD(loom_wmma_ld_a_col_bf16, \"wmma.load.a.sync.aligned.col.m16n16k16.shared.bf16\")\n"
    "LOOM_WMMA_LD(loom_wmma_ld_b_row_bf16, \"wmma.load.b.sync.aligned.row.m16n16k16.shared.bf16\")\n"
    "LOOM_WMMA_LD(loom_wmma_ld_b_col_bf16, \"wmma.load.b.sync.aligned.col.m16n16k16.shared.bf16\")\n"
    "LOOM_WMMA_LD(loom_wmma_ld_a_row_tf32, \"wmma.load.a.sync.aligned.row.m16n16k8.shared.tf32\")\n"
    "LOOM_WMMA_LD(loom_wmma_ld_a_col_tf32, \"wmma.load.a.sync.aligned.col.m16n16k8.shared.tf32\")\n"
    "LOOM_WMMA_LD(loom_wmma_ld_b_row_tf32, \"wmma.load.b.sync.aligned.row.m16n16k8.shared.tf32\")\n"
    "LOOM_WMMA_LD(loom_wmma_ld_b_col_tf32, \"wmma.load.b.sync.aligned.col.m16n16k8.shared.tf32\")\n"
    "#endif\n";
