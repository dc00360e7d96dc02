/* tools/suspects_record.c: one node record's text (include/collscope/slurm_node.h) checked
 * and parsed, byte for byte; its own file so that the fuzz target (tests/fuzz) links it
 * alone. */
#include <string.h>

#include "collscope/slurm_node.h"
#include "suspects_nodes.h"

/* "key=VALUE\n" at *p: VALUE into out (1..cap-1 bytes, no control byte), p moved past it */
static bool field(const char **p, const char *end, const char *key, char *out, size_t cap) {
  size_t kl = strlen(key);
  if ((size_t)(end - *p) < kl + 1 || memcmp(*p, key, kl) != 0 || (*p)[kl] != '=') return false;
  const char *v = *p + kl + 1, *nl = memchr(v, '\n', (size_t)(end - v));
  if (!nl || nl == v || (size_t)(nl - v) >= cap) return false;
  for (const char *c = v; c < nl; c++)
    if ((unsigned char)*c < 0x21 || *c == 0x7f) return false;
  memcpy(out, v, (size_t)(nl - v));
  out[nl - v] = 0;
  *p = nl + 1;
  return true;
}

/* a decimal number of 1..10 digits without a leading zero (or "0"), its value into *v */
static bool number(const char *s, long long *v) {
  size_t n = strlen(s);
  if (n == 0 || n > 10 || (n > 1 && s[0] == '0')) return false;
  *v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    *v = *v * 10 + (*s - '0');
  }
  return true;
}

bool sn_record_parse(const char *text, size_t len, struct sn_record *out) {
  const char *p = text, *end = text + len;
  size_t ml = strlen(CS_NODE_RECORD_MAGIC);
  if (len > CS_NODE_RECORD_MAX || len < ml + 1 || memcmp(p, CS_NODE_RECORD_MAGIC, ml) != 0 || p[ml] != '\n') return false;
  p += ml + 1;
  if (!field(&p, end, "job", out->job, sizeof out->job) || !field(&p, end, "step", out->step, sizeof out->step) ||
      !field(&p, end, "node", out->node, sizeof out->node) || !field(&p, end, "uid", out->uid, sizeof out->uid) ||
      !field(&p, end, "pid", out->pid, sizeof out->pid) || p != end)
    return false;
  return cs_node_name_ok(out->node) && number(out->uid, &out->uidn) && number(out->pid, &out->pidn) && out->pidn > 0;
}
