/* sched/core/duration.h: the one duration grammar of gangsched (configuration and annotations).
 *
 * Owns: reading and writing durations in milliseconds. Pure functions over strings; every
 * reader of a duration (config/ for the operator's YAML, sched/core/annot.c for PodGroup
 * annotations) goes through dur_parse, so a value means the same wherever it is written.
 * Must not touch: anything but its arguments.
 *
 * Grammar (docs/config.md, "Durations"), close to Go's time.ParseDuration, which Kubernetes
 * users know from metav1.Duration (Kueue, Volcano, kube-scheduler configuration):
 *
 *   duration  = "0" | component+
 *   component = digits unit             digits: [0-9]+, no sign, no fraction
 *   unit      = "d" | "h" | "m" | "s" | "ms"   (d = 24h, an addition to Go's units)
 *
 * Each unit at most once, largest first ("1h30m", not "30m1h"), at most DUR_MAX_MS (3650d).
 * A bare number other than "0" is rejected, as by Go: "90" could mean seconds or minutes, so the
 * error asks for "90s". Fractions ("1.5h") are rejected: "1h30m" says the same exactly.
 */
#ifndef SCHED_CORE_DURATION_H
#define SCHED_CORE_DURATION_H

#include <stddef.h>
#include <stdint.h>

#define DUR_MAX_MS (3650LL * 86400000LL) /* ten years */

/* Parses s[0..n) into *ms (milliseconds). Returns NULL on success, else a static message saying
 * what is wrong and how to write it (*ms then unchanged). A NUL byte inside s[0..n) is rejected.
 */
const char *dur_parse(const char *s, size_t n, int64_t *ms);

/* Writes ms as "1h30m15s250ms" (units h, m, s, ms; "0" for ms <= 0) into buf; returns buf. A
 * value written here reads back to itself through dur_parse. */
const char *dur_format(int64_t ms, char *buf, size_t cap);

#endif
