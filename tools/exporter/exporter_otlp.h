/* tools/exporter/exporter_otlp.h: the exporter's metrics pushed to an OpenTelemetry collector
 * over OTLP/HTTP (protobuf): the encoding of the exposition (exporter_otlp.c) and the POST
 * (exporter_otlp_post.c). */
#ifndef COLLSCOPE_TOOLS_EXPORTER_OTLP_H
#define COLLSCOPE_TOOLS_EXPORTER_OTLP_H
#include <stddef.h>
#include <stdint.h>

/* The exporter's Prometheus text exposition (exp_render_buf, not OpenMetrics) as an OTLP
 * ExportMetricsServiceRequest in a malloc'ed buffer of *out_len bytes: points stamped now_ns,
 * cumulative ones started at start_ns, the resource named service.name=collscope and
 * host.name=host. NULL when out of memory or when the text is not an exposition of ours. */
char *exp_otlp_encode(const char *text, size_t len, uint64_t now_ns, uint64_t start_ns, const char *host,
                      size_t *out_len);

/* true when url is http://HOST:PORT/PATH (HOST a name, an IPv4 address or [IPv6]) */
int exp_otlp_url_ok(const char *url);

/* POSTs body (application/x-protobuf) to url within timeout_s seconds. Returns the HTTP
 * status, or -1 with the reason in err. */
int exp_otlp_post(const char *url, const void *body, size_t len, double timeout_s, char *err, size_t errlen);

#endif
