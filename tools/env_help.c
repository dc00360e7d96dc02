/* tools/env_help.c: the help texts' table of every environment variable collscope, its
 * launcher and its simulator read, printed from include/collscope/env_vars.def. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* every variable collscope, its launcher and its simulator read, from the one table that
 * the docs are checked against (tests/tools/check_env_table.py) */
static const struct {
  const char *name, *def, *who, *meaning;
} env_table[] = {
#define CS_ENV_VAR(name, def, who, meaning) {name, def, who, meaning},
#include "collscope/env_vars.def"
#undef CS_ENV_VAR
};

/* text on lines of at most width columns after a 6-space indent, broken at spaces */
static void put_wrapped(FILE *out, const char *text, size_t width) {
  while (*text) {
    size_t n = strlen(text);
    if (n > width) {
      n = width;
      while (n > 0 && text[n] != ' ') n--;
      if (n == 0) n = strcspn(text, " "); /* one word longer than the line */
    }
    fprintf(out, "      %.*s\n", (int)n, text);
    text += n;
    while (*text == ' ') text++;
  }
}

void cli_help_env(FILE *out) {
  fprintf(out, "environment (variable, default, [who reads it]):\n");
  for (size_t i = 0; i < sizeof env_table / sizeof env_table[0]; i++) {
    fprintf(out, "  %-32s default: %s  [%s]\n", env_table[i].name, env_table[i].def, env_table[i].who);
    put_wrapped(out, env_table[i].meaning, 88);
  }
}
