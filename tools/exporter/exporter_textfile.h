/* tools/exporter/exporter_textfile.h: collscope.prom for node_exporter's textfile collector. */
#ifndef COLLSCOPE_TOOLS_EXPORTER_TEXTFILE_H
#define COLLSCOPE_TOOLS_EXPORTER_TEXTFILE_H
#include <stddef.h>
#include <stdio.h>

#define EXP_TEXTFILE_NAME "collscope.prom"

/* Write TEXT to DIR/collscope.prom atomically: a new temporary in DIR (O_CREAT|O_EXCL, so
 * never through a link), written, flushed to disk, made world-readable, then renamed over
 * the old file (rename replaces a link, never follows it). Returns 0, or -1 with one line
 * on LOG. */
int exp_textfile_write(const char *dir, const char *text, size_t len, FILE *log);

#endif
