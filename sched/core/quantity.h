/* sched/core/quantity.h: Kubernetes resource quantities.
 *
 * Owns: parsing and formatting of the quantity strings Kubernetes accepts ("500m", "16Gi", "1.5",
 * "2e3", "1k", "+.5", "1E-3"), following apimachinery's resource.Quantity grammar:
 *
 *   quantity  ::= signedNumber suffix
 *   suffix    ::= binarySI (Ki Mi Gi Ti Pi Ei) | decimalSI (n u m "" k M G T P E)
 *               | decimalExponent (e|E followed by a signed integer)
 *   number    ::= digits | digits.digits | digits. | .digits
 *
 * Values are exact: the result is value * 10^scale rounded up toward +infinity, exactly as
 * Quantity.ScaledValue(-scale) does (scale 3 gives millicores for cpu; scale 0 gives bytes or
 * counts). Touches no global state.
 */
#ifndef SCHED_CORE_QUANTITY_H
#define SCHED_CORE_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

#include "sched/core/err.h"

/* Parses `s` (NUL-terminated, no surrounding spaces) into *out = ceil(q * 10^scale), scale in
 * 0..9. Returns 0, SCHED_EINVAL for a malformed string, SCHED_ERANGE when the result does not
 * fit in int64. On error `eb` names the bad string and what is wrong with it; *out is untouched. */
int qty_parse(const char *s, int scale, int64_t *out, struct sched_errbuf *eb);

/* Formats value * 10^-scale for humans: binary suffixes for byte-like values when exact
 * (16Gi), "500m" for fractional cpu, plain integers otherwise. Returns the length written
 * (snprintf semantics). Whole values never get a decimal suffix (2000 at scale 3 is "2");
 * fractional values use the Kubernetes canonical sub-unit form, never a decimal point (1500 at
 * scale 3 is "1500m", not "1.5"), unless that form would overflow int64. The output always parses
 * back to `value` with qty_parse at the same scale. */
int qty_format(int64_t value, int scale, int binary, char *buf, size_t n);

#endif
