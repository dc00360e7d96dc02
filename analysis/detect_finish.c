/* analysis/detect_finish.c: a communicator's results after its last instance: its stragglers,
 * the slow-link entry, per-rank figures over the final window; then its hang (detect_hang.c). */
#include "detect_internal.h"

#include <stdlib.h>
#include <string.h>

/* Whether the comm's instances [lo, hi) (buffer indices) are bound by a slow link: its small
 * collectives (<= 64 KiB: latency) take at least link_floor_us at 8 ranks, scaled by the ring
 * steps of an AllReduce (2(n-1)) for n ranks, by CS_DET_NOISE_Z standard errors of their median
 * (1.2533 x 1.4826 x MAD / sqrt(count): the instances' own spread), and the last rank is late by
 * less than 10% of the duration (everyone waited for the network alike). *small, *rel: those two
 * medians. A median at the floor is no evidence of a slow link: a comm with members on a GPU model
 * at half speed takes twice as long at every instance, at 300 us a ring step 87-90 ms for its small
 * collectives at 64 ranks with 10% jitter and a tail against a floor of 90 ms (a link entry in 2
 * of 10 seeds); a slow link's are 410-900 ms there. */
bool cs_det_link_bound(struct cstate *C, const struct cs_det_params *p, size_t lo, size_t hi, double *small,
                       double *rel) {
  struct inst *in = C->in;
  double *scratch = C->scratch;
  size_t ns = 0, nl = 0;
  for (size_t i = lo; i < hi; i++)
    if (in[i].bytes <= 65536) scratch[ns++] = in[i].med;
  *small = cs_det_median(scratch, ns);
  for (size_t j = 0; j < ns; j++) scratch[j] = scratch[j] > *small ? scratch[j] - *small : *small - scratch[j];
  double se = ns ? 1.2533 * 1.4826 * cs_det_median(scratch, ns) / cs_det_sqrt((double)ns) : 0;
  for (size_t i = lo; i < hi; i++) scratch[nl++] = in[i].med > 0 ? in[i].lateness / in[i].med : 0;
  *rel = cs_det_median(scratch, nl);
  double steps = 2.0 * (C->csize - 1) / 14.0;
  return ns >= 2 && *small - CS_DET_NOISE_Z * se >= p->link_floor_us * (steps > 1 ? steps : 1) && *rel < 0.1;
}

/* The comm's results after its last instance: stragglers, a slow-link entry, per-rank
 * figures over the final window, the hang. 0, or -1 out of memory. */
int cs_det_cstate_finish(struct cstate *C, const struct cs_det_params *p, int hang_mode, struct cs_det_result *out,
                         size_t *capS, size_t *capH, size_t *capR) {
  int csize = C->csize;
  struct inst *in = C->in;
  struct ent *ents = C->ents;
  double *scratch = C->scratch;
  size_t nin = C->nin;
  out->instances += C->total;
  out->judged += C->judged;
  for (size_t k = 0; k < C->nstr; k++) {
    GROW(out->stragglers, out->nstragglers, *capS);
    out->stragglers[out->nstragglers] = C->str[k];
    out->stragglers[out->nstragglers++].comm_last_seq = nin ? in[nin - 1].seq : C->str[k].last_flag_seq;
  }
  /* the final window, in buffer indices */
  size_t lo = nin > p->window ? nin - p->window : 0;
  /* slow link: no rank flagged now, everyone equally slow on small messages */
  double small, rel;
  if (!C->any_flagged_now && nin - lo >= p->min_instances && cs_det_link_bound(C, p, lo, nin, &small, &rel)) {
    {
      GROW(out->stragglers, out->nstragglers, *capS);
      struct cs_det_straggler *s = &out->stragglers[out->nstragglers++];
      memset(s, 0, sizeof *s);
      s->comm = C->comm;
      s->comm_size = csize;
      s->comm_rank = s->rank = -1;
      s->kind = CS_DET_LINK;
      s->window_instances = nin - lo;
      size_t mx = 0;
      for (int r = 0; r < csize; r++) {
        size_t c = 0;
        for (size_t i = lo; i < nin; i++) c += in[i].last == r;
        if (c > mx) mx = c;
      }
      s->last = mx;
      s->share_last = (double)mx / (double)(nin - lo);
      s->lateness_us = rel * small;
      s->median_dur_us = small;
      s->gap_us = s->peer_gap_us = -1;
      s->first_flag_instance = C->total;
      s->first_flag_seq = s->last_flag_seq = s->comm_last_seq = in[nin - 1].seq;
    }
  }
  for (int r = 0; r < csize; r++) {
    GROW(out->ranks, out->nranks, *capR);
    struct cs_det_rankstat *st = &out->ranks[out->nranks++];
    memset(st, 0, sizeof *st);
    st->comm = C->comm;
    st->comm_rank = r;
    st->rank = C->mem[r].rank;
    st->host = C->mem[r].host;
    st->instances = nin - lo;
    size_t k = 0;
    for (size_t i = lo; i < nin; i++)
      if (in[i].last == r) scratch[k++] = in[i].lateness;
    st->last = k;
    st->lateness_us = cs_det_median(scratch, k);
    k = 0;
    for (size_t i = lo; i < nin; i++) {
      const struct ent *e = cs_det_find_ent(ents, in[i].e0, in[i].ne, r);
      if (e) scratch[k++] = e->off_us;
    }
    st->offset_us = cs_det_median_mid(scratch, k);
    st->straggler = C->rs[r].flagged_now;
  }

  return cs_det_hang_entry(C, hang_mode, out, capH);
oom:
  return -1;
}
