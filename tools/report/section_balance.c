/* tools/report/section_balance.c: the report's "balance" section: per rank the compute time
 * per step, the data-parallel shares and pipeline layer counts that equalise it, the step time
 * they predict, and whether a slow rank is a node to fix or a slower GPU to balance. The
 * figures are gathered during the instance walk (r->agg->balance, tools/report/report_balance.c);
 * the model is made here, after the health section's build (it reads r->health). */
#include "report.h"
#include "report_balance.h"

static void build_balance(struct report *r) {
  report_balance_finish(r->agg ? r->agg->balance : NULL, r->set, r->health, r->layers, r->nlayers, r->shares,
                        r->nshares);
}
static void text_balance(const struct report *r, FILE *o) { report_balance_text(r->agg ? r->agg->balance : NULL, o); }
static json_t *json_balance(const struct report *r) { return report_balance_json(r->agg ? r->agg->balance : NULL); }

const struct report_section report_section_balance = {"balance", build_balance, text_balance, json_balance, NULL};
