/*
 * loom/api.h — what libloom.so exports. The library is compiled with
 * -fvisibility=hidden, so nothing is exported unless declared between
 * LOOM_API_BEGIN and LOOM_API_END: every public header wraps its
 * declarations in them, and a module's internal header (NAME_internal.h)
 * does not. The symbols a program can bind to are therefore exactly those
 * the include/loom/ headers document (tests/check_exports.sh checks it).
 *
 * One pair per header rather than a macro on each of several hundred
 * declarations: a declaration added to a public header is exported without
 * anyone remembering to mark it, and an internal one never is.
 */
#ifndef LOOM_API_H
#define LOOM_API_H

#if defined(__GNUC__)
#define LOOM_API_BEGIN _Pragma("GCC visibility push(default)")
#define LOOM_API_END _Pragma("GCC visibility pop")
#else
#define LOOM_API_BEGIN
#define LOOM_API_END
#endif

#endif /* LOOM_API_H */
