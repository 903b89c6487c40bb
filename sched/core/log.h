/* sched/core/log.h: level-gated logfmt logging to stderr.
 *
 * Owns: the process log level. Arguments are not evaluated when the level is off. The pure core
 * never logs; drivers and commands do.
 */
#ifndef SCHED_CORE_LOG_H
#define SCHED_CORE_LOG_H

enum log_level { LOG_LEVEL_ERROR = 0, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

extern enum log_level log_threshold;

void log_write(enum log_level level, const char *mod, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define LOG_AT(level, mod, ...)                                                                    \
    do {                                                                                           \
        if ((level) <= log_threshold)                                                              \
            log_write((level), (mod), __VA_ARGS__);                                                \
    } while (0)
#define LOG_ERROR(mod, ...) LOG_AT(LOG_LEVEL_ERROR, mod, __VA_ARGS__)
#define LOG_WARN(mod, ...)  LOG_AT(LOG_LEVEL_WARN, mod, __VA_ARGS__)
#define LOG_INFO(mod, ...)  LOG_AT(LOG_LEVEL_INFO, mod, __VA_ARGS__)
#define LOG_DEBUG(mod, ...) LOG_AT(LOG_LEVEL_DEBUG, mod, __VA_ARGS__)

#endif
