/* tools/loomrun/npy.h — NumPy .npy files (format version 1.0-3.0,
 * https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
 * little-endian, C order, the dtypes Loom's tensors have. */
#ifndef LOOMRUN_NPY_H
#define LOOMRUN_NPY_H

#include <dlpack/dlpack.h>
#include <stdbool.h>

/* Reads an .npy file into a malloc'd compact CPU tensor (free with
 * rt_tensor_free). NULL and why (size bytes) on a missing file, a file
 * that is not .npy, Fortran order, a big-endian or unsupported dtype, or
 * data shorter than the shape. */
DLTensor *npy_read(const char *path, char *why, size_t size);
/* Writes t (compact, CPU) as .npy; false and why on an I/O error or a
 * dtype .npy cannot name. */
bool npy_write(const char *path, const DLTensor *t, char *why, size_t size);

#endif
