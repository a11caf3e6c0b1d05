/*
 * loom/tuning_db.h — the tuning database: where the autotuner's measured
 * schedules live, and how a program later fetches and applies the best.
 *
 * One SQLite file (WAL mode, a busy timeout, schema version in
 * PRAGMA user_version with forward migrations) holds:
 *   workloads   — the ops registry's canonical workload key (or the key of
 *                 a registered builder, loom/ops.h), operator name,
 *                 parameters as JSON, a hash of the key, FLOP per call;
 *   targets     — a target key ("llvm -mcpu=znver5",
 *                 "cuda sm_90 NVIDIA H100 80GB HBM3") and device properties
 *                 as JSON;
 *   records     — workload, target, the transform-step log as JSON,
 *                 per-repeat latencies (seconds), their mean and median,
 *                 an error code and message, the Loom version and the
 *                 creation time;
 *   cost_models — one stored cost-model blob per target.
 * "Best" means the lowest MEDIAN latency everywhere (best-k, history,
 * list, prune, apply, GFLOP/s), the statistic the tuner (loom/autotune.h)
 * ranks its candidates by: one slow repeat on a noisy shared machine
 * moves the mean but not the median.
 * Records are target-aware: every query names one target key and sees
 * only that target's records, so one file can serve several machines.
 * Because the workload key is canonical (ops registry), records move
 * between machines with export/import.
 *
 * The design follows TVM auto_scheduler's record log (a workload key, a
 * target and a transform-step list per measured candidate) and
 * meta_schedule's database (workload table + tuning records with run
 * times), kept in SQLite rather than JSON files so that several tuners can
 * commit to one file at once and a crash loses nothing committed.
 *
 * Errors: functions taking a tdb_db return -1 (or NULL) and leave the
 * reason in tdb_errmsg(db); the message names the file, the object and
 * the rule broken. Nothing aborts on bad input or a bad file.
 * Threads: one tdb_db is used by one thread at a time; several processes
 * (or several tdb_db handles) may use one file at once.
 */
#ifndef LOOM_TUNING_DB_H
#define LOOM_TUNING_DB_H

#include "loom/api.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "loom/codegen.h"
#include "loom/runtime.h"
#include "loom/schedule.h"
#include "loom/version.h"

#ifdef __cplusplus
extern "C" {
#endif
LOOM_API_BEGIN

/* The schema version this library writes (PRAGMA user_version). Files of
 * an older version are migrated forward on open; newer ones are refused. */
#define TDB_SCHEMA_VERSION 5

/* ---- step logs as JSON ---- */

/* The log as a JSON array, one object per step, fields named per kind.
 * This is the step log's one text: the database stores it, measurement
 * workers receive it, and the search deduplicates programs by its hash
 * (tune_steps_key is the same text in a ctx arena). Compact (no white
 * space between tokens), fields in the order below, so equal logs are
 * equal strings:
 *   {"kind":"split","stage":2,"iter":0,"factor":8}      (or "nparts":8)
 *   {"kind":"fuse","stage":2,"iters":[0,1]}             (reorder alike)
 *   {"kind":"annotate","stage":2,"iter":1,"ann":"vectorize"}
 *        (ann: vectorize|unroll|parallel|bind; bind adds "thread":"threadIdx.x")
 *   {"kind":"pragma","stage":2,"iter":0,"name":"auto_unroll_max_step","value":64}
 *   {"kind":"compute_at","stage":1,"target_stage":2,"iter":0}
 *   {"kind":"compute_inline","stage":1}                 (compute_root alike)
 *   {"kind":"cache_read","stage":0,"scope":"shared","readers":[3]}
 *   {"kind":"cache_write","stage":2,"scope":"local"}
 *   {"kind":"rfactor","stage":2,"iter":2,"factor_axis":0}
 *   {"kind":"storage_align","stage":1,"iter":0,"factor":16,"offset":4}
 *   {"kind":"pack","stage":1,"iter":1,"factor":16}
 *   {"kind":"tensorize","stage":2,"iter":3,"intrin":"wmma.mma"}
 *   {"kind":"double_buffer","stage":1}           ("buffers":N when N > 2)
 *   {"kind":"swizzle","stage":1}                ("transposed":1 when transposed)
 * Stages and iterators are indices, as in sch_step. Returns a malloc'd
 * string the caller frees, or NULL when out of memory or a step's kind or
 * annotation is out of range. */
char *tdb_steps_to_json(int nsteps, const sch_step *steps);
/* The log of s as JSON (tdb_steps_to_json of its steps). */
char *tdb_schedule_to_json(const sch_schedule *s);
/* Parses a log written by tdb_steps_to_json. On success returns 0 and sets
 * *steps to nsteps steps allocated in ctx's arena (their arrays and
 * strings too); to_json(from_json(text)) equals text for any text
 * to_json wrote. Fails with -1 and a message in ctx (te_ctx_errmsg) when
 * the text is not JSON, is not an array of objects, names an unknown step
 * kind or annotation, misses a field, has an unknown field, or holds a
 * number that is not an integer of the field's range (the message says
 * which step and which field). Indices are checked against a schedule
 * only by sch_replay, which names the failing step. */
int tdb_steps_from_json(te_ctx *ctx, const char *json, int *nsteps, sch_step **steps);

/* ---- opening ---- */

typedef struct tdb_db tdb_db;

typedef struct {
    bool readonly;       /* no create, no migration, no writes */
    int busy_timeout_ms; /* wait this long for another writer's lock; 0: 10000 */
} tdb_open_options;

/* Opens (creating when missing, unless readonly) the database at path,
 * switches it to WAL mode and migrates an older schema forward (version
 * 3 added the records' median, computed for old records from their
 * stored latencies). opts may
 * be NULL. Returns NULL and sets *err (malloc'd, the caller frees; err may
 * be NULL) when the path cannot be opened or created (or, read-only, does
 * not exist), the file is not a SQLite database or is corrupted, its
 * schema version is newer than TDB_SCHEMA_VERSION ("... was written by a
 * newer Loom: schema version 7, this build ... reads up to version 3"), or
 * (read-only) older than version 2, or negative ("has schema version -3:
 * not a Loom database, or a corrupted one"), or (read-write) the file exists but this
 * process may not write it ("tuning db 'x.db' is read-only (file mode
 * 0444): cannot write records; ..."), so that a tuner learns it before
 * measuring rather than at its first commit. A version-2 file opened read-only is
 * read as it is, the medians computed on the fly. Several processes may open and create one file at
 * once: a lock held by another is waited for up to the busy timeout. */
tdb_db *tdb_open(const char *path, const tdb_open_options *opts, char **err);
/* Closes db (NULL is a no-op). Committed records are already on disk. */
void tdb_close(tdb_db *db);
/* The last error on db ("" when none); owned by db, valid until the next
 * call on db. */
const char *tdb_errmsg(const tdb_db *db);
/* The file's schema version (after migration). */
int tdb_schema_version(tdb_db *db);

/* ---- committing ---- */

/* Adds a workload (or returns the id of the one with this key; then op,
 * params and flops are left as stored). key: the ops registry's canonical
 * workload key; op: operator name; params_json: a JSON object of its
 * parameters (NULL: "{}"); flops: floating-point operations per call
 * (FLOP, 0 when unknown), used for GFLOP/s. Returns the row id (> 0) or
 * -1. */
int64_t tdb_commit_workload(tdb_db *db, const char *key, const char *op, const char *params_json,
                            double flops);
/* Adds a workload from its key alone, the ops registry (loom/ops.h)
 * giving the operator, parameters and FLOP count; returns the id of the
 * stored one when present. -1 when the registry cannot build the key or
 * writes it differently (a key must be canonical: ops_from_key(k)->key).
 * A key with a registered builder (ops_register_builder) is stored as
 * written: operator = the text before '(' (the whole key without one),
 * parameters = the NAME=VALUE items between the parentheses as a JSON
 * object ("{}" when the text is not of that form), FLOP = the builder's;
 * -1 when the builder fails. */
int64_t tdb_commit_workload_key(tdb_db *db, const char *key);
/* Adds a target (or returns the id of the one with this key, updating its
 * properties when props_json is not NULL). props_json: a JSON object of
 * device properties (NULL: "{}"). */
int64_t tdb_commit_target(tdb_db *db, const char *key, const char *props_json);

/* One measured candidate, as the tuner hands it over. */
typedef struct {
    const char *workload_key; /* must be committed, or known to the ops registry
                                 or a registered builder */
    const char *target;       /* target key; added when new */
    /* The log: steps_json (tdb_steps_to_json format) or, when NULL,
     * nsteps/steps. */
    const char *steps_json;
    int nsteps;
    const sch_step *steps;
    int nlatencies;           /* repeats, >= 0 */
    const double *latencies;  /* seconds, one per repeat, each >= 0 */
    int error_code;           /* 0: measured fine; else the runner's code */
    const char *error_msg;    /* NULL: "" */
    double created;           /* unix time in seconds; 0: now */
    const char *loom_version; /* NULL: LOOM_VERSION_STRING */
    /* Timed with its operands evicted from the caches before every call
     * (tune_measure_options.cache_flush); false: warm, back-to-back calls.
     * The two do not compare, so a target's records in one file are all
     * of one kind: a record of the other kind is refused (see
     * tdb_target_timing). */
    bool cold;
} tdb_record_in;

/* Commits one record in its own transaction (durable on return: a
 * process killed afterwards keeps it). The log is parsed and, when the
 * ops registry or a registered builder can rebuild the workload, replayed
 * on it: a log naming a stage or axis the workload lacks is refused with
 * sch_replay's message.
 * A record with error_code 0 needs at least one latency. A record timed
 * cold for a target whose records in the file were timed warm, or the
 * reverse, is refused ("commit_record: tuning db 'F' holds records of
 * target 'K' timed warm (...); this one was timed cold ..."). Returns the
 * record id or -1. */
int64_t tdb_commit_record(tdb_db *db, const tdb_record_in *rec);
/* Commits n records in one transaction (all or none). Returns 0 or -1;
 * ids (may be NULL) receives the record ids. */
int tdb_commit_records(tdb_db *db, int n, const tdb_record_in *recs, int64_t *ids);

/* ---- querying ---- */

/* A stored record, every string malloc'd and owned by the struct. */
typedef struct {
    int64_t id;
    char *workload_key;
    char *op;
    char *target;
    char *steps_json;
    int nlatencies;
    double *latencies;  /* seconds */
    double mean;        /* seconds; NaN for an error record without latencies */
    double median;      /* seconds: the middle latency, or the mean of the two
                           middle ones (as the tuner computes it); NaN when
                           there are no latencies. */
    double retimed_latency; /* seconds: the fastest latency of the latest
                               re-timing (tdb_commit_retime); NaN when
                               never re-timed. Re-timed records rank
                               first, by it (tdb_best). */
    int error_code;
    char *error_msg;
    char *loom_version;
    double created;     /* unix seconds */
    double flops;       /* the workload's FLOP per call (0: unknown) */
    char *params_json;  /* the workload's parameters (JSON object) */
    char *target_props_json; /* the target's device properties (JSON object) */
    bool cold;          /* timed with its operands evicted from the caches */
} tdb_record;

/* How the records of `target` (a target key) in the file were timed
 * (tdb_record_in.cold): TDB_TIMING_NONE when it has none, else WARM or
 * COLD (one file never holds both for one target). -1 on error, the
 * message in tdb_errmsg ("target_timing: no target key" for NULL). */
enum { TDB_TIMING_NONE = 0, TDB_TIMING_WARM = 1, TDB_TIMING_COLD = 2 };
int tdb_target_timing(tdb_db *db, const char *target);

/* Frees the n records of an array a query returned, and the array. */
void tdb_records_free(tdb_record *recs, int n);
/* GFLOP/s of a record: flops / median / 1e9; 0 when either is unknown. */
double tdb_record_gflops(const tdb_record *r);

/* The k best valid records (error code 0) of the workload on the target:
 * re-timed records first, by their latest re-timed latency, then the others
 * by median (ties by id). Re-timed ones lead because a re-timing compares
 * the best programs under one load, while the medians of the rest were
 * taken under whatever load each met; the tuner re-times its best few
 * (and the default schedule) at the end of every run. Returns how many
 * (0..k) and sets *out to a malloc'd array (NULL when 0), or -1. */
int tdb_best(tdb_db *db, const char *workload_key, const char *target, int k, tdb_record **out);
/* Whether the workload has a record (valid or not) of the program whose
 * step log is steps_json on the target: 1 yes, 0 no, -1 on error (a log
 * that does not parse, say, with the message in tdb_errmsg). The log is
 * compared in canonical form (tdb_steps_to_json of its parsed steps), as
 * records store it. A tuning run skips a program it finds here; loomrun
 * asks it of a kernel's current default schedule, to tell a record tuned
 * against an older default (one a later Loom changed) from one that beat
 * the current default. */
int tdb_has_steps(tdb_db *db, const char *workload_key, const char *target,
                  const char *steps_json);
/* Re-timing: latencies (n > 0, seconds) of record `record_id`'s program
 * measured again, beside the other best programs at the same time, so
 * that programs first timed under different loads of a shared machine are
 * ranked on equal terms (the tuner re-times its best few at the end of a
 * run). The record itself is unchanged; it now ranks among the re-timed
 * records by the fastest latency of its latest re-timing (tdb_best): load
 * from other jobs only slows a program, so the fastest round is the least
 * disturbed. Only valid records (error code 0) can be re-timed. Export
 * writes a record's retimed_latency; import ignores it (it ranks programs
 * against others timed beside them on one machine). Returns 0 or -1 (no
 * such record, an error record, bad latencies, read-only db). */
int tdb_commit_retime(tdb_db *db, int64_t record_id, int n, const double *latencies);
/* Record by id: 1 and *out filled (free its fields with
 * tdb_record_clear), 0 when there is none, -1 on error. */
int tdb_get_record(tdb_db *db, int64_t id, tdb_record *out);
/* Frees the fields of one record (not the struct). */
void tdb_record_clear(tdb_record *r);

/* One trial of the tuning history of a (workload, target). */
typedef struct {
    int trial;         /* 1-based, in commit order */
    int64_t record_id;
    double latency;    /* this trial's median, seconds; NaN for an error */
    double best;       /* best median up to and including this trial; NaN before the first valid */
} tdb_history_point;
/* Best-so-far against trial number. Returns the count and a malloc'd
 * array in *out, or -1. */
int tdb_history(tdb_db *db, const char *workload_key, const char *target,
                tdb_history_point **out);
/* Trials to reach a fraction of the best (the tuning-speed figure Ansor
 * and TVM report as "trials to reach x% of the final performance"): the
 * trial number (h[i].trial) of the first point whose throughput is at
 * least fraction x the best of all n points, i.e. whose latency <=
 * best / fraction (0.95: "95% of best at trial n"). Only the points given
 * count: pass a whole history, or one run's part of it. Returns 0 when no
 * point is valid or fraction is not in (0, 1]. Pure; h is not kept. */
int tdb_history_reach(const tdb_history_point *h, int n, double fraction);

/* Per (workload, target): record counts and the best latency. */
typedef struct {
    char *workload_key;
    char *op;
    char *target;
    int nrecords;
    int nvalid;
    double best;   /* seconds: the latency tdb_best ranks its first record by
                      (the lowest re-timed latency, else the lowest median);
                      NaN when no valid record */
    double flops;  /* FLOP per call (0: unknown) */
} tdb_summary;
/* Every (workload, target) with records, ordered by workload key then
 * target; target may be NULL for all targets. Returns the count and a
 * malloc'd array in *out, or -1. */
int tdb_list(tdb_db *db, const char *target, tdb_summary **out);
void tdb_summaries_free(tdb_summary *s, int n);

typedef struct {
    int schema_version;
    int64_t workloads, targets, records, error_records, cost_models;
    int64_t file_bytes; /* page_count * page_size */
} tdb_stats;
int tdb_get_stats(tdb_db *db, tdb_stats *out);

/* Checks the file's structure (SQLite's PRAGMA quick_check: b-trees,
 * pages, records; O(file size)). 0 when sound, -1 with the first
 * problems in tdb_errmsg. */
int tdb_check(tdb_db *db);

/* Keeps the `keep` best (lowest median) valid records per (workload, target) and deletes
 * every other record (error records included). Returns how many were
 * deleted, or -1. */
int64_t tdb_prune(tdb_db *db, int keep);

/* ---- export / import ---- */

/* Writes every record as one JSON object per line:
 * {"workload":{"key","op","params","flops"},"target":{"key","props"},
 *  "steps":[...],"latencies":[...],"mean","median","error_code","error_msg",
 *  "loom_version","created"}, and "cold":true for a record timed cold
 *  (tdb_record_in.cold). Returns the number of records or -1. */
int64_t tdb_export_jsonl(tdb_db *db, FILE *out);
/* What an imported record may hold. A file from elsewhere is not
 * trusted to be sane: one record of an impossible latency would rank best
 * (and be applied) until a re-timing, so import refuses, per field:
 *  - error_code outside 0..TDB_ERROR_CODE_MAX (0: measured fine, 1..8:
 *    the runner's codes, loom/autotune.h tune_error_code);
 *  - a latency that is not finite, below TDB_IMPORT_MIN_LATENCY_S (a few
 *    clock cycles: less than any call and timer read cost) or above
 *    TDB_IMPORT_MAX_LATENCY_S (longer than any tuner waits for a run);
 *  - a latency at which the workload's FLOP count (as stored, or the ops
 *    registry's when the key is one it builds) would run faster than
 *    TDB_IMPORT_MAX_GFLOPS: 1 PFLOP/s, above the dense FP16 tensor-core
 *    peak of an H100 (about 0.99 PFLOP/s) and over ten times the FP32
 *    peak of any GPU (an H100's: 67 TFLOP/s) Loom's FP32/FP64 kernels
 *    run on;
 *  - a pragma auto_unroll_max_step outside 0..TDB_IMPORT_MAX_UNROLL_STEPS
 *    (the unroll pass copies at most 4,096 statements a loop, and the
 *    tuner writes at most 1,024; a larger limit only asks the compiler to
 *    unroll what the pass refused), an unroll_explicit other than 0 or 1,
 *    or another pragma name.
 * Split, pack and storage_align factors keep the step-log syntax's range
 * (positive integers up to 2^53): the replay clamps a factor above the
 * loop's extent to the extent, so a large one means "the whole loop". */
#define TDB_ERROR_CODE_MAX 8
#define TDB_IMPORT_MIN_LATENCY_S 1e-9
#define TDB_IMPORT_MAX_LATENCY_S 3600.0
#define TDB_IMPORT_MAX_GFLOPS 1e6
#define TDB_IMPORT_MAX_UNROLL_STEPS 4096

/* Reads JSON lines written by tdb_export_jsonl into db, in one
 * transaction: on any bad line (malformed, or holding a value outside
 * the bounds above) nothing is imported and the error gives the count of
 * bad lines and lists the first 10 by number ("import: 12 bad lines,
 * nothing imported (the first 10 listed):\n  line 3: ...").
 * A record already in the database (same workload, target, log,
 * latencies, error and time) is skipped. Blank lines are ignored.
 * Returns 0 and the counts in *imported / *skipped (either may be NULL),
 * or -1. */
int tdb_import_jsonl(tdb_db *db, FILE *in, int64_t *imported, int64_t *skipped);

typedef struct {
    /* Not NULL: every bad line is written here, in order, one
     * "line N: reason\n" each (the error message lists only the first
     * 10). The caller opens and closes it. */
    FILE *errors;
    /* Set on return: how many lines were bad (0 when none). */
    int bad_lines;
} tdb_import_options;
/* tdb_import_jsonl with options (opts may be NULL; it is not const for
 * bad_lines). A write error on opts->errors fails the import ("cannot
 * write the error list"). */
int tdb_import_jsonl_with(tdb_db *db, FILE *in, tdb_import_options *opts, int64_t *imported,
                          int64_t *skipped);
/* The JSON text of a record, as one export line (malloc'd), or NULL. */
char *tdb_record_to_json(tdb_db *db, const tdb_record *r);

/* ---- cost models ---- */

/* Stores (replacing) the cost-model blob of a target, with a format name
 * ("xgboost-ubj", ...). Returns 0 or -1. */
int tdb_put_cost_model(tdb_db *db, const char *target, const char *format, const void *blob,
                       size_t size);
/* The blob of a target: 1 and *blob (malloc'd), *size, *format (malloc'd,
 * may be NULL) set; 0 when none is stored; -1 on error. */
int tdb_get_cost_model(tdb_db *db, const char *target, void **blob, size_t *size, char **format);

/* One stored cost model, as tdb_list_cost_models describes it. */
typedef struct {
    char *target; /* target key (malloc'd) */
    char *format; /* format name given to tdb_put_cost_model (malloc'd) */
    int64_t bytes;  /* blob size */
    double updated; /* seconds since the Unix epoch */
} tdb_cost_model_entry;
/* Every stored cost model, ordered by target key: the count and a
 * malloc'd array in *out (NULL when none), or -1. Free with
 * tdb_cost_models_free. */
int tdb_list_cost_models(tdb_db *db, tdb_cost_model_entry **out);
void tdb_cost_models_free(tdb_cost_model_entry *e, int n);

/* ---- targets and applying ---- */

/* The key of the host CPU target, "llvm -mcpu=NAME" (malloc'd; NULL when
 * out of memory): cg_target_str of the host's CPU ("generic" when LLVM
 * names none). */
char *tdb_host_target(void);
/* A CPU record key's thread count follows its machine part as
 * TDB_NUM_CORES " N" ("llvm -mcpu=znver4 -num-cores 2": programs timed on
 * 2 threads; tune_threads_key writes it). The length of key's machine
 * part (key non-NULL): all of it when it has no thread count. */
#define TDB_NUM_CORES " -num-cores"
size_t tdb_key_machine_len(const char *key);
/* The key of GPU `device` (0-based): "cuda sm_XY NAME", e.g. "cuda sm_90
 * NVIDIA H100 80GB HBM3" (compute capability and the driver's device
 * name), malloc'd; the key `autotune --target cuda` stores its records
 * under; cg_target_str of a cg_target with its arch and device. NULL
 * with rt_last_error() when no driver or no such device. */
char *tdb_cuda_target(int device);

struct ops_workload; /* loom/ops.h */

/* What tdb_apply_best did. */
typedef struct {
    bool fallback;        /* true: no record applied; the operator's default
                             schedule (a registered builder's workload: its
                             plain schedule, sch_create) was used */
    int64_t record_id;    /* the record applied, or -1 */
    double latency;       /* its median latency, seconds (NaN on fallback) */
    char message[512];    /* which record, or why the fallback */
    struct ops_workload *workload; /* the rebuilt ops workload (in ctx), for
                                      ops_check_module; NULL when it could not
                                      be built or the key is a registered
                                      builder's */
    /* The module's arguments, inputs then outputs (the last nouts; in
     * ctx; for either kind of workload), and which are constant
     * (ops_built.constant_args); 0 / NULL when the workload could not be
     * built. */
    int nargs, nouts;
    te_tensor **args;
    uint64_t constant_args;
} tdb_apply_info;

/* For a program that wants the tuned kernel: rebuilds the workload from
 * its key in ctx — by the builder registered for it (ops_register_builder
 * / tune_register_builder, loom/ops.h: the registry lives in the ops
 * library, below both this database and the tuner, so a user's own
 * operator is rebuilt here the way the tuner built it), else by the ops
 * registry (ops_from_key) — replays the best valid record's log of
 * (workload_key, target), lowers and builds it for the target, and
 * returns the module (function "default"; arguments: info->args, inputs
 * then outputs). When no record is valid — none stored, or every stored
 * log fails to replay or build — it builds the operator's default
 * schedule instead (a registered builder's workload: its plain schedule)
 * and says so in info->message (info may be NULL). target: a key as
 * stored ("llvm -mcpu=znver5"; "llvm -mcpu=znver5 -num-cores 4", records
 * of programs timed on 4 threads (tune_threads_key), built for the key
 * before " -num-cores"; or a GPU's tdb_cuda_target key, built for its
 * architecture: cg_target reads "cuda sm_XY NAME" as "cuda -arch=sm_XY"
 * labelled NAME). Returns NULL with the reason in tdb_errmsg(db)
 * when nothing builds, when the workload does not rebuild (the builder's
 * or the registry's message), or when no builder knows the key ("workload
 * 'K' has no builder: register one with tune_register_builder (or load
 * its plugin ...) before applying"). The module is the caller's
 * (rt_module_free). */
rt_module *tdb_apply_best(tdb_db *db, te_ctx *ctx, const char *workload_key, const char *target,
                          tdb_apply_info *info);
/* One record built without the database (a caller that queried under its
 * own lock and compiles outside it): r's log (r->steps_json) parsed,
 * replayed on the workload's outputs outs[0..nouts) (built in ctx from
 * r's workload key, e.g. by ops_build_key), compiled by cg_build for
 * target (a build target: "llvm", "llvm -mcpu=...") with opts (may be
 * NULL) over args[0..nargs). Returns the module (the caller's,
 * rt_module_free) or NULL with the error in ctx: an argument missing, a
 * log that does not parse or replay (sch_replay names the step), or
 * cg_build's error. */
rt_module *tdb_build_record(te_ctx *ctx, int nouts, te_tensor *const *outs, int nargs,
                            te_tensor *const *args, const tdb_record *r, const char *target,
                            const cg_build_options *opts);
/* tdb_apply_best building with opts (may be NULL): e.g. constant_args =
 * info->workload->constant_args (cg_build_options; the module is then
 * called through rt_prepare / rt_prepared_call). Same errors, and those
 * of cg_build for the options. */
rt_module *tdb_apply_best_with(tdb_db *db, te_ctx *ctx, const char *workload_key,
                               const char *target, const cg_build_options *opts,
                               tdb_apply_info *info);

LOOM_API_END
#ifdef __cplusplus
}
#endif
#endif /* LOOM_TUNING_DB_H */
