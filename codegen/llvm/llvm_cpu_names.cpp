/*
 * codegen/llvm/llvm_cpu_names.cpp — whether LLVM knows a CPU name and
 * feature names for a triple, and the SIMD width a CPU with features has.
 *
 * Why C++ in a C11 project: LLVM takes an unknown -mcpu with a warning on
 * stderr and builds a subtarget without features; for x86-64 that subtarget
 * lacks 64-bit mode and code generation ends in report_fatal_error, which
 * aborts the host process. LLVM-C 19 offers no way to ask beforehand: its
 * target-machine calls take any CPU string, and the CPU and feature tables
 * (MCSubtargetInfo::isCPUStringValid, getAllProcessorFeatures) are C++
 * only; its fatal-error hook cannot return. This file is the one place
 * that reaches past LLVM-C, behind a C function (llvm_internal.h).
 */
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>

extern "C" int cg_llvm__mc_check(const char *triple, const char *cpu, const char *features,
                                 char **bad);
extern "C" int cg_llvm__vector_lanes(const char *triple, const char *cpu, const char *features);
extern "C" bool cg_llvm__has_bf16_dot(const char *triple, const char *cpu, const char *features);

static char *dup_string(const std::string &s) {
    char *r = static_cast<char *>(std::malloc(s.size() + 1));
    if (r) std::memcpy(r, s.c_str(), s.size() + 1);
    return r;
}

/* 0: known (or NULL) cpu and features; 1: unknown cpu; 2: unknown feature
 * or one without its '+'/'-' (*bad: that item, malloc'd); -1: no target
 * for the triple. */
extern "C" int cg_llvm__mc_check(const char *triple, const char *cpu, const char *features,
                                 char **bad) {
    *bad = nullptr;
    std::string err;
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, err);
    if (!target) return -1;
    std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(triple, "", ""));
    if (!sti) return -1;
    if (cpu && !sti->isCPUStringValid(cpu)) return 1;
    if (!features) return 0;
    llvm::ArrayRef<llvm::SubtargetFeatureKV> known = sti->getAllProcessorFeatures();
    std::string list(features);
    size_t at = 0;
    while (at <= list.size()) {
        size_t end = list.find(',', at);
        if (end == std::string::npos) end = list.size();
        std::string item = list.substr(at, end - at);
        at = end + 1;
        if (item.empty()) continue;
        bool found = false;
        if (item[0] == '+' || item[0] == '-')
            for (const llvm::SubtargetFeatureKV &kv : known)
                if (item.compare(1, std::string::npos, kv.Key) == 0) {
                    found = true;
                    break;
                }
        if (!found) {
            *bad = dup_string(item);
            return 2;
        }
    }
    return 0;
}

/* The subtarget of an x86 triple for cpu with features, or null for any
 * other triple (whose feature names are not x86's: asking an ARM
 * subtarget for "+avx" would only print LLVM's "not a recognized feature"
 * warning). cpu and features as the target machine gets them (features
 * applied after the CPU's own). */
static std::unique_ptr<llvm::MCSubtargetInfo> x86_subtarget(const char *triple, const char *cpu,
                                                            const char *features) {
    std::string t(triple ? triple : "");
    bool x86 = t.rfind("x86_64", 0) == 0 ||
               (t.size() > 3 && t[0] == 'i' && t.compare(2, 2, "86") == 0);
    if (!x86) return nullptr;
    std::string err;
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(t, err);
    if (!target) return nullptr;
    return std::unique_ptr<llvm::MCSubtargetInfo>(
        target->createMCSubtargetInfo(t, cpu ? cpu : "", features ? features : ""));
}

/* float32 lanes of the widest vector register cpu with features has: 16
 * with AVX-512F, 8 with AVX (its 256-bit registers hold 8 floats; AVX2
 * adds integer operations), else 4 (SSE, NEON, any other target). */
extern "C" int cg_llvm__vector_lanes(const char *triple, const char *cpu, const char *features) {
    std::unique_ptr<llvm::MCSubtargetInfo> sti = x86_subtarget(triple, cpu, features);
    if (!sti) return 4;
    if (sti->checkFeatures("+avx512f")) return 16;
    if (sti->checkFeatures("+avx")) return 8;
    return 4;
}

/* True when cpu with features (an x86 triple's) has AVX512-BF16's
 * VDPBF16PS on 512-bit registers. */
extern "C" bool cg_llvm__has_bf16_dot(const char *triple, const char *cpu, const char *features) {
    std::unique_ptr<llvm::MCSubtargetInfo> sti = x86_subtarget(triple, cpu, features);
    return sti && sti->checkFeatures("+avx512bf16,+avx512f");
}
