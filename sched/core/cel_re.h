/* sched/core/cel_re.h: the regular expressions of CEL's matches() as Kubernetes evaluates them.
 *
 * cel-go compiles a pattern with Go's regexp package (RE2 syntax); gangsched runs it on POSIX
 * regcomp/regexec (extended syntax) after translating the RE2 syntax, so that a pattern means the
 * same in both or is refused with a message:
 *   \d \D \s \S \w \W (outside and, the positive ones, inside brackets) become bracket
 *     expressions with RE2's ASCII meaning; \t \n \r \f \v \a and \xHH, \x{H...} (ASCII) become
 *     the character; a backslash before punctuation makes it literal (inside brackets too);
 *     \Q...\E is literal text; \A and \z become ^ and $; \b \B are kept (word boundaries)
 *   (?:...), (?P<name>...) and (?<name>...) become plain groups; a leading (?i) makes the whole
 *     pattern case-insensitive (REG_ICASE)
 *   a ? after a repetition (non-greedy) is dropped: matches() asks only whether there is a match
 *   . matches any character but a newline, as RE2's without the s flag
 *   x{n,m} with counts up to 1000 (RE2's limit); a { that starts no repetition is literal
 * Refused, as Go's regexp refuses them or because POSIX has no equivalent: backreferences (\1;
 * glibc would take them and backtrack exponentially), lookarounds, other flags or a (?i) that
 * is not leading, Unicode classes (\p, \P), octal escapes, negated Perl classes inside brackets,
 * nested repetition (a**), invalid escapes. Matching is by byte (the C locale): . and a
 * bracket expression take one byte of a multi-byte UTF-8 character where RE2 takes the
 * character.
 *
 * Owns: the translation and compiling. Must not touch: anything else (pure functions).
 */
#ifndef SCHED_CORE_CEL_RE_H
#define SCHED_CORE_CEL_RE_H

#include <regex.h>

#include "sched/core/err.h"

/* Compiles RE2 pattern `re` into *out (regfree it); 0, or SCHED_EINVAL with a message saying
 * what is wrong (for the caller to prefix), or SCHED_ENOMEM. */
int cel_re_compile(const char *re, regex_t *out, struct sched_errbuf *eb);

#endif
