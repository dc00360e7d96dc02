/* tools/exporter/exporter_http.h: the exporter's HTTP endpoint (/metrics) on libmicrohttpd. */
#ifndef COLLSCOPE_TOOLS_EXPORTER_HTTP_H
#define COLLSCOPE_TOOLS_EXPORTER_HTTP_H
#include <stddef.h>

#include "exporter_state.h"

struct exp_http;

/* Listen on LISTEN ("HOST:PORT", "[V6]:PORT"; port 0 picks a free one) and serve S. Returns
 * NULL with a message in ERR when it cannot. *port gets the bound port. */
struct exp_http *exp_http_start(const char *listen, struct exp_state *s, int *port, char *err, size_t errlen);
void exp_http_stop(struct exp_http *h);

/* Split "HOST:PORT" / "[V6]:PORT" into a numeric socket address (no name lookups).
 * Returns 0, or -1 with ERR set. */
struct sockaddr_storage;
int exp_parse_listen(const char *listen, struct sockaddr_storage *sa, unsigned *salen, char *err, size_t errlen);

#endif
