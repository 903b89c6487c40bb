/* sched/k8s/names.c: Kubernetes' name rules (see names.h). */
#include "sched/k8s/names.h"

/* dots: labels joined by '.' (a subdomain, at most 253 bytes); else one label. */
static bool dns_name(const char *s, size_t len, bool dots)
{
    if (len == 0 || len > (dots ? 253u : 63u))
        return false;
    for (size_t i = 0, run = 0; i < len; i++, run++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        bool edge = i == 0 || i + 1 == len || (dots && (s[i - 1] == '.' || s[i + 1] == '.'));
        if (dots && c == '.') {
            if (run == 0 || i + 1 == len)
                return false;
            run = (size_t)-1; /* the next label starts */
        } else if (!(alnum || (c == '-' && !edge)) || run >= 63) {
            return false;
        }
    }
    return true;
}

bool k8s_dns_label(const char *s, size_t n)
{
    return dns_name(s, n, false);
}

bool k8s_dns_subdomain(const char *s, size_t n)
{
    return dns_name(s, n, true);
}
