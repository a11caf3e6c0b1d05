/* tests/onnx_writer.c — tiny ONNX models from tests (see onnx_writer.h). */
#include "onnx_writer.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "onnx.pb-c.h"
#include "testutil.h"

#define OW_MAX 32 /* nodes, inputs, outputs, initializers, attributes each */

struct ow_node {
    ow_model *w;
    Onnx__NodeProto p;
    Onnx__AttributeProto *attrs[OW_MAX];
};

struct ow_model {
    void **blocks; /* every allocation, freed by ow_free */
    size_t nblocks, capblocks;
    Onnx__ModelProto model;
    Onnx__OperatorSetIdProto opset, opset_ms, opset_extra;
    Onnx__OperatorSetIdProto *opsets[3];
    Onnx__GraphProto graph;
    Onnx__NodeProto *nodes[OW_MAX];
    Onnx__ValueInfoProto *inputs[OW_MAX], *outputs[OW_MAX];
    Onnx__TensorProto *inits[OW_MAX];
};

static void *ow_alloc(ow_model *w, size_t size)
{
    if (w->nblocks == w->capblocks) {
        w->capblocks = w->capblocks ? 2 * w->capblocks : 64;
        w->blocks = realloc(w->blocks, w->capblocks * sizeof *w->blocks);
        assert_non_null(w->blocks);
    }
    void *p = calloc(1, size ? size : 1);
    assert_non_null(p);
    w->blocks[w->nblocks++] = p;
    return p;
}

static char *ow_strndup(ow_model *w, const char *s, size_t n)
{
    char *d = ow_alloc(w, n + 1);
    memcpy(d, s, n);
    return d;
}

static void *ow_copy(ow_model *w, const void *data, size_t n)
{
    void *d = ow_alloc(w, n);
    if (n) memcpy(d, data, n);
    return d;
}

ow_model *ow_new(int64_t opset)
{
    ow_model *w = calloc(1, sizeof *w);
    assert_non_null(w);
    onnx__model_proto__init(&w->model);
    w->model.has_ir_version = 1;
    w->model.ir_version = 8;
    w->model.producer_name = "loom-tests";
    onnx__operator_set_id_proto__init(&w->opset);
    w->opset.domain = "";
    w->opset.has_version = 1;
    w->opset.version = opset;
    onnx__operator_set_id_proto__init(&w->opset_ms);
    w->opset_ms.domain = "com.microsoft";
    w->opset_ms.has_version = 1;
    w->opset_ms.version = 1;
    w->opsets[0] = &w->opset;
    w->opsets[1] = &w->opset_ms;
    w->model.n_opset_import = 2;
    w->model.opset_import = w->opsets;
    onnx__graph_proto__init(&w->graph);
    w->graph.name = "g";
    w->graph.node = w->nodes;
    w->graph.input = w->inputs;
    w->graph.output = w->outputs;
    w->graph.initializer = w->inits;
    w->model.graph = &w->graph;
    return w;
}

void ow_opset_import(ow_model *w, const char *domain, int64_t version)
{
    assert_true(w->model.n_opset_import == 2);
    onnx__operator_set_id_proto__init(&w->opset_extra);
    w->opset_extra.domain = ow_strndup(w, domain, strlen(domain));
    w->opset_extra.has_version = 1;
    w->opset_extra.version = version;
    w->opsets[2] = &w->opset_extra;
    w->model.n_opset_import = 3;
}

void ow_free(ow_model *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->nblocks; i++) free(w->blocks[i]);
    free(w->blocks);
    free(w);
}

static Onnx__ValueInfoProto *value_info(ow_model *w, const char *name, int elem_type, int ndim,
                                        const int64_t *shape)
{
    Onnx__ValueInfoProto *vi = ow_alloc(w, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = ow_strndup(w, name, strlen(name));
    if (elem_type < 0) return vi;
    Onnx__TypeProto *tp = ow_alloc(w, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = ow_alloc(w, sizeof *tt);
    Onnx__TensorShapeProto *sp = ow_alloc(w, sizeof *sp);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sp);
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    tt->has_elem_type = 1;
    tt->elem_type = elem_type;
    tt->shape = sp;
    sp->n_dim = (size_t)ndim;
    sp->dim = ow_alloc(w, sizeof *sp->dim * (size_t)(ndim ? ndim : 1));
    for (int d = 0; d < ndim; d++) {
        Onnx__TensorShapeProto__Dimension *dim = ow_alloc(w, sizeof *dim);
        onnx__tensor_shape_proto__dimension__init(dim);
        if (shape[d] < 0) { /* a dynamic dimension, named "N" */
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dim->dim_param = ow_strndup(w, "N", 1);
        } else {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dim->dim_value = shape[d];
        }
        sp->dim[d] = dim;
    }
    vi->type = tp;
    return vi;
}

void ow_input(ow_model *w, const char *name, int elem_type, int ndim, const int64_t *shape)
{
    assert_true(w->graph.n_input < OW_MAX);
    w->inputs[w->graph.n_input++] = value_info(w, name, elem_type, ndim, shape);
}

void ow_output(ow_model *w, const char *name)
{
    assert_true(w->graph.n_output < OW_MAX);
    w->outputs[w->graph.n_output++] = value_info(w, name, -1, 0, NULL);
}

static Onnx__TensorProto *tensor(ow_model *w, const char *name, int elem_type, int ndim,
                                 const int64_t *shape, const void *data, size_t nbytes)
{
    Onnx__TensorProto *t = ow_alloc(w, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = ow_strndup(w, name, strlen(name));
    t->has_data_type = 1;
    t->data_type = elem_type;
    t->n_dims = (size_t)ndim;
    t->dims = ow_copy(w, shape, sizeof *shape * (size_t)ndim);
    t->has_raw_data = 1;
    t->raw_data.len = nbytes;
    t->raw_data.data = ow_copy(w, data, nbytes);
    return t;
}

void ow_init(ow_model *w, const char *name, int elem_type, int ndim, const int64_t *shape,
             const void *data, size_t nbytes)
{
    assert_true(w->graph.n_initializer < OW_MAX);
    w->inits[w->graph.n_initializer++] = tensor(w, name, elem_type, ndim, shape, data, nbytes);
}

/* "a,,b" into an array of names. */
static char **split_names(ow_model *w, const char *list, size_t *n)
{
    char **names = ow_alloc(w, sizeof *names * OW_MAX);
    *n = 0;
    if (!*list) return names;
    for (const char *p = list;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        assert_true(*n < OW_MAX);
        names[(*n)++] = ow_strndup(w, p, len);
        if (!e) break;
        p = e + 1;
    }
    return names;
}

ow_node *ow_node_add(ow_model *w, const char *domain, const char *op, const char *inputs,
                     const char *outputs)
{
    assert_true(w->graph.n_node < OW_MAX);
    ow_node *n = ow_alloc(w, sizeof *n);
    n->w = w;
    onnx__node_proto__init(&n->p);
    n->p.op_type = ow_strndup(w, op, strlen(op));
    n->p.domain = ow_strndup(w, domain, strlen(domain));
    n->p.name = ow_strndup(w, "n0", 2);
    n->p.name[1] = (char)('0' + w->graph.n_node % 10);
    n->p.input = split_names(w, inputs, &n->p.n_input);
    n->p.output = split_names(w, outputs, &n->p.n_output);
    n->p.attribute = n->attrs;
    w->nodes[w->graph.n_node++] = &n->p;
    return n;
}

static Onnx__AttributeProto *attr(ow_node *n, const char *name, Onnx__AttributeProto__AttributeType t)
{
    assert_true(n->p.n_attribute < OW_MAX);
    Onnx__AttributeProto *a = ow_alloc(n->w, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = ow_strndup(n->w, name, strlen(name));
    a->has_type = 1;
    a->type = t;
    n->attrs[n->p.n_attribute++] = a;
    return a;
}

void ow_attr_int(ow_node *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

void ow_attr_float(ow_node *n, const char *name, float v)
{
    Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

void ow_attr_str(ow_node *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(v);
    a->s.data = ow_copy(n->w, v, strlen(v));
}

void ow_attr_ints(ow_node *n, const char *name, int count, const int64_t *v)
{
    Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)count;
    a->ints = ow_copy(n->w, v, sizeof *v * (size_t)count);
}

void ow_attr_strs(ow_node *n, const char *name, int count, const char *const *v)
{
    Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    a->n_strings = (size_t)count;
    a->strings = ow_alloc(n->w, sizeof *a->strings * (size_t)(count ? count : 1));
    for (int i = 0; i < count; i++) {
        a->strings[i].len = strlen(v[i]);
        a->strings[i].data = ow_copy(n->w, v[i], strlen(v[i]));
    }
}

void ow_attr_floats(ow_node *n, const char *name, int count, const float *v)
{
    Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = (size_t)count;
    a->floats = ow_copy(n->w, v, sizeof *v * (size_t)count);
}

void ow_attr_tensor(ow_node *n, const char *name, int elem_type, int ndim, const int64_t *shape,
                    const void *data, size_t nbytes)
{
    Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = tensor(n->w, "", elem_type, ndim, shape, data, nbytes);
}

void ow_write(ow_model *w, const char *path)
{
    size_t len = onnx__model_proto__get_packed_size(&w->model);
    uint8_t *buf = malloc(len ? len : 1);
    assert_non_null(buf);
    assert_int_equal(onnx__model_proto__pack(&w->model, buf), len);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    free(buf);
}

/* ---------------- one-node models as data ---------------- */

/* v converted to elem_type, little-endian, into out (8 bytes at most). */
static size_t pack_value(int elem_type, double v, unsigned char *out)
{
    switch (elem_type) {
    case GR_FLOAT: { float f = (float)v; memcpy(out, &f, 4); return 4; }
    case GR_DOUBLE: memcpy(out, &v, 8); return 8;
    case GR_INT8: { int8_t i = (int8_t)v; memcpy(out, &i, 1); return 1; }
    case GR_UINT8:
    case GR_BOOL: { uint8_t i = (uint8_t)v; memcpy(out, &i, 1); return 1; }
    case GR_INT32: { int32_t i = (int32_t)v; memcpy(out, &i, 4); return 4; }
    case GR_INT64: { int64_t i = (int64_t)v; memcpy(out, &i, 8); return 8; }
    default: fail_msg("ow_one_node: element type %d in an initializer", elem_type); return 0;
    }
}

ow_model *ow_one_node(const ow_node_spec *s)
{
    ow_model *w = ow_new(s->opset);
    for (int k = 0; k < 4 && s->vals[k].name; k++) {
        const ow_value_spec *v = &s->vals[k];
        if (!v->nvals) {
            ow_input(w, v->name, v->elem_type, v->ndim, v->shape);
            continue;
        }
        unsigned char data[32];
        size_t n = 0;
        for (int i = 0; i < v->nvals && i < 4; i++) n += pack_value(v->elem_type, v->vals[i], data + n);
        ow_init(w, v->name, v->elem_type, v->ndim, v->shape, data, n);
    }
    ow_node *n = ow_node_add(w, "", s->op, s->inputs ? s->inputs : "x", "y");
    for (int k = 0; k < 3 && s->attrs[k].name; k++) {
        const ow_attr_spec *a = &s->attrs[k];
        switch (a->kind) {
        case 'i': ow_attr_int(n, a->name, a->i); break;
        case 'f': ow_attr_float(n, a->name, a->f); break;
        case 's': ow_attr_str(n, a->name, a->s); break;
        case 'I': ow_attr_ints(n, a->name, a->n, a->ints); break;
        default: fail_msg("ow_one_node: attribute '%s' of kind '%c'", a->name, a->kind);
        }
    }
    ow_output(w, "y");
    return w;
}

/* ---------------- running ---------------- */

#include <math.h>
#include <unistd.h>

#include "loom/runtime.h"

gr_model *ow_load(ow_model *w, char **err)
{
    char path[] = "/tmp/loom_ow_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    ow_write(w, path);
    gr_model *m = gr_model_load(path, err);
    unlink(path);
    return m;
}

gr_model *ow_load_ok_(ow_model *w, const char *file, int line)
{
    char *err = NULL;
    gr_model *m = ow_load(w, &err);
    if (!m) {
        print_error("load: %s\n", err ? err : "(no message)");
        free(err);
        _fail(file, line);
    }
    return m;
}

gr_exec *ow_compile(ow_model *w, gr_model **m, char **err)
{
    *m = ow_load(w, err);
    if (!*m) return NULL;
    gr_exec *e = gr_compile(*m, NULL, err);
    if (!e) {
        gr_model_free(*m);
        *m = NULL;
    }
    return e;
}

gr_exec *ow_compile_ok_(ow_model *w, gr_model **m, const char *file, int line)
{
    char *err = NULL;
    gr_exec *e = ow_compile(w, m, &err);
    if (!e) {
        print_error("compile: %s\n", err ? err : "(no message)");
        free(err);
        _fail(file, line);
    }
    free(err);
    return e;
}

void ow_expect_error_(ow_model *w, const char *a, const char *b, const char *file, int line)
{
    gr_model *m = NULL;
    char *err = NULL;
    gr_exec *e = ow_compile(w, &m, &err);
    if (e) {
        print_error("compiled; expected the error \"%s\" ... \"%s\"\n", a, b);
        _fail(file, line);
    }
    tu_assert_msg_has_(err, file, line, a, b, (const char *)NULL);
    free(err);
    gr_model_free(m);
    ow_free(w);
}

void ow_expect_errors_(const ow_error_case *cases, size_t n, const char *file, int line)
{
    for (size_t i = 0; i < n; i++)
        ow_expect_error_(ow_one_node(&cases[i].m), cases[i].want[0], cases[i].want[1], file, line);
}

void ow_finish(ow_model *w, gr_exec *e, gr_model *m)
{
    gr_exec_free(e);
    gr_model_free(m);
    ow_free(w);
}

int ow_elem_type(DLDataType t)
{
    if (t.code == kDLBfloat) return GR_BFLOAT16;
    if (t.code == kDLFloat) return t.bits == 16 ? GR_FLOAT16 : t.bits == 32 ? GR_FLOAT : GR_DOUBLE;
    if (t.code == kDLUInt)
        return t.bits == 1 ? GR_BOOL : t.bits == 8 ? GR_UINT8 : t.bits == 16 ? GR_UINT16 : t.bits == 32 ? GR_UINT32 : GR_UINT64;
    return t.bits == 8 ? GR_INT8 : t.bits == 16 ? GR_INT16 : t.bits == 32 ? GR_INT32 : GR_INT64;
}

int64_t ow_bcast_index(int on, const int64_t *os, int64_t o, int n, const int64_t *s)
{
    int64_t idx[8], r = o;
    assert_true(on <= 8 && n <= on);
    for (int d = on - 1; d >= 0; d--) {
        idx[d] = r % os[d];
        r /= os[d];
    }
    int64_t flat = 0;
    for (int d = 0; d < n; d++) flat = flat * s[d] + (s[d] == 1 ? 0 : idx[on - n + d]);
    return flat;
}

int64_t ow_numel(const DLTensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

const DLTensor *ow_run(gr_exec *e, int nin, DLTensor *const *ins, int k)
{
    for (int o = 0; o < gr_exec_num_outputs(e); o++) {
        const DLTensor *t = gr_exec_output(e, o);
        int64_t n = ow_numel(t);
        for (int64_t i = 0; i < n; i++) {
            if (t->dtype.code == kDLFloat || t->dtype.code == kDLBfloat) ow_set((DLTensor *)t, i, NAN);
            else memset((char *)t->data + i * (t->dtype.bits == 1 ? 1 : t->dtype.bits / 8), 0xA5,
                        t->dtype.bits == 1 ? 1 : t->dtype.bits / 8);
        }
    }
    char *err = NULL;
    int rc = gr_run(e, nin, ins, 0, NULL, &err);
    if (rc != 0) printf("gr_run: %s\n", err);
    assert_int_equal(rc, 0);
    return gr_exec_output(e, k);
}

DLTensor *ow_tensor(DLDataType dt, int ndim, const int64_t *shape)
{
    DLTensor *t = rt_tensor_alloc(dt, ndim, shape);
    assert_non_null(t);
    return t;
}

/* IEEE binary16 and bfloat16 bits from and to doubles, rounding to
 * nearest even (what te's casts do). */
static double half_get(uint16_t h)
{
    int e = (h >> 10) & 0x1f;
    double m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

static uint16_t half_set(double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (isnan(v)) return 0x7e00;
    if (a >= 65520.0) return sign | 0x7c00;
    if (a < ldexp(1, -14)) return sign | (uint16_t)nearbyint(a * ldexp(1, 24));
    int e;
    double q = nearbyint(frexp(a, &e) * 2048); /* a = q 2^(e-11), q in [1024, 2048] */
    if (q == 2048) {
        q = 1024;
        e++;
    }
    if (e + 14 >= 31) return sign | 0x7c00;
    return (uint16_t)(sign | (e + 14) << 10 | (uint16_t)(q - 1024));
}

static double bfloat_get(uint16_t h)
{
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static uint16_t bfloat_set(double v)
{
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    if (isnan(f)) return 0x7fc0;
    return (uint16_t)((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}

double ow_get(const DLTensor *t, int64_t i)
{
    const char *p = t->data;
    switch (t->dtype.code * 100 + t->dtype.bits) {
    case kDLFloat * 100 + 32: return ((const float *)p)[i];
    case kDLFloat * 100 + 64: return ((const double *)p)[i];
    case kDLFloat * 100 + 16: return half_get(((const uint16_t *)p)[i]);
    case kDLBfloat * 100 + 16: return bfloat_get(((const uint16_t *)p)[i]);
    case kDLInt * 100 + 8: return ((const int8_t *)p)[i];
    case kDLInt * 100 + 16: return ((const int16_t *)p)[i];
    case kDLInt * 100 + 32: return ((const int32_t *)p)[i];
    case kDLInt * 100 + 64: return (double)((const int64_t *)p)[i];
    case kDLUInt * 100 + 1:
    case kDLUInt * 100 + 8: return ((const uint8_t *)p)[i];
    case kDLUInt * 100 + 16: return ((const uint16_t *)p)[i];
    case kDLUInt * 100 + 32: return ((const uint32_t *)p)[i];
    case kDLUInt * 100 + 64: return (double)((const uint64_t *)p)[i];
    default: fail_msg("ow_get: dtype code %d bits %d", t->dtype.code, t->dtype.bits); return 0;
    }
}

void ow_set(DLTensor *t, int64_t i, double v)
{
    char *p = t->data;
    switch (t->dtype.code * 100 + t->dtype.bits) {
    case kDLFloat * 100 + 32: ((float *)p)[i] = (float)v; break;
    case kDLFloat * 100 + 64: ((double *)p)[i] = v; break;
    case kDLFloat * 100 + 16: ((uint16_t *)p)[i] = half_set(v); break;
    case kDLBfloat * 100 + 16: ((uint16_t *)p)[i] = bfloat_set(v); break;
    case kDLInt * 100 + 8: ((int8_t *)p)[i] = (int8_t)v; break;
    case kDLInt * 100 + 16: ((int16_t *)p)[i] = (int16_t)v; break;
    case kDLInt * 100 + 32: ((int32_t *)p)[i] = (int32_t)v; break;
    case kDLInt * 100 + 64: ((int64_t *)p)[i] = (int64_t)v; break;
    case kDLUInt * 100 + 1:
    case kDLUInt * 100 + 8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case kDLUInt * 100 + 16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case kDLUInt * 100 + 32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case kDLUInt * 100 + 64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    default: fail_msg("ow_set: dtype code %d bits %d", t->dtype.code, t->dtype.bits);
    }
}
