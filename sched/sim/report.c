/* sched/sim/report.c: the simulator's self-contained HTML report.
 *
 * Owns: turning per-policy series, queue times and summary metrics into one HTML5 page with
 * inline CSS and inline SVG (no scripts, no external resources). Long series are downsampled by
 * time buckets (the maximum and the last point of every bucket survive) so the page stays small
 * for 50,000-job runs. Every string that comes from the caller is HTML-escaped.
 */
#include "sched/sim/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sim/outfile.h"
#include "sched/sim/report_fmt.h"

/* Chart geometry, in SVG user units. */
#define CHART_W       960.0
#define PLOT_L        78.0 /* left margin: y tick labels and the y axis title */
#define PLOT_R        28.0 /* right margin */
#define PLOT_H        270.0
#define MARGIN_B      58.0 /* x tick labels and the x axis title */
#define LEG_TOP       10.0
#define LEG_ROW       20.0
#define LEG_CHAR_W    7.2 /* rough width of one legend character at 13px */
#define LEG_MAX_CHARS 40  /* longer policy names are shortened in legends (full name in table) */

#define MAX_POINTS  1500 /* series longer than this are downsampled ... */
#define N_BUCKETS   700  /* ... into this many time buckets, at most 2 points each */
#define CDF_BUCKETS 1400
#define MAX_TICKS   24

#define N_PALETTE 10
static const char *const palette[N_PALETTE] = {
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};
/* Policies alternate solid, dashed and dotted lines (and colours), so that two equal series stay
 * visible on top of each other. */
static const char *const dashes[3] = {"", "7 4", "2 3"};

static const char *dash_of(size_t i)
{
    return dashes[(i + i / N_PALETTE) % 3];
}

static const char css[] =
    "body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#222;"
    "background:#fff;max-width:1000px;margin:24px auto;padding:0 16px}\n"
    "h1{font-size:1.6em;margin:0 0 4px}\n"
    "h2{font-size:1.15em;margin:28px 0 4px}\n"
    "p.note{color:#666;margin:0 0 8px;font-size:.9em}\n"
    "table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin-top:6px}\n"
    "th,td{padding:4px 12px;border-bottom:1px solid #e3e3e3;text-align:right;"
    "vertical-align:top}\n"
    "thead th{border-bottom:2px solid #999;text-align:right}\n"
    "tbody th{text-align:left;font-weight:normal;font-family:ui-monospace,Menlo,Consolas,"
    "monospace;font-size:.9em}\n"
    "td .h{color:#777;font-size:.88em;margin-left:4px}\n"
    "th .k{color:#999;font-size:.8em;margin-left:6px}\n"
    ".wide{overflow-x:auto}\n"
    "table.qt{font-size:.85em}\n"
    "table.qt td .h{display:block;margin:0}\n"
    "h3{font-size:1em;margin:20px 0 2px}\n"
    "svg .area{stroke:none}\n"
    "svg .nominal{stroke:#444;stroke-width:1.2;stroke-dasharray:4 3;fill:none}\n"
    "svg .cell{stroke:#fff;stroke-width:2}\n"
    "svg .cl{font-size:10px;fill:#111}\n"
    ".sw{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin-right:6px;"
    "vertical-align:-.05em}\n"
    "svg{max-width:100%;height:auto;display:block}\n"
    "svg text{font:12px system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;fill:#333}\n"
    "svg .leg{font-size:13px}\n"
    "svg .ttl{font-size:12.5px;fill:#444}\n"
    "svg .grid{stroke:#e6e6e6;stroke-width:1}\n"
    "svg .axis{stroke:#555;stroke-width:1;fill:none}\n"
    "svg .line{fill:none;stroke-width:1.6;stroke-linejoin:round}\n"
    "svg .nodata{fill:#999;font-size:15px}\n"
    "footer{margin:32px 0 8px;color:#888;font-size:.85em}\n";

static void esc_policy_name(FILE *f, const struct report_policy *p, size_t i)
{
    if (p->name && p->name[0])
        rep_esc(f, p->name);
    else
        fprintf(f, "policy %zu", i + 1);
}

/* ---- summary table ------------------------------------------------------------------------- */

static void put_swatch(FILE *f, size_t i)
{
    fprintf(f, "<span class=\"sw\" style=\"background:%s\"></span>", palette[i % N_PALETTE]);
}

static int metric_seen_before(const struct report_policy *p, size_t pi, size_t mi)
{
    const char *name = p[pi].metrics[mi].name;
    for (size_t a = 0; a <= pi; a++) {
        size_t lim = a == pi ? mi : p[a].n_metrics;
        if (!p[a].metrics)
            continue;
        for (size_t b = 0; b < lim; b++)
            if (p[a].metrics[b].name && strcmp(p[a].metrics[b].name, name) == 0)
                return 1;
    }
    return 0;
}

static const struct report_metric *find_metric(const struct report_policy *p, const char *name)
{
    if (!p->metrics)
        return NULL;
    for (size_t i = 0; i < p->n_metrics; i++)
        if (p->metrics[i].name && strcmp(p->metrics[i].name, name) == 0)
            return &p->metrics[i];
    return NULL;
}

/* A metric's row header: its label, and its JSON key in grey (for readers of --json). */
static void put_metric_label(FILE *f, const struct report_metric *m)
{
    if (m->label && m->label[0] && strcmp(m->label, m->name) != 0) {
        rep_esc(f, m->label);
        fputs(" <span class=\"k\">", f);
        rep_esc(f, m->name);
        fputs("</span>", f);
    } else {
        rep_esc(f, m->name);
    }
}

static void put_table(FILE *f, const struct report_policy *p, size_t n)
{
    size_t rows = 0;
    fputs("<h2>Summary</h2>\n", f);
    if (n == 0) {
        fputs("<p class=\"note\">No policies were simulated.</p>\n", f);
        return;
    }
    fputs("<table>\n<thead><tr><th scope=\"col\" style=\"text-align:left\">metric</th>", f);
    for (size_t i = 0; i < n; i++) {
        fputs("<th scope=\"col\">", f);
        put_swatch(f, i);
        esc_policy_name(f, &p[i], i);
        fputs("</th>", f);
    }
    fputs("</tr></thead>\n<tbody>\n", f);
    /* One row per distinct metric name, in order of first appearance. */
    for (size_t pi = 0; pi < n; pi++) {
        if (!p[pi].metrics)
            continue;
        for (size_t mi = 0; mi < p[pi].n_metrics; mi++) {
            const char *name = p[pi].metrics[mi].name;
            if (!name || metric_seen_before(p, pi, mi))
                continue;
            rows++;
            fputs("<tr><th scope=\"row\">", f);
            put_metric_label(f, &p[pi].metrics[mi]);
            fputs("</th>", f);
            for (size_t k = 0; k < n; k++) {
                const struct report_metric *m = find_metric(&p[k], name);
                fputs("<td>", f);
                if (m)
                    rep_put_metric_value(f, name, m->value);
                else
                    fputs("&#8211;", f);
                fputs("</td>", f);
            }
            fputs("</tr>\n", f);
        }
    }
    if (rows == 0) {
        fprintf(f, "<tr><td colspan=\"%zu\" style=\"text-align:left\">no metrics</td></tr>\n",
                n + 1);
    }
    fputs("</tbody>\n</table>\n", f);
}

/* ---- charts -------------------------------------------------------------------------------- */

struct axis {
    double lo, hi;
    int log; /* log10 scale; lo > 0 */
    size_t n_ticks;
    double tick[MAX_TICKS];
    char label[MAX_TICKS][24];
    char title[80];
};

struct frame {
    double top; /* plot area top */
    struct axis x, y;
};

enum chart_kind { CHART_UTIL, CHART_QUEUED, CHART_CDF, CHART_QUEUE_USED };

static double plot_w(void)
{
    return CHART_W - PLOT_L - PLOT_R;
}

static double axis_frac(const struct axis *a, double v)
{
    double u;
    if (a->log) {
        if (!(v > a->lo))
            v = a->lo;
        u = (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
    } else {
        u = (v - a->lo) / (a->hi - a->lo);
    }
    if (!(u >= 0))
        u = 0;
    if (u > 1)
        u = 1;
    return u;
}

static double px_x(const struct frame *fr, double v)
{
    return PLOT_L + axis_frac(&fr->x, v) * plot_w();
}

static double px_y(const struct frame *fr, double v)
{
    return fr->top + (1.0 - axis_frac(&fr->y, v)) * PLOT_H;
}

static double nice_step(double raw)
{
    if (!(raw > 0) || !isfinite(raw))
        return 1;
    double mag = pow(10, floor(log10(raw)));
    double norm = raw / mag;
    double m = norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 2.5 ? 2.5 : norm <= 5 ? 5 : 10;
    return m * mag;
}

/* A linear axis covering [lo, hi] (real units) with about `target` ticks placed at nice values
 * of the display unit (`unit` real units per display unit). */
static void axis_linear(struct axis *a, double lo, double hi, double unit, int integer, int target,
                        const char *suffix)
{
    double lo_u = lo / unit, hi_u = hi / unit;
    if (!(hi_u > lo_u))
        hi_u = lo_u + 1;
    double step = nice_step((hi_u - lo_u) / target);
    if (integer && step < 1)
        step = 1;
    double k0 = floor(lo_u / step + 1e-9), k1 = ceil(hi_u / step - 1e-9);
    while (k1 - k0 + 1 > MAX_TICKS) { /* cannot happen with sane targets; stay in bounds */
        step *= 2;
        k0 = floor(lo_u / step + 1e-9);
        k1 = ceil(hi_u / step - 1e-9);
    }
    a->log = 0;
    a->lo = k0 * step * unit;
    a->hi = k1 * step * unit;
    a->n_ticks = 0;
    for (double k = k0; k <= k1 + 0.5; k++) {
        a->tick[a->n_ticks] = k * step * unit;
        rep_fmt_tick(a->label[a->n_ticks], sizeof(a->label[0]), k * step, suffix);
        a->n_ticks++;
    }
}

/* Log axis for durations from 1 s to the first human landmark at or above `max`. */
static void axis_log_duration(struct axis *a, double max)
{
    static const double marks[] = {1, 10, 60, 600, 3600, 21600, 86400, 604800, 2592000, 31536000};
    static const char *const names[] = {"1s", "10s", "1m", "10m", "1h",
                                        "6h", "1d",  "1w", "30d", "1y"};
    size_t nm = sizeof(marks) / sizeof(marks[0]);
    a->log = 1;
    a->lo = 1;
    a->hi = 10;
    if (max > 10)
        a->hi = max > marks[nm - 1] ? pow(10, ceil(log10(max))) : max;
    for (size_t i = 0; i < nm; i++) {
        if (marks[i] >= a->hi) {
            a->hi = marks[i];
            break;
        }
    }
    a->n_ticks = 0;
    for (size_t i = 0; i < nm && marks[i] <= a->hi; i++) {
        a->tick[a->n_ticks] = marks[i];
        snprintf(a->label[a->n_ticks], sizeof(a->label[0]), "%s", names[i]);
        a->n_ticks++;
    }
    snprintf(a->title, sizeof(a->title), "queue time (log scale)");
}

/* Legend text suffix for policy p in a chart of this kind. */
static void legend_suffix(char *buf, size_t size, const struct report_policy *p,
                          enum chart_kind kind)
{
    size_t count =
        kind == CHART_CDF ? (p->queue_s ? p->n_queue_s : 0) : (p->series ? p->n_series : 0);
    if (count == 0)
        snprintf(buf, size, " (no data)");
    else if (kind == CHART_CDF)
        snprintf(buf, size, " (n=%zu)", count);
    else
        buf[0] = '\0';
}

/* The name a legend shows; unnamed policies are drawn as "policy N" (width estimated here). */
static const char *name_or_default(const struct report_policy *p)
{
    return p->name && p->name[0] ? p->name : "policy 000";
}

/* Lays out (and, when f is not NULL, draws) the legend; returns the number of rows. */
static size_t legend(FILE *f, const struct report_policy *p, size_t n, enum chart_kind kind)
{
    double x = PLOT_L, right = CHART_W - PLOT_R;
    size_t row = 0;
    char suffix[48];
    for (size_t i = 0; i < n; i++) {
        const char *name = name_or_default(&p[i]);
        size_t chars = rep_utf8_len(name);
        int cut = chars > LEG_MAX_CHARS;
        legend_suffix(suffix, sizeof(suffix), &p[i], kind);
        double w = 30 + LEG_CHAR_W * (double)((cut ? LEG_MAX_CHARS + 1 : chars) + strlen(suffix));
        if (x > PLOT_L && x + w > right) {
            row++;
            x = PLOT_L;
        }
        if (f) {
            double y = LEG_TOP + LEG_ROW * (double)row + LEG_ROW / 2;
            const char *dash = dash_of(i);
            fprintf(f,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                    "stroke-width=\"3\"%s%s%s/>",
                    x, y, x + 22, y, palette[i % N_PALETTE], dash[0] ? " stroke-dasharray=\"" : "",
                    dash, dash[0] ? "\"" : "");
            fprintf(f, "<text class=\"leg\" x=\"%.1f\" y=\"%.1f\" dy=\".35em\">", x + 28, y);
            if (!(p[i].name && p[i].name[0]))
                fprintf(f, "policy %zu", i + 1);
            else if (cut) {
                rep_esc_n(f, name, rep_utf8_prefix(name, LEG_MAX_CHARS));
                fputs("\xE2\x80\xA6", f);
            } else
                rep_esc(f, name);
            rep_esc(f, suffix);
            if (cut) {
                fputs("<title>", f);
                rep_esc(f, name);
                fputs("</title>", f);
            }
            fputs("</text>\n", f);
        }
        x += w + 18;
    }
    return n ? row + 1 : 0;
}

static void chart_begin(FILE *f, const struct frame *fr, const char *title,
                        const struct report_policy *p, size_t n, enum chart_kind kind)
{
    double h = fr->top + PLOT_H + MARGIN_B;
    double bottom = fr->top + PLOT_H, right = CHART_W - PLOT_R;
    fprintf(f, "<svg viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n",
            CHART_W, h, CHART_W, h);
    fputs("<title>", f);
    rep_esc(f, title);
    fputs("</title>\n", f);
    legend(f, p, n, kind);
    /* Grid lines and tick labels. */
    for (size_t i = 0; i < fr->y.n_ticks; i++) {
        double y = px_y(fr, fr->y.tick[i]);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", PLOT_L,
                y, right, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" dy=\".32em\" text-anchor=\"end\">%s</text>\n",
                PLOT_L - 7, y, fr->y.label[i]);
    }
    for (size_t i = 0; i < fr->x.n_ticks; i++) {
        double x = px_x(fr, fr->x.tick[i]);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x,
                fr->top, x, bottom);
        fprintf(f, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x,
                bottom, x, bottom + 5);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", x, bottom + 19,
                fr->x.label[i]);
    }
    /* Axis titles. */
    fprintf(f, "<text class=\"ttl\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
            PLOT_L + plot_w() / 2, bottom + 44, fr->x.title);
    fprintf(f,
            "<text class=\"ttl\" transform=\"translate(%.1f %.1f) rotate(-90)\" "
            "text-anchor=\"middle\">%s</text>\n",
            18.0, fr->top + PLOT_H / 2, fr->y.title);
}

static void chart_end(FILE *f, const struct frame *fr, int any_data)
{
    double bottom = fr->top + PLOT_H;
    if (!any_data)
        fprintf(f,
                "<text class=\"nodata\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no "
                "data</text>\n",
                PLOT_L + plot_w() / 2, fr->top + PLOT_H / 2);
    fprintf(f, "<path class=\"axis\" d=\"M%.1f %.1fV%.1fH%.1f\"/>\n</svg>\n", PLOT_L, fr->top,
            bottom, CHART_W - PLOT_R);
}

static void path_begin(FILE *f, size_t i)
{
    const char *dash = dash_of(i);
    fprintf(f, "<path class=\"line\" stroke=\"%s\"", palette[i % N_PALETTE]);
    if (dash[0])
        fprintf(f, " stroke-dasharray=\"%s\"", dash);
    fputs(" d=\"", f);
}

/* Emits one point of a step line: a move for the first point, else across then up/down. */
struct stepper {
    FILE *f;
    const struct frame *fr;
    size_t emitted;
};

static void step_to(struct stepper *s, double xv, double yv)
{
    double x = px_x(s->fr, xv), y = px_y(s->fr, yv);
    if (s->emitted++ == 0)
        fprintf(s->f, "M%.1f %.1f", x, y);
    else
        fprintf(s->f, "H%.1fV%.1f", x, y);
}

/* What a time chart draws: a field of the series, or one queue's GPUs in use. */
struct source {
    enum chart_kind kind;
    size_t queue; /* CHART_QUEUE_USED */
};

static double series_value(const struct report_policy *p, size_t i, struct source src)
{
    if (src.kind == CHART_QUEUE_USED)
        return p->queue_used[i * p->n_queues + src.queue];
    return src.kind == CHART_UTIL ? p->series[i].util : p->series[i].queued;
}

/* Draws one policy's time series; long series keep the maximum and the last point of each of
 * N_BUCKETS time buckets over [t_lo, t_hi]. `area` closes the line down to the x axis and fills
 * it (the caller sets the fill and any clip path in `attrs`). */
static void time_series_path(FILE *f, const struct frame *fr, const struct report_policy *p,
                             size_t pi, struct source src, double t_lo, double t_hi,
                             const char *attrs)
{
    const struct report_point *s = p->series;
    size_t n = s ? p->n_series : 0;
    struct stepper st = {f, fr, 0};
    if (n == 0 || (src.kind == CHART_QUEUE_USED && (!p->queue_used || src.queue >= p->n_queues)))
        return;
    if (attrs)
        fprintf(f, "<path class=\"area\" %s d=\"", attrs);
    else
        path_begin(f, pi);
    double x0 = NAN;
    if (n <= MAX_POINTS) {
        for (size_t i = 0; i < n; i++) {
            double v = series_value(p, i, src);
            if (isfinite(s[i].t_s) && isfinite(v)) {
                if (isnan(x0))
                    x0 = s[i].t_s;
                step_to(&st, s[i].t_s, v);
            }
        }
    } else {
        double span = t_hi > t_lo ? t_hi - t_lo : 1;
        long cur = -1;
        size_t imax = 0, ilast = 0;
        double vmax = 0;
        for (size_t i = 0; i <= n; i++) {
            long b = -1;
            double v = 0;
            if (i < n) {
                v = series_value(p, i, src);
                if (!isfinite(s[i].t_s) || !isfinite(v))
                    continue;
                double u = (s[i].t_s - t_lo) / span * N_BUCKETS;
                b = u < 0 ? 0 : u >= N_BUCKETS ? N_BUCKETS - 1 : (long)u;
                if (b == cur) {
                    if (v > vmax) {
                        vmax = v;
                        imax = i;
                    }
                    ilast = i;
                    continue;
                }
            }
            if (cur >= 0) { /* flush the finished bucket, in time order */
                if (isnan(x0))
                    x0 = s[imax].t_s;
                step_to(&st, s[imax].t_s, vmax);
                if (ilast != imax)
                    step_to(&st, s[ilast].t_s, series_value(p, ilast, src));
            }
            cur = b;
            imax = ilast = i;
            vmax = v;
        }
    }
    if (attrs && st.emitted)
        fprintf(f, "V%.1fH%.1fZ", fr->top + PLOT_H, px_x(fr, x0));
    fputs("\"/>\n", f);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Draws one policy's queue-time CDF from sorted values; at most CDF_BUCKETS steps. */
static void cdf_path(FILE *f, const struct frame *fr, const double *v, size_t n, size_t pi)
{
    struct stepper st = {f, fr, 0};
    double l0 = log10(fr->x.lo), l1 = log10(fr->x.hi);
    if (n == 0)
        return;
    path_begin(f, pi);
    step_to(&st, fr->x.lo, 0);
    size_t i = 0;
    while (i < n) {
        double u = v[i] > fr->x.lo ? (log10(v[i]) - l0) / (l1 - l0) * CDF_BUCKETS : 0;
        long b = u >= CDF_BUCKETS ? CDF_BUCKETS - 1 : (long)u;
        size_t j = i;
        while (j + 1 < n) {
            double u2 = v[j + 1] > fr->x.lo ? (log10(v[j + 1]) - l0) / (l1 - l0) * CDF_BUCKETS : 0;
            long b2 = u2 >= CDF_BUCKETS ? CDF_BUCKETS - 1 : (long)u2;
            if (b2 != b)
                break;
            j++;
        }
        step_to(&st, v[j], (double)(j + 1) / (double)n);
        i = j + 1;
    }
    step_to(&st, fr->x.hi, 1.0);
    fputs("\"/>\n", f);
}

static double frame_top(const struct report_policy *p, size_t n, enum chart_kind kind)
{
    size_t rows = legend(NULL, p, n, kind);
    return LEG_TOP + LEG_ROW * (double)(rows ? rows : 1) + 14;
}

static void time_axis(struct axis *a, double t_lo, double t_hi)
{
    double span = t_hi - t_lo;
    double unit = 1;
    const char *uname = "seconds";
    if (span > 5 * 86400.0) {
        unit = 86400;
        uname = "days";
    } else if (span > 5 * 3600.0) {
        unit = 3600;
        uname = "hours";
    } else if (span > 300) {
        unit = 60;
        uname = "minutes";
    }
    axis_linear(a, t_lo, t_hi, unit, 0, 8, "");
    snprintf(a->title, sizeof(a->title), "time since first submission (%s)", uname);
}

static void put_time_charts(FILE *f, const struct report_policy *p, size_t n)
{
    double t_lo = 0, t_hi = 0, q_max = 0;
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        const struct report_point *s = p[i].series;
        for (size_t k = 0; s && k < p[i].n_series; k++) {
            if (!isfinite(s[k].t_s))
                continue;
            if (!any || s[k].t_s < t_lo)
                t_lo = s[k].t_s;
            if (!any || s[k].t_s > t_hi)
                t_hi = s[k].t_s;
            if (isfinite(s[k].queued) && s[k].queued > q_max)
                q_max = s[k].queued;
            any = 1;
        }
    }
    if (t_lo > 0)
        t_lo = 0;
    if (!(t_hi > t_lo))
        t_hi = t_lo + 60;

    struct frame fr;
    fr.top = frame_top(p, n, CHART_UTIL); /* the same legend as CHART_QUEUED */
    time_axis(&fr.x, t_lo, t_hi);

    fputs("<h2>GPU utilisation over time</h2>\n<p class=\"note\">Busy GPUs as a share of all "
          "GPUs. Higher means less idle hardware.</p>\n",
          f);
    axis_linear(&fr.y, 0, 1, 0.01, 0, 5, "%");
    snprintf(fr.y.title, sizeof(fr.y.title), "GPU utilisation");
    chart_begin(f, &fr, "GPU utilisation over time", p, n, CHART_UTIL);
    for (size_t i = 0; i < n; i++)
        time_series_path(f, &fr, &p[i], i, (struct source){CHART_UTIL, 0}, t_lo, t_hi, NULL);
    chart_end(f, &fr, any);

    fputs("<h2>Gangs waiting over time</h2>\n<p class=\"note\">Gangs submitted but not yet "
          "started. Lower is better; peaks are kept when the series is thinned.</p>\n",
          f);
    axis_linear(&fr.y, 0, q_max > 0 ? q_max : 1, 1, 1, 5, "");
    snprintf(fr.y.title, sizeof(fr.y.title), "gangs waiting");
    chart_begin(f, &fr, "Gangs waiting over time", p, n, CHART_QUEUED);
    for (size_t i = 0; i < n; i++)
        time_series_path(f, &fr, &p[i], i, (struct source){CHART_QUEUED, 0}, t_lo, t_hi, NULL);
    chart_end(f, &fr, any);
}

static int put_cdf_chart(FILE *f, const struct report_policy *p, size_t n, const char *path,
                         struct sched_errbuf *eb)
{
    double q_max = 0;
    size_t most = 0;
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        size_t m = p[i].queue_s ? p[i].n_queue_s : 0;
        if (m > most)
            most = m;
        for (size_t k = 0; k < m; k++) {
            double v = p[i].queue_s[k];
            if (isnan(v))
                continue;
            any = 1;
            if (isfinite(v) && v > q_max)
                q_max = v;
        }
    }
    double *buf = NULL;
    if (most) {
        buf = malloc(most * sizeof(*buf));
        if (!buf)
            return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory sorting %zu queue times", path,
                              most);
    }
    struct frame fr;
    fr.top = frame_top(p, n, CHART_CDF);
    axis_log_duration(&fr.x, q_max);
    axis_linear(&fr.y, 0, 1, 1, 0, 5, "");
    snprintf(fr.y.title, sizeof(fr.y.title), "share of jobs started");

    fputs("<h2>Queue time distribution</h2>\n<p class=\"note\">Share of started jobs that "
          "waited at most the given time (times under 1&#8239;s are drawn at 1&#8239;s). Curves "
          "further up and to the left are better.</p>\n",
          f);
    chart_begin(f, &fr, "Queue time CDF", p, n, CHART_CDF);
    for (size_t i = 0; i < n; i++) {
        size_t m = 0;
        for (size_t k = 0; p[i].queue_s && k < p[i].n_queue_s; k++) {
            double v = p[i].queue_s[k];
            if (!isnan(v))
                buf[m++] = v;
        }
        if (m > 1)
            qsort(buf, m, sizeof(*buf), cmp_double);
        cdf_path(f, &fr, buf, m, i);
    }
    chart_end(f, &fr, any);
    free(buf);
    return 0;
}

/* ---- per queue ------------------------------------------------------------------------------ */

#define MAX_QUEUE_CHARTS 32 /* queues with charts; the table lists every queue */

/* The table of every queue's figures: a row per queue and policy. */
static void put_queue_table(FILE *f, const struct report_policy *p, size_t n, size_t nq)
{
    const struct report_queue *q0 = &p[0].queues[0];
    fputs("<div class=\"wide\"><table class=\"qt\">\n<thead><tr><th scope=\"col\" "
          "style=\"text-align:left\">queue</th>"
          "<th scope=\"col\" style=\"text-align:left\">policy</th>",
          f);
    for (size_t k = 0; k < q0->n_metrics; k++) {
        fputs("<th scope=\"col\">", f);
        rep_esc(f, q0->metrics[k].label ? q0->metrics[k].label : q0->metrics[k].name);
        fputs("</th>", f);
    }
    fputs("</tr></thead>\n<tbody>\n", f);
    for (size_t q = 0; q < nq; q++)
        for (size_t i = 0; i < n; i++) {
            const struct report_queue *rq = &p[i].queues[q];
            fputs("<tr class=\"queue\"><th scope=\"row\">", f);
            rep_esc(f, rq->name);
            fputs("</th><td style=\"text-align:left\">", f);
            put_swatch(f, i);
            esc_policy_name(f, &p[i], i);
            fputs("</td>", f);
            for (size_t k = 0; k < q0->n_metrics; k++) {
                fputs("<td>", f);
                if (k < rq->n_metrics)
                    rep_put_metric_value(f, rq->metrics[k].name, rq->metrics[k].value);
                fputs("</td>", f);
            }
            fputs("</tr>\n", f);
        }
    fputs("</tbody>\n</table></div>\n", f);
}

/* One queue's GPUs in use over time for every policy, against its nominal quota; the first
 * policy's use above nominal (borrowing) is shaded. */
static void put_queue_usage(FILE *f, const struct report_policy *p, size_t n, size_t q, double t_lo,
                            double t_hi)
{
    double top = p[0].queues[q].nominal_gpus;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; p[i].queue_used && k < p[i].n_series; k++)
            if (p[i].queue_used[k * p[i].n_queues + q] > top)
                top = p[i].queue_used[k * p[i].n_queues + q];
    struct frame fr;
    fr.top = frame_top(p, n, CHART_QUEUE_USED);
    time_axis(&fr.x, t_lo, t_hi);
    axis_linear(&fr.y, 0, top > 0 ? top * 1.05 : 1, 1, 1, 5, "");
    snprintf(fr.y.title, sizeof(fr.y.title), "GPUs in use");
    char title[200];
    snprintf(title, sizeof(title), "GPUs of queue %.150s over time", p[0].queues[q].name);
    chart_begin(f, &fr, title, p, n, CHART_QUEUE_USED);
    double ynom = px_y(&fr, p[0].queues[q].nominal_gpus);
    fprintf(f,
            "<clipPath id=\"borrow%zu\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
            "height=\"%.1f\"/></clipPath>\n",
            q, PLOT_L, fr.top, plot_w(), ynom - fr.top);
    char attrs[160];
    snprintf(attrs, sizeof(attrs),
             "fill=\"%s\" fill-opacity=\"0.22\" clip-path=\"url(#borrow%zu)\"", palette[0], q);
    time_series_path(f, &fr, &p[0], 0, (struct source){CHART_QUEUE_USED, q}, t_lo, t_hi, attrs);
    for (size_t i = 0; i < n; i++)
        time_series_path(f, &fr, &p[i], i, (struct source){CHART_QUEUE_USED, q}, t_lo, t_hi, NULL);
    fprintf(f, "<line class=\"nominal\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", PLOT_L,
            ynom, CHART_W - PLOT_R, ynom);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">nominal ", CHART_W - PLOT_R - 4,
            ynom - 5);
    char num[40];
    rep_fmt_grouped(num, sizeof(num), p[0].queues[q].nominal_gpus, 0);
    fprintf(f, "%s</text>\n", num);
    chart_end(f, &fr, p[0].n_series > 0);
}

/* One queue's queue-time CDF for every policy. */
static void put_queue_cdf(FILE *f, const struct report_policy *p, size_t n, size_t q, double *buf)
{
    double q_max = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; p[i].queue_of && k < p[i].n_queue_s; k++)
            if (p[i].queue_of[k] == q && isfinite(p[i].queue_s[k]) && p[i].queue_s[k] > q_max)
                q_max = p[i].queue_s[k];
    struct frame fr;
    fr.top = frame_top(p, n, CHART_QUEUE_USED);
    axis_log_duration(&fr.x, q_max);
    axis_linear(&fr.y, 0, 1, 1, 0, 5, "");
    snprintf(fr.y.title, sizeof(fr.y.title), "share of jobs started");
    char title[200];
    snprintf(title, sizeof(title), "Queue time CDF of queue %.150s", p[0].queues[q].name);
    chart_begin(f, &fr, title, p, n, CHART_QUEUE_USED);
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        size_t m = 0;
        for (size_t k = 0; p[i].queue_of && k < p[i].n_queue_s; k++)
            if (p[i].queue_of[k] == q && !isnan(p[i].queue_s[k]))
                buf[m++] = p[i].queue_s[k];
        if (m > 1)
            qsort(buf, m, sizeof(*buf), cmp_double);
        any |= m > 0;
        cdf_path(f, &fr, buf, m, i);
    }
    chart_end(f, &fr, any);
}

static int put_queues(FILE *f, const struct report_policy *p, size_t n, const char *path,
                      struct sched_errbuf *eb)
{
    size_t nq = n ? p[0].n_queues : 0, most = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i].n_queues != nq || !p[i].queues)
            nq = 0;
        if (p[i].n_queue_s > most)
            most = p[i].n_queue_s;
    }
    if (nq == 0)
        return 0;
    double *buf = malloc((most + 1) * sizeof(*buf));
    if (!buf)
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", path);
    fputs("<h2>Queues</h2>\n<p class=\"note\">Each queue's figures under every policy. "
          "Borrowed: GPU-hours used above its nominal quota (from other queues of its cohort); "
          "lent: GPU-hours of its idle nominal quota that others used.</p>\n",
          f);
    put_queue_table(f, p, n, nq);
    double t_lo = 0, t_hi = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; p[i].series && k < p[i].n_series; k++)
            if (isfinite(p[i].series[k].t_s) && p[i].series[k].t_s > t_hi)
                t_hi = p[i].series[k].t_s;
    if (!(t_hi > t_lo))
        t_hi = t_lo + 60;
    for (size_t q = 0; q < nq && q < MAX_QUEUE_CHARTS; q++) {
        fputs("<h3 class=\"queue\">Queue ", f);
        rep_esc(f, p[0].queues[q].name);
        fputs("</h3>\n<p class=\"note\">GPUs in use against the nominal quota (dashed); the "
              "shaded part is borrowed, which explains waits at a borrowing limit. Then its "
              "queue-time distribution.</p>\n",
              f);
        put_queue_usage(f, p, n, q, t_lo, t_hi);
        put_queue_cdf(f, p, n, q, buf);
    }
    if (nq > MAX_QUEUE_CHARTS)
        fprintf(f, "<p class=\"note\">Charts for the first %d of %zu queues.</p>\n",
                MAX_QUEUE_CHARTS, nq);
    free(buf);
    return 0;
}

/* ---- placement heat map ------------------------------------------------------------------------
 */

#define CELL      34.0
#define CELLS_ROW 24

/* White to dark blue by a share 0..1. */
static void heat_color(char *buf, size_t n, double u)
{
    if (!(u >= 0))
        u = 0;
    if (u > 1)
        u = 1;
    int r = (int)lround(247 - u * (247 - 8)), g = (int)lround(251 - u * (251 - 48)),
        b = (int)lround(255 - u * (255 - 107));
    snprintf(buf, n, "#%02x%02x%02x", r, g, b);
}

static void put_racks(FILE *f, const struct report_policy *p, size_t n)
{
    size_t any = 0;
    for (size_t i = 0; i < n; i++)
        any += p[i].racks && p[i].n_racks > 0;
    if (!any)
        return;
    fputs("<h2>Placement by rack</h2>\n<p class=\"note\">Share of each rack's GPU time that "
          "ran pods, one cell per rack (darker is busier; hover for the figures). Even colours "
          "mean placement spread the load; pale racks next to dark ones mean stranded or "
          "fragmented capacity.</p>\n",
          f);
    for (size_t i = 0; i < n; i++) {
        if (!p[i].racks || p[i].n_racks == 0)
            continue;
        size_t nr = p[i].n_racks, cols = nr < CELLS_ROW ? nr : CELLS_ROW;
        size_t rows = (nr + cols - 1) / cols;
        double w = (double)cols * CELL + 2, h = (double)rows * CELL + 2;
        fputs("<h3>", f);
        put_swatch(f, i);
        esc_policy_name(f, &p[i], i);
        fprintf(f,
                "</h3>\n<svg class=\"heat\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
                "height=\"%.0f\" role=\"img\"><title>GPU use by rack</title>\n",
                w, h, w, h);
        for (size_t k = 0; k < nr; k++) {
            const struct report_rack *r = &p[i].racks[k];
            double u = r->gpus > 0 && p[i].span_s > 0 ? r->gpu_s / (r->gpus * p[i].span_s) : 0;
            char color[16];
            heat_color(color, sizeof(color), u);
            double x = 1 + (double)(k % cols) * CELL, y = 1 + (double)(k / cols) * CELL;
            fprintf(f,
                    "<rect class=\"cell\" x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
                    "fill=\"%s\"><title>",
                    x, y, CELL, CELL, color);
            rep_esc(f, r->name);
            fprintf(f, ": %.1f%% of %.0f GPUs busy (%.0f GPU-hours)</title></rect>", 100 * u,
                    r->gpus, r->gpu_s / 3600);
            fprintf(f,
                    "<text class=\"cl\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                    "dy=\".35em\"%s>%.0f</text>\n",
                    x + CELL / 2, y + CELL / 2, u > 0.55 ? " style=\"fill:#fff\"" : "", 100 * u);
        }
        fputs("</svg>\n", f);
    }
}

/* ---- page ---------------------------------------------------------------------------------- */

int report_write_html(const char *path, const char *title, const struct report_policy *p, size_t n,
                      struct sched_errbuf *eb)
{
    if (!path || !path[0])
        return sched_fail(eb, SCHED_EINVAL, "report: no output path");
    if (n > 0 && !p)
        return sched_fail(eb, SCHED_EINVAL, "%s: no policies given", path);
    if (!title || !title[0])
        title = "gangsched simulation report";

    struct sim_outfile out; /* whole or not at all, as --events and --jobs-out */
    if (sim_outfile_open(&out, path, eb) != 0)
        return SCHED_EIO;
    FILE *f = out.f;
    setvbuf(f, NULL, _IOFBF, 1 << 16);

    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
          f);
    rep_esc(f, title);
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>", css);
    rep_esc(f, title);
    fprintf(f, "</h1>\n<p class=\"note\">%zu polic%s compared: ", n, n == 1 ? "y" : "ies");
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputs(", ", f);
        put_swatch(f, i);
        esc_policy_name(f, &p[i], i);
    }
    fputs(n ? ".</p>\n" : "none.</p>\n", f);

    put_table(f, p, n);
    put_time_charts(f, p, n);
    int rc = put_cdf_chart(f, p, n, path, eb);
    if (rc == 0)
        rc = put_queues(f, p, n, path, eb);
    if (rc == 0)
        put_racks(f, p, n);
    fputs("<footer>Generated by the gangsched simulator.</footer>\n</body>\n</html>\n", f);

    if (sim_outfile_close(&out, rc == 0, eb) != 0 && rc == 0)
        rc = SCHED_EIO;
    return rc;
}
