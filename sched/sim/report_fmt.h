/* sched/sim/report_fmt.h: text helpers of the simulator's HTML report (report.c).
 *
 * Owns: HTML escaping (every caller string goes through it) and the formatting of numbers,
 * durations and metric values. Must not touch: the page's structure and charts.
 */
#ifndef SCHED_SIM_REPORT_FMT_H
#define SCHED_SIM_REPORT_FMT_H

#include <stddef.h>
#include <stdio.h>

/* s[0..n) with & < > " ' escaped; control characters (but tab and newline) become U+FFFD. */
void rep_esc_n(FILE *f, const char *s, size_t n);
void rep_esc(FILE *f, const char *s); /* NULL writes nothing */
size_t rep_utf8_len(const char *s);   /* UTF-8 characters in s */
/* Byte offset just past the first `chars` UTF-8 characters of s. */
size_t rep_utf8_prefix(const char *s, size_t chars);
int rep_lower_contains(const char *hay, const char *needle);
int rep_ends_with(const char *s, const char *suffix);
/* "%.*f" with thousands separators. */
void rep_fmt_grouped(char *buf, size_t size, double v, int decimals);
/* "850ms", "42s", "12m 05s", "1h 02m", "3d 04h". */
void rep_fmt_duration(char *buf, size_t size, double s);
void rep_fmt_plain(char *buf, size_t size, double v);
/* A metric's value by its name: *_s durations (with a human form), *utilization* percents. */
void rep_put_metric_value(FILE *f, const char *name, double v);
/* Tick label: integers without decimals, else up to 6 significant digits, then `suffix`. */
void rep_fmt_tick(char *buf, size_t size, double v, const char *suffix);

#endif
