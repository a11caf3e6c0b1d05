/*
 * tuning_db/json_number.c — doubles that survive a trip through JSON.
 *
 * cJSON prints a number with 15 significant digits whenever that reads
 * back within about one ulp, so latencies and unix times (which need 16
 * or 17 digits) came back changed by an ulp or by microseconds after
 * export and import. %.17g always reads back to the same double.
 */
#include <math.h>
#include <stdio.h>

#include "tuning_db/tdb_internal.h"

cJSON *tdb__exact_number(double v) {
    if (!isfinite(v)) return cJSON_CreateNull(); /* JSON has no inf or nan */
    if (v == floor(v) && fabs(v) < 9007199254740992.0) return cJSON_CreateNumber(v);
    char text[32];
    snprintf(text, sizeof text, "%.17g", v);
    return cJSON_CreateRaw(text);
}
