/*
 * runtime/cache_flush.c — evicting a tensor's bytes from the CPU caches,
 * so that a timed call reads its operands from memory, as a kernel does
 * whose inputs were not just written (weights read once per inference).
 * TVM's time_evaluator takes the same step before each call when asked
 * (`enable_cpu_cache_flush`, its `cache_flush_cpu_non_first_arg`). Inside
 * ResNet-50 the activations do arrive warm, and tuning with it ranked
 * worse programs there (bench/RESULTS.md, session 50).
 */
#include "runtime/rt_internal.h"

/* Bytes per cache line: 64 on the x86 and Arm cores Loom targets; a
 * larger line is flushed by every 64th byte all the same. */
#define RT_LINE 64

void rt_cache_flush(const void *data, size_t bytes) {
    if (!data || !bytes) return;
    const char *p = (const char *)((uintptr_t)data & ~(uintptr_t)(RT_LINE - 1));
    const char *end = (const char *)data + bytes;
#if defined(__x86_64__) || defined(__i386__)
    for (; p < end; p += RT_LINE) __builtin_ia32_clflush(p);
    /* clflush is ordered only by fences: the timed call must not start
     * while the lines are still being written back. */
    __builtin_ia32_mfence();
#elif defined(__aarch64__)
    for (; p < end; p += RT_LINE) __asm__ volatile("dc civac, %0" ::"r"(p) : "memory");
    __asm__ volatile("dsb ish" ::: "memory");
#else
    /* No line-flush instruction known here: evict by writing a buffer
     * larger than any last-level cache (rt_timer_config.flush_cache). */
    (void)p, (void)end;
    rt__flush_all_caches();
#endif
}

void rt_tensor_cache_flush(const DLTensor *t) {
    /* A device pointer is no host address to flush. */
    if (!t || !t->data || (t->device.device_type != kDLCPU &&
                           t->device.device_type != kDLCUDAHost))
        return;
    rt_cache_flush((const char *)t->data + t->byte_offset, rt_tensor_nbytes(t));
}
