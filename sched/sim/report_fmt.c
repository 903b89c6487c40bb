/* sched/sim/report_fmt.c: text for the simulator's HTML report: HTML escaping and the
 * formatting of numbers, durations and metric values (see report_fmt.h).
 *
 * Must not touch: the page's structure and charts (report.c).
 */
#include "sched/sim/report_fmt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- HTML escaping ------------------------------------------------------------------------- */

/* Writes s[0..n) with the five HTML-significant characters escaped; control characters (other
 * than tab and newline) become U+FFFD so that hostile names cannot produce an invalid page. */
void rep_esc_n(FILE *f, const char *s, size_t n)
{
    const char *run = s;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *rep = NULL;
        switch (c) {
        case '&':
            rep = "&amp;";
            break;
        case '<':
            rep = "&lt;";
            break;
        case '>':
            rep = "&gt;";
            break;
        case '"':
            rep = "&quot;";
            break;
        case '\'':
            rep = "&#39;";
            break;
        default:
            if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
                rep = "\xEF\xBF\xBD";
            break;
        }
        if (rep) {
            fwrite(run, 1, (size_t)(s + i - run), f);
            fputs(rep, f);
            run = s + i + 1;
        }
    }
    fwrite(run, 1, (size_t)(s + n - run), f);
}

void rep_esc(FILE *f, const char *s)
{
    if (s)
        rep_esc_n(f, s, strlen(s));
}

/* Number of UTF-8 characters (lead bytes) in s. */
size_t rep_utf8_len(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* Byte offset just past the first `chars` UTF-8 characters of s. */
size_t rep_utf8_prefix(const char *s, size_t chars)
{
    size_t i = 0, seen = 0;
    for (; s[i]; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (seen == chars)
                break;
            seen++;
        }
    }
    return i;
}

/* ---- number formatting --------------------------------------------------------------------- */

int rep_lower_contains(const char *hay, const char *needle)
{
    size_t nl = strlen(needle);
    for (; *hay; hay++) {
        size_t k = 0;
        while (k < nl && hay[k]) {
            char c = hay[k];
            if (c >= 'A' && c <= 'Z')
                c = (char)(c - 'A' + 'a');
            if (c != needle[k])
                break;
            k++;
        }
        if (k == nl)
            return 1;
    }
    return 0;
}

int rep_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* "%.*f" with thousands separators in the integer part. */
void rep_fmt_grouped(char *buf, size_t size, double v, int decimals)
{
    char raw[64];
    if (fabs(v) >= 1e15) {
        snprintf(buf, size, "%.4g", v);
        return;
    }
    snprintf(raw, sizeof(raw), "%.*f", decimals, v);
    const char *digits = raw[0] == '-' ? raw + 1 : raw;
    size_t int_len = strcspn(digits, ".");
    size_t o = 0;
    if (digits != raw && o + 1 < size)
        buf[o++] = '-';
    for (size_t i = 0; digits[i] && o + 1 < size; i++) {
        if (i > 0 && i < int_len && (int_len - i) % 3 == 0 && o + 2 < size)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
}

/* Human duration: "850ms", "42s", "12m 05s", "1h 02m", "3d 04h". */
void rep_fmt_duration(char *buf, size_t size, double s)
{
    const char *sign = s < 0 ? "-" : "";
    s = fabs(s);
    if (s < 0.9995) {
        snprintf(buf, size, "%s%.0fms", sign, s * 1000.0);
        return;
    }
    if (s >= 1e12) {
        snprintf(buf, size, "%s%.3gd", sign, s / 86400.0);
        return;
    }
    long long r = llround(s);
    if (r < 60)
        snprintf(buf, size, "%s%llds", sign, r);
    else if (r < 3600)
        snprintf(buf, size, "%s%lldm %02llds", sign, r / 60, r % 60);
    else if (r < 86400)
        snprintf(buf, size, "%s%lldh %02lldm", sign, r / 3600, r % 3600 / 60);
    else
        snprintf(buf, size, "%s%lldd %02lldh", sign, r / 86400, r % 86400 / 3600);
}

void rep_fmt_plain(char *buf, size_t size, double v)
{
    if (v == floor(v) && fabs(v) < 1e15)
        rep_fmt_grouped(buf, size, v, 0);
    else if (fabs(v) >= 1000)
        rep_fmt_grouped(buf, size, v, 1);
    else
        snprintf(buf, size, "%.4g", v);
}

/* Writes one table cell's content for metric `name` with value v. */
void rep_put_metric_value(FILE *f, const char *name, double v)
{
    char num[80], human[48];
    if (isnan(v)) {
        fputs("n/a", f);
        return;
    }
    if (isinf(v)) {
        fputs(v > 0 ? "&#8734;" : "-&#8734;", f);
        return;
    }
    if (rep_lower_contains(name, "utilization") || rep_lower_contains(name, "utilisation") ||
        rep_lower_contains(name, "fragmentation") || rep_ends_with(name, "_share")) {
        snprintf(num, sizeof(num), "%.1f%%", v * 100.0);
        fputs(num, f);
        return;
    }
    double secs = -1;
    const char *unit = NULL;
    if (rep_ends_with(name, "_ms")) {
        secs = v / 1000.0;
        unit = "ms";
    } else if (rep_ends_with(name, "_s") || rep_ends_with(name, "_sec") ||
               rep_ends_with(name, "_secs") || rep_ends_with(name, "_seconds") ||
               rep_lower_contains(name, "_s_")) {
        secs = v;
        unit = "s";
    }
    if (unit) {
        rep_fmt_grouped(num, sizeof(num), v, fabs(v) < 100 ? 1 : 0);
        fprintf(f, "%s&#8239;%s", num, unit);
        if (fabs(secs) >= 60) {
            rep_fmt_duration(human, sizeof(human), secs);
            fprintf(f, "<span class=\"h\">(%s)</span>", human);
        }
        return;
    }
    rep_fmt_plain(num, sizeof(num), v);
    fputs(num, f);
}

/* Tick label: integers without decimals, otherwise up to 6 significant digits. */
void rep_fmt_tick(char *buf, size_t size, double v, const char *suffix)
{
    if (fabs(v) < 1e-9)
        v = 0;
    if (fabs(v - round(v)) < 1e-9 * (fabs(v) > 1 ? fabs(v) : 1))
        rep_fmt_grouped(buf, size, round(v), 0);
    else
        snprintf(buf, size, "%.6g", v);
    size_t n = strlen(buf);
    snprintf(buf + n, size - n, "%s", suffix);
}
