/* tests/tools/test_report_sections.c: the report's table of sections (tools/report/sections.c)
 * is one the report can be built from: every row named, names unique (each is a JSON key),
 * every row printed somewhere (text or JSON), and `report --json` (cli_report_json) holds one
 * key per JSON section with "sections" listing them in the table's order.
 * Argument: a dump file (the fuzz corpus's full.jsonl). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cli.h"
#include "report/report.h"

static const char *dump_path;

static void test_table_rows(void **state) {
  (void)state;
  assert_true(report_nsections > 0);
  for (size_t i = 0; i < report_nsections; i++) {
    const struct report_section *s = report_sections[i];
    assert_non_null(s);
    assert_non_null(s->name);
    assert_true(s->name[0] != '\0');
    assert_true(s->text || s->json); /* a row that prints nothing is a mistake */
    for (size_t k = 0; k < i; k++) assert_string_not_equal(report_sections[k]->name, s->name);
  }
  assert_string_equal(report_sections[0]->name, "summary"); /* the text report's title line */
}

static void test_json_follows_table(void **state) {
  (void)state;
  int status = -1;
  json_t *doc = cli_report_json(dump_path, NULL, NULL, 1, &status);
  assert_non_null(doc);
  assert_int_equal(status, 0);
  json_t *names = json_object_get(doc, "sections");
  assert_true(json_is_array(names));
  size_t k = 0;
  for (size_t i = 0; i < report_nsections; i++) {
    const struct report_section *s = report_sections[i];
    if (!s->json) {
      assert_null(json_object_get(doc, s->name));
      continue;
    }
    assert_true(k < json_array_size(names));
    assert_string_equal(json_string_value(json_array_get(names, k)), s->name);
    assert_non_null(json_object_get(doc, s->name));
    k++;
  }
  assert_int_equal(k, json_array_size(names));
  /* schema, dir, sections, and one key per JSON section: nothing else */
  assert_int_equal(json_object_size(doc), 3 + k);
  json_decref(doc);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  dump_path = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_rows),
      cmocka_unit_test(test_json_follows_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
