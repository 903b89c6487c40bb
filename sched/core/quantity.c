/* sched/core/quantity.c: Kubernetes quantity parsing and formatting (see quantity.h).
 *
 * Owns: the exact decimal arithmetic behind qty_parse. A quantity is read as sign * M * 10^e10 *
 * 2^e2 where M is the digit string with the decimal point removed; M * 2^e2 is computed exactly in
 * a small little-endian decimal digit array (at most 256 input digits times 2^60), after which the
 * power of ten only moves the decimal point: the integer part is read off the high digits and any
 * non-zero low digit means a fraction, which rounds the result up toward +infinity. No floating
 * point, no global state.
 */
#include "sched/core/quantity.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define QTY_MAX_LEN   256     /* longest accepted input, in bytes */
#define QTY_EXP_CLAMP 1000000 /* |decimal exponent| saturates here; far beyond any int64 */
#define QTY_DIGITS    320     /* 256 input digits + 19 for 2^60 + headroom */
#define QTY_QUOTE     160     /* bytes of escaped input quoted in an error message */

/* 10^k for k in 0..19 (10^19 still fits in uint64). */
static uint64_t pow10u(int k)
{
    uint64_t p = 1;
    while (k-- > 0)
        p *= 10;
    return p;
}

struct qty_suffix {
    const char *text;
    int exp10; /* decimal SI: power of ten */
    int exp2;  /* binary SI: power of two */
};

static const struct qty_suffix qty_suffixes[] = {
    {"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},
    {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
    {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Parses the suffix starting at `sfx`; sets *exp10 and *exp2. Returns NULL or a reason. */
static const char *parse_suffix(const char *sfx, long *exp10, int *exp2)
{
    for (size_t i = 0; i < sizeof(qty_suffixes) / sizeof(qty_suffixes[0]); i++) {
        if (strcmp(sfx, qty_suffixes[i].text) == 0) {
            *exp10 = qty_suffixes[i].exp10;
            *exp2 = qty_suffixes[i].exp2;
            return NULL;
        }
    }
    if (sfx[0] != 'e' && sfx[0] != 'E')
        return "unknown suffix";
    const char *p = sfx + 1;
    bool neg = false;
    if (*p == '+' || *p == '-') {
        neg = *p == '-';
        p++;
    }
    if (!is_digit(*p))
        return "exponent has no digits";
    long e = 0;
    for (; is_digit(*p); p++) {
        if (e < QTY_EXP_CLAMP)
            e = e * 10 + (*p - '0');
    }
    if (*p != '\0')
        return "unknown suffix";
    if (e > QTY_EXP_CLAMP)
        e = QTY_EXP_CLAMP;
    *exp10 = neg ? -e : e;
    *exp2 = 0;
    return NULL;
}

/* d[0..*nd) *= 2^exp2 (exp2 a multiple of 10, at most 60), little-endian decimal digits. */
static void mul_pow2(unsigned char *d, size_t *nd, int exp2)
{
    for (int k = 0; k < exp2; k += 10) {
        unsigned carry = 0;
        for (size_t j = 0; j < *nd; j++) {
            unsigned x = d[j] * 1024u + carry;
            d[j] = (unsigned char)(x % 10);
            carry = x / 10;
        }
        while (carry) {
            d[(*nd)++] = (unsigned char)(carry % 10);
            carry /= 10;
        }
    }
}

int qty_parse(const char *s, int scale, int64_t *out, struct sched_errbuf *eb)
{
    if (!s)
        return sched_fail(eb, SCHED_EINVAL, "invalid quantity: no string");
    size_t len = strnlen(s, QTY_MAX_LEN + 1);
    char q[QTY_QUOTE];
    sched_quote(s, len, q, sizeof(q));
    if (scale < 0 || scale > 9)
        return sched_fail(eb, SCHED_EINVAL, "invalid quantity \"%s\": scale %d is not in 0..9", q,
                          scale);
    if (len == 0)
        return sched_fail(eb, SCHED_EINVAL, "invalid quantity \"\": empty string");
    if (len > QTY_MAX_LEN)
        return sched_fail(eb, SCHED_EINVAL, "invalid quantity \"%s\": longer than %d characters", q,
                          QTY_MAX_LEN);
    if (is_space(s[0]) || is_space(s[len - 1]))
        return sched_fail(eb, SCHED_EINVAL, "invalid quantity \"%s\": surrounding whitespace", q);

    size_t i = 0;
    bool neg = false;
    if (s[i] == '+' || s[i] == '-') {
        neg = s[i] == '-';
        i++;
    }
    size_t int_start = i;
    while (is_digit(s[i]))
        i++;
    size_t int_end = i, frac_start = i, frac_end = i;
    if (s[i] == '.') {
        frac_start = ++i;
        while (is_digit(s[i]))
            i++;
        frac_end = i;
    }
    if (int_end == int_start && frac_end == frac_start)
        return sched_fail(eb, SCHED_EINVAL, "invalid quantity \"%s\": no digits before the suffix",
                          q);
    if (s[i] == '.')
        return sched_fail(eb, SCHED_EINVAL, "invalid quantity \"%s\": more than one decimal point",
                          q);

    long exp10 = 0;
    int exp2 = 0;
    const char *why = parse_suffix(s + i, &exp10, &exp2);
    if (why) {
        char sq[QTY_QUOTE];
        sched_quote(s + i, len - i, sq, sizeof(sq));
        return sched_fail(eb, SCHED_EINVAL, "invalid quantity \"%s\": %s \"%s\"", q, why, sq);
    }

    /* M as little-endian digits: fraction digits reversed, then integer digits. */
    unsigned char d[QTY_DIGITS];
    size_t nd = 0;
    for (size_t j = frac_end; j > frac_start; j--)
        d[nd++] = (unsigned char)(s[j - 1] - '0');
    for (size_t j = int_end; j > int_start; j--)
        d[nd++] = (unsigned char)(s[j - 1] - '0');
    while (nd > 0 && d[nd - 1] == 0)
        nd--;
    if (nd == 0) {
        *out = 0;
        return 0;
    }
    mul_pow2(d, &nd, exp2);

    /* value = d * 10^shift; |shift| is bounded by QTY_EXP_CLAMP + 9 + 256. */
    long shift = exp10 + scale - (long)(frac_end - frac_start);
    uint64_t mag = 0;
    bool frac = false;
    bool range = false;
    if (shift >= 0) {
        if ((long)nd + shift > 19) {
            range = true;
        } else {
            for (size_t j = nd; j > 0; j--)
                mag = mag * 10 + d[j - 1];
            mag *= pow10u((int)shift);
        }
    } else if ((size_t)-shift >= nd) {
        frac = true; /* 0 < |value| < 1 */
    } else {
        size_t low = (size_t)-shift;
        if (nd - low > 19) {
            range = true;
        } else {
            for (size_t j = nd; j > low; j--)
                mag = mag * 10 + d[j - 1];
            for (size_t j = 0; j < low && !frac; j++)
                frac = d[j] != 0;
        }
    }

    /* Round toward +infinity: up for positive values, truncation for negative ones. */
    int64_t v = 0;
    if (!range && !neg) {
        if (mag > (uint64_t)INT64_MAX || (frac && mag == (uint64_t)INT64_MAX))
            range = true;
        else
            v = (int64_t)(mag + (frac ? 1 : 0));
    } else if (!range) {
        if (mag > (uint64_t)INT64_MAX + 1)
            range = true;
        else if (mag == (uint64_t)INT64_MAX + 1)
            v = INT64_MIN;
        else
            v = -(int64_t)mag;
    }
    if (range)
        return sched_fail(eb, SCHED_ERANGE,
                          "quantity \"%s\" out of range: does not fit in 64 bits at scale %d", q,
                          scale);
    *out = v;
    return 0;
}

/* Formatting rules (also summarised in quantity.h):
 *   whole value, binary     largest exact binary suffix: 17179869184 -> "16Gi", 3072 -> "3Ki";
 *                           1536 is not a whole number of Ki, so it stays "1536"
 *   whole value otherwise   plain integer: "64", "2" (2000 at scale 3)
 *   fractional value        integer with the largest exact sub-unit suffix m, u or n, the form
 *                           Kubernetes canonicalises to: 1500 at scale 3 -> "1500m", 1 at scale 9
 *                           -> "1n"; a plain decimal ("922337203685477580.7") only when the
 *                           sub-unit form would not fit in int64
 *   scale outside 0..9      "<value>e<-scale>" (never produced for valid callers)
 * qty_parse(qty_format(v, scale, b), scale) == v for every v and scale in 0..9. */
int qty_format(int64_t value, int scale, int binary, char *buf, size_t n)
{
    if (!buf)
        n = 0;
    if (scale < 0 || scale > 9)
        return snprintf(buf, n, "%llde%lld", (long long)value, -(long long)scale);

    int64_t p = (int64_t)pow10u(scale);
    if (value % p == 0) {
        int64_t w = value / p;
        if (binary && w != 0) {
            static const char *const bin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
            int k = 0;
            while (k < 6 && w % ((int64_t)1 << (10 * (k + 1))) == 0)
                k++;
            return snprintf(buf, n, "%lld%s", (long long)(w / ((int64_t)1 << (10 * k))), bin[k]);
        }
        return snprintf(buf, n, "%lld", (long long)w);
    }

    static const struct {
        const char *text;
        int exp10;
    } sub[] = {{"m", 3}, {"u", 6}, {"n", 9}};
    for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
        int t = sub[i].exp10 - scale; /* w = value * 10^t */
        if (t < 0) {
            int64_t d = (int64_t)pow10u(-t);
            if (value % d == 0)
                return snprintf(buf, n, "%lld%s", (long long)(value / d), sub[i].text);
            continue;
        }
        int64_t m = (int64_t)pow10u(t);
        if (value <= INT64_MAX / m && value >= INT64_MIN / m)
            return snprintf(buf, n, "%lld%s", (long long)(value * m), sub[i].text);
    }

    uint64_t mag = value < 0 ? 0 - (uint64_t)value : (uint64_t)value;
    uint64_t ip = mag / (uint64_t)p, fp = mag % (uint64_t)p;
    int width = scale;
    while (fp % 10 == 0) { /* fp != 0: value is not a whole number here */
        fp /= 10;
        width--;
    }
    return snprintf(buf, n, "%s%llu.%0*llu", value < 0 ? "-" : "", (unsigned long long)ip, width,
                    (unsigned long long)fp);
}
