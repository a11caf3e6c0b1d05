/* tools/loomrun/npy.c — reading and writing .npy files (see npy.h). The
 * header is a Python dict literal; only the three keys NumPy writes are
 * read, with the values NumPy writes for them. */
#include "tools/loomrun/npy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/runtime.h"

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* '<f4' and friends; '|b1' (bool) and '|u1'/'|i1' have no byte order. */
static bool descr_dtype(const char *d, DLDataType *out)
{
    if ((d[0] != '<' && d[0] != '|') || !d[1] || !d[2]) return false;
    int bytes = atoi(d + 2);
    if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) return false;
    if (d[0] == '|' && bytes != 1) return false;
    switch (d[1]) {
    case 'f': *out = (DLDataType){kDLFloat, (uint8_t)(bytes * 8), 1}; return bytes >= 4;
    case 'i': *out = (DLDataType){kDLInt, (uint8_t)(bytes * 8), 1}; return true;
    case 'u': *out = (DLDataType){kDLUInt, (uint8_t)(bytes * 8), 1}; return true;
    case 'b': *out = (DLDataType){kDLUInt, 1, 1}; return bytes == 1;
    default: return false;
    }
}

static bool dtype_descr(DLDataType t, char *out, size_t size)
{
    if (t.lanes != 1) return false;
    if (t.code == kDLUInt && t.bits == 1) return snprintf(out, size, "|b1") > 0;
    int bytes = t.bits / 8;
    char c = t.code == kDLFloat ? 'f' : t.code == kDLInt ? 'i' : t.code == kDLUInt ? 'u' : 0;
    if (!c || (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8)) return false;
    return snprintf(out, size, "%c%c%d", bytes == 1 ? '|' : '<', c, bytes) > 0;
}

DLTensor *npy_read(const char *path, char *why, size_t size)
{
    FILE *f = fopen(path, "rb");
    DLTensor *t = NULL;
    char *hdr = NULL;
    if (!f) {
        snprintf(why, size, "%s: %s", path, strerror(errno));
        return NULL;
    }
    unsigned char pre[10];
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, magic, 6) != 0) {
        snprintf(why, size, "%s: not an .npy file (no \\x93NUMPY magic)", path);
        goto done;
    }
    uint32_t hlen;
    if (pre[6] == 1) {
        if (fread(pre + 8, 1, 2, f) != 2) goto short_file;
        hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        unsigned char l[4];
        if (fread(l, 1, 4, f) != 4) goto short_file;
        hlen = (uint32_t)l[0] | (uint32_t)l[1] << 8 | (uint32_t)l[2] << 16 | (uint32_t)l[3] << 24;
        if (hlen > 1u << 20) {
            snprintf(why, size, "%s: header of %" PRIu32 " bytes is too long", path, hlen);
            goto done;
        }
    } else {
        snprintf(why, size, "%s: .npy format version %d is not known", path, pre[6]);
        goto done;
    }
    hdr = malloc(hlen + 1);
    if (!hdr || fread(hdr, 1, hlen, f) != hlen) goto short_file;
    hdr[hlen] = 0;
    const char *d = strstr(hdr, "'descr':"), *fo = strstr(hdr, "'fortran_order':"),
               *sh = strstr(hdr, "'shape':");
    if (!d || !fo || !sh) {
        snprintf(why, size, "%s: header lacks descr, fortran_order or shape", path);
        goto done;
    }
    char descr[16] = "";
    if (sscanf(d + 8, " '%15[^']'", descr) != 1) {
        snprintf(why, size, "%s: cannot read the dtype", path);
        goto done;
    }
    DLDataType dt;
    if (!descr_dtype(descr, &dt)) {
        snprintf(why, size, "%s: dtype '%s' is not supported (little-endian bool, int, uint and "
                            "float32/64)",
                 path, descr);
        goto done;
    }
    if (strncmp(fo + 16, " False", 6) != 0) {
        snprintf(why, size, "%s: Fortran-order arrays are not supported (save with C order)",
                 path);
        goto done;
    }
    const char *p = strchr(sh, '(');
    int64_t shape[32];
    int ndim = 0;
    if (!p) goto bad_shape;
    for (p++;;) {
        while (*p == ' ' || *p == ',') p++;
        if (*p == ')') break;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || ndim == 32) goto bad_shape;
        shape[ndim++] = v;
        p = end;
    }
    t = rt_tensor_alloc(dt, ndim, shape);
    if (!t) {
        snprintf(why, size, "%s: out of memory", path);
        goto done;
    }
    size_t n = rt_tensor_nbytes(t);
    if (fread(t->data, 1, n, f) != n) {
        rt_tensor_free(t);
        t = NULL;
        goto short_file;
    }
    goto done;
bad_shape:
    snprintf(why, size, "%s: cannot read the shape", path);
    goto done;
short_file:
    snprintf(why, size, "%s: the file ends early", path);
done:
    free(hdr);
    fclose(f);
    return t;
}

bool npy_write(const char *path, const DLTensor *t, char *why, size_t size)
{
    char descr[8], dict[512];
    if (!dtype_descr(t->dtype, descr, sizeof descr)) {
        snprintf(why, size, "%s: the output's dtype has no .npy form", path);
        return false;
    }
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                       descr);
    for (int d = 0; d < t->ndim; d++)
        len += snprintf(dict + len, sizeof dict - (size_t)len, "%" PRId64 "%s", t->shape[d],
                        t->ndim == 1 ? "," : d + 1 < t->ndim ? ", " : "");
    len += snprintf(dict + len, sizeof dict - (size_t)len, "), }");
    /* The header (magic, version, length, dict, spaces, newline) is padded
     * to a multiple of 64 bytes, as NumPy writes it. */
    int total = 10 + len + 1;
    int pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(why, size, "%s: %s", path, strerror(errno));
        return false;
    }
    uint16_t hl = (uint16_t)(len + pad + 1);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 0xff),
                             (unsigned char)(hl >> 8)};
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)len, f) == (size_t)len;
    for (int i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    size_t n = rt_tensor_nbytes(t);
    ok = ok && fwrite(t->data, 1, n, f) == n;
    ok = (fclose(f) == 0) && ok;
    if (!ok) snprintf(why, size, "%s: write failed: %s", path, strerror(errno));
    return ok;
}
