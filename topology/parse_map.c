/* topology/parse_map.c: the plain map, `host leaf [spine [core ...]]` per line (the host
 * may be a hostlist); a switch keeps its level and parent on every line. */
#include <stdio.h>
#include <string.h>

#include "collscope/hostlist.h"
#include "topo_internal.h"

int parse_map(struct ctx *c, const char *text, size_t len) {
  struct cs_topo *t = c->t;
  struct lines L;
  if (split_lines(c, text, len, 0, 0, &L)) return -1;
  int rc = 0;
  for (size_t i = 0; i < L.n && !rc; i++) {
    char *tok[CS_TOPO_MAX_LEVELS + 1];
    int nt = 0, no = L.v[i].no;
    char *save = NULL;
    for (char *p = strtok_r(L.v[i].s, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
      if (nt == CS_TOPO_MAX_LEVELS) {
        rc = ferr(c, no, "more than %d switch levels (expected 'host leaf [spine [core ...]]')", CS_TOPO_MAX_LEVELS - 1);
        break;
      }
      tok[nt++] = p;
    }
    if (rc || nt == 0) continue;
    if (nt < 2) {
      rc = ferr(c, no, "expected 'host leaf [spine [core ...]]', got only '%.80s'", tok[0]);
      break;
    }
    int ids[CS_TOPO_MAX_LEVELS];
    for (int k = 1; k < nt && !rc; k++) {
      if (strlen(tok[k]) > CS_HOSTLIST_NAME_MAX) {
        rc = ferr(c, no, "switch name longer than %u bytes", CS_HOSTLIST_NAME_MAX);
        break;
      }
      int s = cs_topo_switch_index(t, tok[k]);
      if (s < 0) {
        s = add_switch(t, tok[k], no);
        if (s < 0) {
          rc = ferr(c, no, "out of memory");
          break;
        }
        t->sw[s].level = k; /* position in the path, checked below */
      } else if (t->sw[s].level != k) {
        rc = ferr(c, no, "'%s' is a level-%d switch at line %d but level %d here", tok[k], t->sw[s].level, t->sw[s].line, k);
        break;
      }
      for (int q = 1; q < k && !rc; q++)
        if (ids[q] == s) rc = ferr(c, no, "switch '%s' appears twice in one path", tok[k]);
      ids[k] = s;
    }
    for (int k = 1; k < nt && !rc; k++) {
      int s = ids[k], want = k + 1 < nt ? ids[k + 1] : -1;
      if (t->sw[s].line != no && t->sw[s].parent != want) {
        rc = ferr(c, no, "'%s' is under '%s' at line %d but under '%s' here", tok[k],
                  t->sw[s].parent >= 0 ? t->sw[t->sw[s].parent].name : "(nothing)", t->sw[s].line,
                  want >= 0 ? t->sw[want].name : "(nothing)");
        break;
      }
      t->sw[s].parent = want;
    }
    if (rc) break;
    rc = add_host_list(c, no, "host", tok[0], ids[1], 1);
  }
  if (!rc && t->nhost == 0) rc = ferr(c, 0, "no hosts (expected lines 'host leaf [spine ...]')");
  free_lines(&L);
  return rc;
}
