/*
 * codegen/llvm/llvm_cpu_names.cpp — whether LLVM knows a CPU name and
 * feature names for a triple.
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
