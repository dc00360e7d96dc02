/* tools/trace/trace_perfetto_none.c: `collscope trace --format perfetto` when collscope is built
 * without protobuf-c (tools/meson.build): the format is absent, and the command says so. */
#include "trace.h"

const struct trace_emit *trace_emit_perfetto(void) { return NULL; }
