/* tests/fuzz/fuzz_report_quiet.h: runs `collscope report` with its stdout and stderr sent to
 * /dev/null, for the fuzz targets that drive the whole report (fuzz_dumpfile.c,
 * fuzz_dumpset.c). */
#ifndef COLLSCOPE_FUZZ_REPORT_QUIET_H
#define COLLSCOPE_FUZZ_REPORT_QUIET_H

/* argv: NULL-terminated, argv[0] the command name ("report") */
void fuzz_report_quiet(char **argv);

#endif
