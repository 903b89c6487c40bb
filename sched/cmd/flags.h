/* sched/cmd/flags.h: the table-driven flag parser of the commands (gangsched simulate, run,
 * serve; gangctl), and their --help from the same table.
 *
 * A command describes its flags once, as a static table of struct flag (long name, short name,
 * kind, destination: a member of the command's options struct, help text); flags_parse() reads
 * argv against it into the options and flags_help() prints it. The shell completions and the
 * man pages are made from --help or from the same table.
 *
 * Accepted forms: --name VALUE, --name=VALUE; -x VALUE, -xVALUE, -x=VALUE (a short flag that
 * takes a value); --name for a bool (or --name=true|false). Errors name the flag and the value:
 * an unknown flag (with "did you mean" when a flag is close), a missing or empty value, a value
 * out of range or not one of an enum's names, a flag given twice (repeatable flags excepted).
 *
 * Owns: argv reading and --help layout. Must not touch: what the values mean (the commands).
 */
#ifndef SCHED_CMD_FLAGS_H
#define SCHED_CMD_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum flag_kind {
    FLAG_SECTION = 0, /* no flag: a heading line of --help (help) */
    FLAG_BOOL,        /* bool: no value (or =true|false); with .arg, a value true|false needed */
    FLAG_INT,         /* whole number in [imin, imax]: uint32_t or uint64_t (by .size) */
    FLAG_DOUBLE,      /* number in [min, max]: double */
    FLAG_STRING,      /* const char *: the argument itself */
    FLAG_DURATION,    /* a time; a bare number counts .unit_ms per unit; in [min, max] units;
                         stored in ms: uint32_t or int64_t (by .size) */
    FLAG_ENUM,        /* one of .choices (NULL-terminated): its index, in an int */
    FLAG_REPEATED,    /* const char *dst[.max_count], *count of them used */
    FLAG_FUNC,        /* .fn(value, dst, err, n) checks and stores (0, or -1 with err) */
};

/* .attrs */
#define FLAG_STOP     1u /* parsing stops after it (--help: no error for what follows) */
#define FLAG_HIDDEN   2u /* accepted, not listed (an alias) */
#define FLAG_EMPTY_OK 4u /* an empty value is a value ("--listen ''": none) */
#define FLAG_MANY     8u /* may be given more than once (implied by FLAG_REPEATED) */

struct flag {
    const char *name; /* "--seed"; NULL: a heading (help), or the end of the table (no help) */
    char short_name;  /* 'v' for -v, or 0 */
    enum flag_kind kind;
    size_t off;       /* the destination: its offset in the command's options (FLAG_AT) */
    size_t size;      /* its size (FLAG_INT, FLAG_DURATION) */
    const char *arg;  /* the value's name in --help ("FILE", "N") */
    const char *help; /* '\n' separates lines */
    uint64_t imin, imax;
    double min, max;
    double unit_ms;   /* FLAG_DURATION: ms per unit of a bare number */
    const char *unit; /* FLAG_DURATION, FLAG_DOUBLE: the unit's name in errors ("ms") */
    const char *const *choices;
    size_t count_off; /* FLAG_REPEATED: offset of the int count of values (FLAG_COUNT) */
    int max_count;
    /* FLAG_FUNC: checks and stores value in the options; 0, or -1 with err. */
    int (*fn)(const char *value, void *opts, char *err, size_t n);
    size_t given; /* offset + 1 of a bool set when the flag is given (FLAG_GIVEN), or 0 */
    unsigned attrs;
};

/* The destination of a row: member of the options struct type. */
#define FLAG_AT(type, member)    .off = offsetof(type, member), .size = sizeof(((type *)0)->member)
#define FLAG_COUNT(type, member) .count_off = offsetof(type, member)
#define FLAG_GIVEN(type, member) .given = offsetof(type, member) + 1

/* -h, --help: sets the bool member and ends the parsing. */
#define FLAGS_HELP(type, member)                                                                   \
    {                                                                                              \
        .name = "--help", .short_name = 'h', .kind = FLAG_BOOL, FLAG_AT(type, member),             \
        .attrs = FLAG_STOP, .help = "this help"                                                    \
    }
#define FLAGS_END                                                                                  \
    {                                                                                              \
        .name = NULL, .help = NULL                                                                 \
    }
#define FLAGS_SECTION(text)                                                                        \
    {                                                                                              \
        .name = NULL, .kind = FLAG_SECTION, .help = (text)                                         \
    }

/* What flags_parse reads: the table, the options its rows point into, and positional
 * arguments (NULL pos: none accepted). */
struct flag_parse {
    const struct flag *flags;
    void *opts;
    const char **pos; /* positional arguments, in order, between the flags too; "--" ends flags */
    int max_pos;
    int *n_pos;
};

/* Reads argv[0..argc) against p->flags. Returns 0, 1 when a FLAG_STOP flag was read (the rest
 * is not read), or -1 with the error in err (no program name, e.g. "unknown flag '--frob'"). */
int flags_parse(const struct flag_parse *p, int argc, char **argv, char *err, size_t n);

/* Prints the table's flags, the help text starting at column col (a longer flag moves it right,
 * two spaces after the flag). */
void flags_help(FILE *f, const struct flag *flags, int col);

/* The one place flags read durations: a bare number counts unit_ms per unit ("30" with unit_ms
 * 1000: 30 s); with a unit suffix ("90s", "10m", "1h30m", "250ms"), the duration grammar of
 * sched/core (annot_duration today; switch here when the single grammar lands). 0 or -1. */
int flags_duration(const char *v, double unit_ms, double *ms);

#endif
