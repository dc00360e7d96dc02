/* include/collscope/hostlist.h: Slurm hostlist expressions.
 *
 * Syntax accepted by cs_hostlist_expand():
 *   list   := token { sep token }         sep: ',' or whitespace (space, tab, CR, LF);
 *                                          empty tokens ("a,,b", trailing ',') are skipped
 *   token  := { literal | '[' ranges ']' } several bracket groups form a product:
 *                                          r[0-1]n[0-1] -> r0n0 r0n1 r1n0 r1n1
 *   ranges := item { ',' item }            commas inside brackets do not split hosts
 *   item   := NUM | NUM '-' NUM            whitespace around NUM and '-' is ignored
 * A range is printed zero padded to the width of its low bound as written:
 * node[01-04] -> node01..node04, n[8-10] -> n8 n9 n10, n[008-010] -> n008 n009 n010.
 * Literal characters are any printable ASCII except ' ', ',', '[', ']'.
 *
 * Errors (return -1, nothing allocated, *hosts = NULL, *n = 0) carry the 0-based byte
 * offset in the expression and a reason, e.g. "position 4: unbalanced '['":
 * unbalanced brackets, nested '[', empty brackets or range item, reversed range,
 * non-digit in a range, number too large, invalid character, empty hostlist,
 * a host name longer than CS_HOSTLIST_NAME_MAX, more than CS_HOSTLIST_MAX hosts.
 */
#ifndef COLLSCOPE_HOSTLIST_H
#define COLLSCOPE_HOSTLIST_H
#include <stddef.h>

#define CS_HOSTLIST_MAX 1000000u  /* most hosts one expression may expand to */
#define CS_HOSTLIST_NAME_MAX 255u /* longest expanded host name (bytes, w/o NUL) */

/* Expand expr into a malloc'd array of *n malloc'd host names (in expression order,
 * duplicates kept). Returns 0 on success, -1 on error with a message in err (if
 * err != NULL and errlen > 0). Free the result with cs_hostlist_free(). */
int cs_hostlist_expand(const char *expr, char ***hosts, size_t *n, char *err, size_t errlen);

/* Same with a smaller cap: more than max_hosts hosts is an error (0 or a value above
 * CS_HOSTLIST_MAX means CS_HOSTLIST_MAX). For callers that know their bound (a job's
 * rank count) and for fuzzing. */
int cs_hostlist_expand_max(const char *expr, size_t max_hosts, char ***hosts, size_t *n, char *err,
                           size_t errlen);

/* Without building an array: each(name, len, arg) for every host in order (name is
 * NUL terminated, valid during the call; a nonzero return stops with an error), or, with
 * each == NULL, only the count (O(length of expr), nothing allocated per host).
 * *n = hosts delivered or counted. Same syntax, caps and errors as expand. */
int cs_hostlist_each(const char *expr, size_t max_hosts,
                     int (*each)(const char *name, size_t len, void *arg), void *arg, size_t *n,
                     char *err, size_t errlen);

/* Free what cs_hostlist_expand() returned (NULL is fine). */
void cs_hostlist_free(char **hosts, size_t n);

/* Compress host names into a short hostlist expression, like `scontrol show hostlist`:
 * hosts are sorted (by prefix, then numerically), duplicates dropped, and names that
 * differ only in their last run of digits are merged into one bracket group, e.g.
 * {n1,n2,n3,n5,n10} -> "n[1-3,5,10]", {node01,node02} -> "node[01-02]".
 * Expanding the result gives the sorted unique hosts. Returns a malloc'd string,
 * or NULL (errno EINVAL) if a name is empty or holds a character the syntax cannot
 * express (separator, bracket, control or non-ASCII byte), or ENOMEM. */
char *cs_hostlist_compress(const char *const *hosts, size_t n);

#endif
