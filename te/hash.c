/*
 * te/hash.c — the one byte-string hash of the library: 64-bit FNV-1a
 * (Fowler, Noll, Vo). Its values are stored on disk (the tuning
 * database's workload-key hashes, the cost-model blob's checksum), so
 * they must never change.
 */
#include "te/te_internal.h"

uint64_t te_hash_bytes(const void *data, size_t n) {
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull; /* the FNV offset basis */
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull; /* the FNV prime */
    return h;
}

uint64_t te_hash_str(const char *s) { return te_hash_bytes(s, strlen(s)); }
