/* sched/k8s/names.h: Kubernetes' name rules, one place for every reader of names: the
 * configuration's namespaces and LocalQueues (config/load_values.c) and the nodes of a
 * reservation the HTTP API takes (sched/http/routes.c).
 *
 * Owns: k8s_dns_label, k8s_dns_subdomain, K8S_LABEL_RULE. Must not touch: anything else (pure).
 */
#ifndef SCHED_K8S_NAMES_H
#define SCHED_K8S_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* The rule of a label, as error messages state it. */
#define K8S_LABEL_RULE                                                                             \
    "lowercase letters, digits and '-', at most 63, a letter or digit first and last"

/* s[0..n) is a DNS-1123 label (a namespace's name): 1 to 63 of [a-z0-9-], a letter or digit at
 * both ends. */
bool k8s_dns_label(const char *s, size_t n);

/* s[0..n) is a DNS-1123 subdomain (an object's name: a Node, a LocalQueue): labels joined by
 * '.', at most 253 bytes. */
bool k8s_dns_subdomain(const char *s, size_t n);

#endif
