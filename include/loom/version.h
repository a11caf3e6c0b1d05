/* loom/version.h — the Loom release this library was built from. It is
 * stored with every tuning record (loom/tuning_db.h), so a record can be
 * traced to the compiler that measured it. Keep in step with
 * project(loom VERSION ...) in CMakeLists.txt. */
#ifndef LOOM_VERSION_H
#define LOOM_VERSION_H
#define LOOM_VERSION_MAJOR 0
#define LOOM_VERSION_MINOR 1
#define LOOM_VERSION_PATCH 0
#define LOOM_VERSION_STRING "0.1.0"
#endif
