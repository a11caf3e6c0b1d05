/* graph/tensor.c — ONNX TensorProto and TypeProto into gr_tensor/gr_type:
 * element types, the data fields (raw, typed, external), TensorProto files. */
#include "graph/gr_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct {
    const char *name;
    uint8_t code, bits;
    size_t size;
} elem_types[] = {
    [GR_FLOAT] = {"float", kDLFloat, 32, 4},      [GR_UINT8] = {"uint8", kDLUInt, 8, 1},
    [GR_INT8] = {"int8", kDLInt, 8, 1},           [GR_UINT16] = {"uint16", kDLUInt, 16, 2},
    [GR_INT16] = {"int16", kDLInt, 16, 2},        [GR_INT32] = {"int32", kDLInt, 32, 4},
    [GR_INT64] = {"int64", kDLInt, 64, 8},        [GR_STRING] = {"string", 0, 0, 0},
    [GR_BOOL] = {"bool", kDLUInt, 1, 1},          [GR_FLOAT16] = {"float16", kDLFloat, 16, 2},
    [GR_DOUBLE] = {"double", kDLFloat, 64, 8},    [GR_UINT32] = {"uint32", kDLUInt, 32, 4},
    [GR_UINT64] = {"uint64", kDLUInt, 64, 8},     [GR_COMPLEX64] = {"complex64", kDLComplex, 64, 8},
    [GR_COMPLEX128] = {"complex128", kDLComplex, 128, 16},
    [GR_BFLOAT16] = {"bfloat16", kDLBfloat, 16, 2},
};

static bool known(int t) { return t > 0 && t <= GR_BFLOAT16; }

const char *gr_elem_type_name(int t) { return known(t) ? elem_types[t].name : "?"; }

bool gr_elem_type_dl(int t, DLDataType *out)
{
    if (!known(t) || t == GR_STRING) return false;
    *out = (DLDataType){elem_types[t].code, elem_types[t].bits, 1};
    return true;
}

size_t gr_elem_type_size(int t) { return known(t) ? elem_types[t].size : 0; }

bool gr_type_empty(const gr_type *t)
{
    if (!t || t->kind != GR_TYPE_TENSOR || t->ndim <= 0) return false;
    bool zero = false;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0) return false;
        zero |= t->shape[d] == 0;
    }
    return zero;
}

/* ONNX external data keeps the model's directory as its root: a location
 * that is absolute or climbs out with ".." is refused, as ONNX's checker does. */
static bool location_ok(const char *loc)
{
    if (!*loc || loc[0] == '/') return false;
    for (const char *p = loc; *p;) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') return false;
        p += n;
        while (*p == '/') p++;
    }
    return true;
}

static bool parse_u64(const char *s, uint64_t *out)
{
    if (!*s) return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || s[0] == '-') return false;
    *out = v;
    return true;
}

static bool read_external(gr_arena *a, const Onnx__TensorProto *tp, const char *dir,
                          const char *what, size_t want, void **data, char **err)
{
    const char *loc = NULL;
    uint64_t offset = 0, length = 0;
    bool has_length = false;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        const char *k = e->key ? e->key : "", *v = e->value ? e->value : "";
        if (strcmp(k, "location") == 0) {
            loc = v;
        } else if (strcmp(k, "offset") == 0) {
            if (!parse_u64(v, &offset)) {
                gr_set_err(err, "%s: external data offset '%s' is not a byte count", what, v);
                return false;
            }
        } else if (strcmp(k, "length") == 0) {
            if (!parse_u64(v, &length)) {
                gr_set_err(err, "%s: external data length '%s' is not a byte count", what, v);
                return false;
            }
            has_length = true;
        }
    }
    if (!loc) {
        gr_set_err(err, "%s: external data has no location", what);
        return false;
    }
    if (!location_ok(loc)) {
        gr_set_err(err, "%s: external data location '%s' must be a relative path inside the "
                        "model's directory", what, loc);
        return false;
    }
    size_t plen = strlen(dir) + 1 + strlen(loc) + 1;
    char *path = gr_arena_alloc(a, plen, 1);
    if (!path) {
        gr_set_err(err, "%s: out of memory", what);
        return false;
    }
    snprintf(path, plen, "%s/%s", dir, loc);
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        gr_set_err(err, "%s: cannot open external data file %s: %s", what, path, strerror(errno));
        if (f) fclose(f);
        return false;
    }
    uint64_t size = (uint64_t)st.st_size;
    if (!has_length) length = offset <= size ? size - offset : 0;
    if (offset > size || length > size - offset) {
        gr_set_err(err, "%s: external data at offset %" PRIu64 " length %" PRIu64
                        " runs past the end of %s (%" PRIu64 " bytes)",
                   what, offset, length, path, size);
        fclose(f);
        return false;
    }
    if (length != want) {
        gr_set_err(err, "%s: external data in %s has %" PRIu64 " bytes, its shape and type need %zu",
                   what, path, length, want);
        fclose(f);
        return false;
    }
    *data = gr_arena_alloc(a, want, 1);
    if (!*data) {
        gr_set_err(err, "%s: out of memory for %zu bytes", what, want);
        fclose(f);
        return false;
    }
    if (fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(*data, 1, want, f) != want) {
        gr_set_err(err, "%s: cannot read external data from %s", what, path);
        fclose(f);
        return false;
    }
    fclose(f);
    return true;
}

/* Copies a typed field: `n` source values of `src_size` bytes each, one
 * per element (two for complex); narrower destinations take the low bytes
 * (int32_data holds int8/uint8/int16/uint16/bool/float16/bfloat16 values
 * and uint64_data holds uint32: little-endian low bytes are the value). */
static bool copy_typed(gr_arena *a, const void *src, size_t n, size_t src_size, size_t per_elem,
                       gr_tensor *t, const char *what, const char *field, char **err)
{
    size_t esize = gr_elem_type_size(t->elem_type);
    size_t part = esize / per_elem;
    if ((uint64_t)n != (uint64_t)t->numel * per_elem) {
        gr_set_err(err, "%s: %s has %zu values, its shape needs %" PRId64, what, field, n,
                   t->numel * (int64_t)per_elem);
        return false;
    }
    unsigned char *dst = gr_arena_alloc(a, t->nbytes, 1);
    if (!dst) {
        gr_set_err(err, "%s: out of memory for %zu bytes", what, t->nbytes);
        return false;
    }
    const unsigned char *s = src;
    if (part == src_size) {
        if (n) memcpy(dst, s, n * src_size);
    } else {
        for (size_t i = 0; i < n; i++) memcpy(dst + i * part, s + i * src_size, part);
    }
    t->data = dst;
    return true;
}

bool gr_tensor_from_proto(gr_arena *a, const Onnx__TensorProto *tp, const char *dir,
                          const char *what, gr_tensor *t, char **err)
{
    memset(t, 0, sizeof *t);
    t->name = gr_arena_strdup(a, tp->name);
    t->elem_type = tp->has_data_type ? tp->data_type : GR_UNDEFINED;
    if (!known(t->elem_type)) {
        gr_set_err(err, "%s: unsupported data type %d", what, t->elem_type);
        return false;
    }
    if (tp->segment) {
        gr_set_err(err, "%s: segmented tensors are not supported", what);
        return false;
    }
    gr_elem_type_dl(t->elem_type, &t->dtype);
    t->ndim = (int)tp->n_dims;
    if (tp->n_dims > 64) {
        gr_set_err(err, "%s: %zu dimensions (at most 64)", what, tp->n_dims);
        return false;
    }
    t->shape = gr_arena_alloc(a, tp->n_dims ? tp->n_dims : 1, sizeof(int64_t));
    if (!t->shape || !t->name) {
        gr_set_err(err, "%s: out of memory", what);
        return false;
    }
    int64_t numel = 1;
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0) {
            gr_set_err(err, "%s: dimension %zu is %" PRId64 " (must be >= 0)", what, i, tp->dims[i]);
            return false;
        }
        if (__builtin_mul_overflow(numel, tp->dims[i], &numel)) {
            gr_set_err(err, "%s: the shape has more elements than fit in 64 bits", what);
            return false;
        }
        t->shape[i] = tp->dims[i];
    }
    t->numel = numel;
    size_t esize = gr_elem_type_size(t->elem_type);
    if (t->elem_type != GR_STRING &&
        (numel > (int64_t)(SIZE_MAX / 2) || __builtin_mul_overflow((size_t)numel, esize, &t->nbytes))) {
        gr_set_err(err, "%s: %" PRId64 " elements of %s do not fit in memory", what, numel,
                   gr_elem_type_name(t->elem_type));
        return false;
    }
    bool ok = true;
    bool external = tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (t->elem_type == GR_STRING) {
        if (external || tp->has_raw_data) {
            gr_set_err(err, "%s: string data must be in string_data", what);
            return false;
        }
        if ((uint64_t)tp->n_string_data != (uint64_t)numel) {
            gr_set_err(err, "%s: string_data has %zu values, its shape needs %" PRId64, what,
                       tp->n_string_data, numel);
            return false;
        }
        t->strings = gr_arena_alloc(a, tp->n_string_data ? tp->n_string_data : 1, sizeof(gr_bytes));
        if (!t->strings) {
            gr_set_err(err, "%s: out of memory", what);
            return false;
        }
        for (size_t i = 0; i < tp->n_string_data; i++) {
            t->strings[i].len = tp->string_data[i].len;
            t->strings[i].data = gr_arena_strndup(a, (const char *)tp->string_data[i].data,
                                                  tp->string_data[i].len);
            if (!t->strings[i].data) {
                gr_set_err(err, "%s: out of memory", what);
                return false;
            }
        }
    } else if (external) {
        ok = read_external(a, tp, dir, what, t->nbytes, &t->data, err);
    } else if (tp->has_raw_data) {
        if (tp->raw_data.len != t->nbytes) {
            gr_set_err(err, "%s: raw_data has %zu bytes, its shape and type (%s) need %zu", what,
                       tp->raw_data.len, gr_elem_type_name(t->elem_type), t->nbytes);
            return false;
        }
        t->data = gr_arena_alloc(a, t->nbytes, 1);
        if (!t->data) {
            gr_set_err(err, "%s: out of memory for %zu bytes", what, t->nbytes);
            return false;
        }
        if (t->nbytes) memcpy(t->data, tp->raw_data.data, t->nbytes);
    } else {
        switch (t->elem_type) {
        case GR_FLOAT:
        case GR_COMPLEX64:
            ok = copy_typed(a, tp->float_data, tp->n_float_data, 4, t->elem_type == GR_COMPLEX64 ? 2 : 1,
                            t, what, "float_data", err);
            break;
        case GR_DOUBLE:
        case GR_COMPLEX128:
            ok = copy_typed(a, tp->double_data, tp->n_double_data, 8,
                            t->elem_type == GR_COMPLEX128 ? 2 : 1, t, what, "double_data", err);
            break;
        case GR_INT64:
            ok = copy_typed(a, tp->int64_data, tp->n_int64_data, 8, 1, t, what, "int64_data", err);
            break;
        case GR_UINT32:
        case GR_UINT64:
            ok = copy_typed(a, tp->uint64_data, tp->n_uint64_data, 8, 1, t, what, "uint64_data", err);
            break;
        default: /* int32, int16, int8, uint16, uint8, bool, float16, bfloat16 */
            ok = copy_typed(a, tp->int32_data, tp->n_int32_data, 4, 1, t, what, "int32_data", err);
            break;
        }
    }
    if (!ok) return false;
    t->dl = (DLTensor){.data = t->data,
                       .device = {kDLCPU, 0},
                       .ndim = t->ndim,
                       .dtype = t->dtype,
                       .shape = t->shape,
                       .strides = NULL,
                       .byte_offset = 0};
    return true;
}

bool gr_type_from_proto(gr_arena *a, const Onnx__TypeProto *tp, const char *what, gr_type *out,
                        char **err)
{
    memset(out, 0, sizeof *out);
    out->ndim = -1;
    if (!tp) return true;
    const Onnx__TensorShapeProto *shape = NULL;
    const Onnx__TypeProto *inner = NULL;
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
        out->kind = GR_TYPE_TENSOR;
        out->elem_type = tp->tensor_type->elem_type;
        shape = tp->tensor_type->shape;
        break;
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
        out->kind = GR_TYPE_SPARSE_TENSOR;
        out->elem_type = tp->sparse_tensor_type->elem_type;
        shape = tp->sparse_tensor_type->shape;
        break;
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        out->kind = GR_TYPE_SEQUENCE;
        inner = tp->sequence_type->elem_type;
        break;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        out->kind = GR_TYPE_OPTIONAL;
        inner = tp->optional_type->elem_type;
        break;
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
        out->kind = GR_TYPE_MAP;
        out->key_type = tp->map_type->key_type;
        inner = tp->map_type->value_type;
        break;
    default:
        return true;
    }
    if (out->elem_type != GR_UNDEFINED && !known(out->elem_type)) {
        gr_set_err(err, "%s: unsupported element type %d", what, out->elem_type);
        return false;
    }
    gr_elem_type_dl(out->elem_type, &out->dtype);
    if (inner) {
        out->elem = gr_arena_alloc(a, 1, sizeof(gr_type));
        if (!out->elem) {
            gr_set_err(err, "%s: out of memory", what);
            return false;
        }
        return gr_type_from_proto(a, inner, what, out->elem, err);
    }
    if (!shape) return true;
    out->ndim = (int)shape->n_dim;
    out->shape = gr_arena_alloc(a, shape->n_dim ? shape->n_dim : 1, sizeof(int64_t));
    if (!out->shape) {
        gr_set_err(err, "%s: out of memory", what);
        return false;
    }
    for (size_t i = 0; i < shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = shape->dim[i];
        out->shape[i] = -1;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0) {
            out->shape[i] = d->dim_value;
            continue;
        }
        if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM || !d->dim_param ||
            !*d->dim_param)
            continue;
        if (!out->dim_params) {
            out->dim_params = gr_arena_alloc(a, shape->n_dim, sizeof(char *));
            if (!out->dim_params) {
                gr_set_err(err, "%s: out of memory", what);
                return false;
            }
        }
        out->dim_params[i] = gr_arena_strdup(a, d->dim_param);
    }
    return true;
}

/* A loaded tensor sits in its own arena, beside the arena's pointer, so
 * that gr_tensor_free finds the arena from the tensor. */
struct holder {
    gr_tensor t;
    gr_arena *a;
};

gr_tensor *gr_tensor_load(const char *path, char **err)
{
    size_t len = 0;
    unsigned char *buf = gr_read_file(path, &len, err);
    if (!buf) return NULL;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
    free(buf);
    if (!tp) {
        gr_set_err(err, "%s: cannot parse as an ONNX TensorProto (truncated, or not a tensor file)",
                   path);
        return NULL;
    }
    gr_arena *a = gr_arena_new();
    struct holder *h = a ? gr_arena_alloc(a, 1, sizeof *h) : NULL;
    char *dir = h ? gr_dirname(a, path) : NULL;
    bool ok = false;
    if (!dir) {
        gr_set_err(err, "%s: out of memory", path);
    } else {
        size_t wlen = strlen(path) + (tp->name ? strlen(tp->name) : 0) + 16;
        char *what = gr_arena_alloc(a, wlen, 1);
        if (what) {
            if (tp->name && *tp->name)
                snprintf(what, wlen, "%s: tensor '%s'", path, tp->name);
            else
                snprintf(what, wlen, "%s", path);
            ok = gr_tensor_from_proto(a, tp, dir, what, &h->t, err);
        } else {
            gr_set_err(err, "%s: out of memory", path);
        }
    }
    onnx__tensor_proto__free_unpacked(tp, NULL);
    if (!ok) {
        gr_arena_free(a);
        return NULL;
    }
    h->a = a;
    return &h->t;
}

void gr_tensor_free(gr_tensor *t)
{
    if (!t) return;
    struct holder *h = (struct holder *)t;
    gr_arena_free(h->a);
}
