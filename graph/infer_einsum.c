/* graph/infer_einsum.c — Einsum (opset 12): the equation's labels and the
 * output shape. Every form numpy's einsum takes in one call is read:
 * explicit ("ij,jk->ik") and implicit outputs, repeated labels within an
 * input (diagonals), an ellipsis broadcasting as numpy does. Refused: an
 * output label no input has, a label repeated in the output, an explicit
 * output that drops the ellipsis' dimensions (numpy refuses it too). */
#include "graph/einsum.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int letter(char ch)
{
    if (ch >= 'a' && ch <= 'z') return ch - 'a';
    if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
    return -1;
}

/* One term's labels up to a ',' or '-' or the end; *ell: the position of
 * its ellipsis among the labels (-1 without one). */
static bool term(const char **p, int *labs, int *n, int *ell, char *why, size_t size)
{
    *n = 0;
    *ell = -1;
    for (;;) {
        char ch = **p;
        if (ch == ' ') {
            (*p)++;
        } else if (ch == '.') {
            if (strncmp(*p, "...", 3) != 0 || *ell >= 0) {
                snprintf(why, size, "a term holds '.' outside one '...'");
                return false;
            }
            *ell = *n;
            *p += 3;
        } else if (letter(ch) >= 0) {
            if (*n == GR_MAX_DIMS) {
                snprintf(why, size, "a term has more than %d labels", GR_MAX_DIMS);
                return false;
            }
            labs[(*n)++] = letter(ch);
            (*p)++;
        } else if (ch == ',' || ch == '-' || ch == 0) {
            return true;
        } else {
            snprintf(why, size, "character '%c' is not a label (a-z, A-Z), '...', ',' or '->'", ch);
            return false;
        }
    }
}

bool gr_einsum_parse(const char *eq, int n_in, const int *ranks, const int64_t *const *shapes, gr_einsum *e,
                     char *why, size_t size)
{
    memset(e, 0, sizeof *e);
    if (n_in < 1 || n_in > GR_EINSUM_MAX_IN) {
        snprintf(why, size, "%d inputs; Einsum takes 1 to %d", n_in, GR_EINSUM_MAX_IN);
        return false;
    }
    e->n_in = n_in;
    const char *p = eq;
    int labs[GR_EINSUM_MAX_IN][GR_MAX_DIMS], nl[GR_EINSUM_MAX_IN], ell[GR_EINSUM_MAX_IN];
    int count[GR_EINSUM_LETTERS] = {0};
    for (int i = 0; i < n_in; i++) {
        if (i > 0) {
            if (*p != ',') {
                snprintf(why, size, "the equation has %d input terms; the node has %d inputs", i, n_in);
                return false;
            }
            p++;
        }
        if (!term(&p, labs[i], &nl[i], &ell[i], why, size)) return false;
        int covered = ranks[i] - nl[i];
        if (covered < 0 || (ell[i] < 0 && covered != 0)) {
            snprintf(why, size, "term %d has %d labels%s; input %d has rank %d", i, nl[i], ell[i] >= 0 ? " and '...'" : "",
                     i, ranks[i]);
            return false;
        }
        if (covered > e->n_ell) e->n_ell = covered;
        for (int k = 0; k < nl[i]; k++) count[labs[i][k]]++;
    }
    if (*p == ',') {
        snprintf(why, size, "the equation has more input terms than the node's %d inputs", n_in);
        return false;
    }
    /* labels per dimension, extents */
    for (int i = 0; i < n_in; i++) {
        int covered = ranks[i] - nl[i], d = 0;
        e->rank[i] = ranks[i];
        for (int k = 0; k <= nl[i]; k++) {
            if (k == ell[i])
                for (int j = 0; j < covered; j++) e->lab[i][d++] = GR_EINSUM_LETTERS + e->n_ell - covered + j;
            if (k < nl[i]) e->lab[i][d++] = labs[i][k];
        }
        for (d = 0; d < ranks[i]; d++) {
            int l = e->lab[i][d];
            int64_t x = shapes[i][d];
            if (!e->used[l]) {
                e->ext[l] = x;
            } else if (x != e->ext[l]) {
                /* only the ellipsis broadcasts (numpy's einsum) */
                if (l >= GR_EINSUM_LETTERS && (x == 1 || e->ext[l] == 1)) {
                    if (x > e->ext[l]) e->ext[l] = x;
                } else if (l < GR_EINSUM_LETTERS) {
                    snprintf(why, size, "label '%c' has extents %" PRId64 " and %" PRId64,
                             l < 26 ? 'a' + l : 'A' + l - 26, e->ext[l], x);
                    return false;
                } else {
                    snprintf(why, size, "the ellipsis' dimensions do not broadcast (%" PRId64 " and %" PRId64 ")",
                             e->ext[l], x);
                    return false;
                }
            }
            e->used[l] = true;
        }
    }
    if (*p == '-') {
        if (p[1] != '>') {
            snprintf(why, size, "'-' not followed by '>'");
            return false;
        }
        p += 2;
        int ol[GR_MAX_DIMS], on, oe;
        if (!term(&p, ol, &on, &oe, why, size)) return false;
        if (*p) {
            snprintf(why, size, "the output term is followed by '%c'", *p);
            return false;
        }
        if (e->n_ell > 0 && oe < 0) {
            snprintf(why, size, "the output drops the ellipsis' %d dimensions (summing them is not supported)",
                     e->n_ell);
            return false;
        }
        bool seen[GR_EINSUM_LETTERS] = {false};
        for (int k = 0; k <= on; k++) {
            if (k == oe)
                for (int j = 0; j < e->n_ell; j++) e->out[e->n_out++] = GR_EINSUM_LETTERS + j;
            if (k == on) break;
            int l = ol[k];
            if (!count[l]) {
                snprintf(why, size, "output label '%c' is in no input", l < 26 ? 'a' + l : 'A' + l - 26);
                return false;
            }
            if (seen[l]) {
                snprintf(why, size, "output label '%c' is repeated", l < 26 ? 'a' + l : 'A' + l - 26);
                return false;
            }
            seen[l] = true;
            e->out[e->n_out++] = l;
        }
    } else {
        for (int j = 0; j < e->n_ell; j++) e->out[e->n_out++] = GR_EINSUM_LETTERS + j;
        for (int l = 26; l < 52; l++)
            if (count[l] == 1) e->out[e->n_out++] = l;
        for (int l = 0; l < 26; l++)
            if (count[l] == 1) e->out[e->n_out++] = l;
    }
    return true;
}

bool gr_infer_einsum(gr_ictx *c)
{
    int n = c->n->n_inputs;
    if (n < 1 || n > GR_EINSUM_MAX_IN) return gr_ifail(c, "%d inputs; Einsum takes 1 to %d", n, GR_EINSUM_MAX_IN);
    const gr_type *t[GR_EINSUM_MAX_IN];
    int ranks[GR_EINSUM_MAX_IN];
    const int64_t *shapes[GR_EINSUM_MAX_IN];
    for (int i = 0; i < n; i++) {
        if (!gr_iin_req(c, i, "Inputs", &t[i])) return false;
        if (t[i]->elem_type != t[0]->elem_type)
            return gr_ifail(c, "input %d is %s, input 0 is %s: they must match", i, gr_elem_type_name(t[i]->elem_type),
                            gr_elem_type_name(t[0]->elem_type));
        ranks[i] = t[i]->ndim;
        shapes[i] = t[i]->shape;
    }
    int et = t[0]->elem_type;
    if (et == GR_BOOL || et == GR_STRING || et == GR_COMPLEX64 || et == GR_COMPLEX128)
        return gr_ifail(c, "inputs are %s; Einsum takes numbers", gr_elem_type_name(et));
    const gr_attr *a = gr_node_attr(c->n, "equation");
    if (!a || a->kind != GR_ATTR_STRING) return gr_ifail(c, "attribute 'equation' (a string) is required");
    gr_einsum e;
    char why[200];
    if (!gr_einsum_parse(a->s.data, n, ranks, shapes, &e, why, sizeof why))
        return gr_ifail(c, "equation '%s': %s", a->s.data, why);
    int64_t out[GR_MAX_DIMS];
    for (int d = 0; d < e.n_out; d++) out[d] = e.ext[e.out[d]];
    return gr_iout(c, 0, et, e.n_out, out);
}
