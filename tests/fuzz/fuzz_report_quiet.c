/* tests/fuzz/fuzz_report_quiet.c: cmd_report with stdout/stderr to /dev/null, restored after. */
#include "fuzz_report_quiet.h"

#include <stdio.h>
#include <unistd.h>

#include "cli.h"

void fuzz_report_quiet(char **argv) {
  int argc = 0;
  while (argv[argc]) argc++;
  fflush(stdout);
  fflush(stderr);
  int so = dup(1), se = dup(2);
  FILE *dn = fopen("/dev/null", "w");
  if (dn && so >= 0 && se >= 0) {
    dup2(fileno(dn), 1);
    dup2(fileno(dn), 2);
    cmd_report(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
  }
  if (dn) fclose(dn);
  if (so >= 0) close(so);
  if (se >= 0) close(se);
}
