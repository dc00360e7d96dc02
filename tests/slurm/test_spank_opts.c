/* tests/slurm/test_spank_opts.c: the SPANK plugin's pieces that need no Slurm: the
 * --collscope option list and plugstack.conf arguments, the directory template, LD_PRELOAD
 * and the job directory walk (planted symbolic links, foreign and open parents). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collscope/slurm_node.h"
#include "cs_jobdir.h"
#include "cs_node_record.h"
#include "cs_spank_opts.h"

static const char *var(const struct cs_spank_job *j, const char *name) {
  size_t l = strlen(name);
  for (size_t i = 0; i < j->nvars; i++)
    if (!strncmp(j->vars[i], name, l) && j->vars[i][l] == '=') return j->vars[i] + l + 1;
  return NULL;
}

static void test_options(void **st) {
  (void)st;
  struct cs_spank_job j;
  char err[768];
  assert_int_equal(cs_spank_job_parse(&j, "sdc=all,timing=events,topology=/etc/topo.conf,hang=60", err, sizeof err), 0);
  assert_string_equal(var(&j, "COLLSCOPE_SDC"), "all");
  assert_string_equal(var(&j, "COLLSCOPE_TIMING"), "events");
  assert_string_equal(var(&j, "COLLSCOPE_TOPOLOGY"), "/etc/topo.conf");
  assert_string_equal(var(&j, "COLLSCOPE_HANG_TIMEOUT"), "60");
  assert_int_equal(j.nvars, 4);
  assert_int_equal(cs_spank_job_parse(&j, "sdc=sample:64,dir=/scratch/%u/%j", err, sizeof err), 0);
  assert_string_equal(var(&j, "COLLSCOPE_SDC"), "sample:64");
  assert_int_equal(j.nvars, 1);
  assert_string_equal(j.dir, "/scratch/%u/%j");
  assert_int_equal(cs_spank_job_parse(&j, NULL, err, sizeof err), 0);
  assert_true(j.given && !j.off && j.nvars == 0);
  assert_int_equal(cs_spank_job_parse(&j, "off", err, sizeof err), 0);
  assert_true(j.off);

  assert_int_equal(cs_spank_job_parse(&j, "bogus=1", err, sizeof err), -1);
  assert_non_null(strstr(err, "unknown key 'bogus'"));
  assert_non_null(strstr(err, "sdc")); /* the keys it knows */
  assert_int_equal(cs_spank_job_parse(&j, "sdc=most", err, sizeof err), -1);
  assert_non_null(strstr(err, "bad value 'most' for sdc"));
  static const char *const bad[] = {"sdc=sample:0", "sdc=sample:x", "timing=fast", "hang=-1", "hang=1e3",
                                    "ring=99999999", "online=yes", "log=loud", "sdc", "dir=/a/%x", "dir=", "sdc_action=kill"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    assert_int_equal(cs_spank_job_parse(&j, bad[i], err, sizeof err), -1);
    assert_true(err[0] != 0);
  }
}

/* the bare flag in every form Slurm hands it: on, with defaults */
static void test_bare_flag(void **st) {
  (void)st;
  struct cs_spank_job j;
  char err[768];
  static const char *const bare[] = {"(null)", "", "on"};
  for (size_t i = 0; i < sizeof bare / sizeof bare[0]; i++) {
    err[0] = 0;
    assert_int_equal(cs_spank_job_parse(&j, bare[i], err, sizeof err), 0);
    assert_true(j.given && !j.off && j.nvars == 0 && j.dir[0] == 0);
  }
  assert_int_equal(cs_spank_job_parse(&j, NULL, err, sizeof err), 0);
  assert_true(j.given && !j.off);
}

/* a key given twice and empty items are refused, naming what is wrong */
static void test_duplicates_and_empty_items(void **st) {
  (void)st;
  struct cs_spank_job j;
  char err[768];
  assert_int_equal(cs_spank_job_parse(&j, "sdc=all,sdc=off", err, sizeof err), -1);
  assert_string_equal(err, "sdc is given twice (each key at most once)");
  assert_int_equal(cs_spank_job_parse(&j, "dir=/a/%j,timing=off,dir=/b/%j", err, sizeof err), -1);
  assert_non_null(strstr(err, "dir is given twice"));
  static const char *const empty[] = {",", "sdc=all,", ",sdc=all", "sdc=all,,timing=off", ",,"};
  for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
    err[0] = 0;
    assert_int_equal(cs_spank_job_parse(&j, empty[i], err, sizeof err), -1);
    assert_non_null(strstr(err, "an empty item"));
  }
}

/* an error shows at most 64 bytes of the value, then its length */
static void test_error_shows_64_bytes(void **st) {
  (void)st;
  char big[10241], shown[CS_SPANK_SHOW_MAX + 32], err[768];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  memcpy(big, "sdc=", 4);
  assert_string_equal(cs_spank_opts_show(big, shown, sizeof shown),
                      "sdc=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... (10240 bytes)");
  assert_string_equal(cs_spank_opts_show("sdc=all", shown, sizeof shown), "sdc=all");
  assert_string_equal(cs_spank_opts_show("a\nb", shown, sizeof shown), "a?b");
  struct cs_spank_job j;
  assert_int_equal(cs_spank_job_parse(&j, big, err, sizeof err), -1);
  assert_true(strlen(err) < 200);
  big[2000] = 0; /* fits the list, one bad value of 1996 bytes */
  assert_int_equal(cs_spank_job_parse(&j, big, err, sizeof err), -1);
  assert_true(strlen(err) < 200);
}

static void test_site(void **st) {
  (void)st;
  struct cs_spank_site s;
  struct cs_spank_job j;
  char err[512];
  cs_spank_site_init(&s);
  assert_string_equal(s.shim, CS_SPANK_DEFAULT_SHIM);
  assert_int_equal(cs_spank_site_arg(&s, "shim=/opt/cs/libcollscope.so", err, sizeof err), 0);
  assert_int_equal(cs_spank_site_arg(&s, "dir=/shared/collscope/%u/%j", err, sizeof err), 0);
  assert_int_equal(cs_spank_site_arg(&s, "group=hpcops", err, sizeof err), 0);
  assert_int_equal(cs_spank_site_arg(&s, "default=maybe", err, sizeof err), -1);
  assert_int_equal(cs_spank_site_arg(&s, "color=red", err, sizeof err), -1);
  assert_int_equal(cs_spank_site_arg(&s, "dir=/x/%q", err, sizeof err), -1);
  memset(&j, 0, sizeof j);
  assert_false(cs_spank_job_enabled(&s, &j)); /* not asked, site default off */
  assert_int_equal(cs_spank_site_arg(&s, "default=on", err, sizeof err), 0);
  assert_true(cs_spank_job_enabled(&s, &j));
  assert_int_equal(cs_spank_job_parse(&j, "off", err, sizeof err), 0);
  assert_false(cs_spank_job_enabled(&s, &j)); /* the job says off */
}

static void test_expand_preload(void **st) {
  (void)st;
  char out[64];
  assert_int_equal(cs_spank_expand("/shared/cs/%u/%j.%s-100%%", "42", "alice", "3", out, sizeof out), 0);
  assert_string_equal(out, "/shared/cs/alice/42.3-100%");
  assert_int_equal(cs_spank_expand("/x/%u", "42", "../root", "0", out, sizeof out), -1); /* never a way up */
  assert_int_equal(cs_spank_expand("/x/%u", "42", "..", "0", out, sizeof out), -1);
  assert_int_equal(cs_spank_expand("/x/%", "42", "a", "0", out, sizeof out), -1);
  assert_int_equal(cs_spank_expand("/a-very-long-directory-name-that-does-not-fit/%j", "4242", "a", "0", out, 20), -1);
  char pre[256];
  assert_int_equal(cs_spank_preload("/l/libcollscope.so", NULL, pre, sizeof pre), 0);
  assert_string_equal(pre, "/l/libcollscope.so");
  assert_int_equal(cs_spank_preload("/l/libcollscope.so", "/a.so /l/libcollscope.so:/b.so", pre, sizeof pre), 0);
  assert_string_equal(pre, "/l/libcollscope.so:/a.so:/b.so");
  assert_int_equal(cs_spank_preload("/l/libcollscope.so", "/a.so", pre, 20), -1);
}

static char base[256];

static void test_jobdir(void **st) {
  (void)st;
  char path[512], err[512];
  struct stat sb;
  /* a fresh path with missing parents: made, the leaf 0700 whatever the umask */
  mode_t old = umask(0);
  snprintf(path, sizeof path, "%s/shared/cs/42", base);
  assert_int_equal(cs_jobdir_make(path, (gid_t)-1, err, sizeof err), 0);
  umask(old);
  assert_int_equal(lstat(path, &sb), 0);
  assert_true(S_ISDIR(sb.st_mode));
  assert_int_equal(sb.st_mode & 07777, 0700);
  /* again (the job's second step): accepted */
  assert_int_equal(cs_jobdir_make(path, (gid_t)-1, err, sizeof err), 0);
  /* a group: 0750 and that group */
  snprintf(path, sizeof path, "%s/shared/cs/43", base);
  assert_int_equal(cs_jobdir_make(path, getegid(), err, sizeof err), 0);
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(sb.st_mode & 07777, 0750);
  assert_int_equal(sb.st_gid, getegid());

  /* a symbolic link planted as the job directory: refused, its target untouched */
  char target[512], link[512];
  snprintf(target, sizeof target, "%s/victim", base);
  assert_int_equal(mkdir(target, 0755), 0);
  snprintf(link, sizeof link, "%s/shared/cs/44", base);
  assert_int_equal(symlink(target, link), 0);
  assert_int_equal(cs_jobdir_make(link, (gid_t)-1, err, sizeof err), -1);
  assert_non_null(strstr(err, "symbolic link"));
  assert_int_equal(stat(target, &sb), 0);
  assert_int_equal(sb.st_mode & 07777, 0755);
  /* ... or as a parent on the way */
  char viaparent[512];
  snprintf(link, sizeof link, "%s/shared/evil", base);
  assert_int_equal(symlink(target, link), 0);
  snprintf(viaparent, sizeof viaparent, "%s/shared/evil/45", base);
  assert_int_equal(cs_jobdir_make(viaparent, (gid_t)-1, err, sizeof err), -1);
  snprintf(path, sizeof path, "%s/victim/45", base);
  assert_int_equal(access(path, F_OK), -1); /* nothing made through the link */

  /* a parent anyone may write to without the sticky bit: refused; sticky: accepted */
  snprintf(path, sizeof path, "%s/open", base);
  assert_int_equal(mkdir(path, 0777), 0);
  assert_int_equal(chmod(path, 0777), 0);
  snprintf(path, sizeof path, "%s/open/46", base);
  assert_int_equal(cs_jobdir_make(path, (gid_t)-1, err, sizeof err), -1);
  assert_non_null(strstr(err, "not sticky"));
  snprintf(path, sizeof path, "%s/open", base);
  assert_int_equal(chmod(path, 01777), 0);
  snprintf(path, sizeof path, "%s/open/46", base);
  assert_int_equal(cs_jobdir_make(path, (gid_t)-1, err, sizeof err), 0);
  /* a file where the directory should be */
  snprintf(path, sizeof path, "%s/open/file", base);
  int fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(cs_jobdir_make(path, (gid_t)-1, err, sizeof err), -1);
  /* '..' is never walked */
  snprintf(path, sizeof path, "%s/open/../victim/47", base);
  assert_int_equal(cs_jobdir_make(path, (gid_t)-1, err, sizeof err), -1);
}

/* the node record: created 0444 in the job directory, filled once, only with a plain node
 * name; a name already taken (a file or link the user planted) is refused, never followed */
static void test_node_record(void **st) {
  (void)st;
  char path[512], err[512], buf[256];
  snprintf(path, sizeof path, "%s/rec/9", base);
  int dfd = cs_jobdir_open(path, (gid_t)-1, err, sizeof err);
  assert_true(dfd >= 0);
  int fd = cs_node_record_create(dfd, "3", err, sizeof err);
  assert_true(fd >= 0);
  assert_int_equal(cs_node_record_fill(fd, "9", "3", "node07", 1001, 4242, err, sizeof err), 0);
  fd = cs_node_record_create(dfd, "3", err, sizeof err); /* the same step, node and pid: taken */
  assert_int_equal(fd, -1);
  assert_non_null(strstr(err, "cannot create the node record"));
  int ok = 0;
  DIR *d = fdopendir(dup(dfd));
  for (struct dirent *e; d && (e = readdir(d));) {
    if (strncmp(e->d_name, CS_NODE_RECORD_PREFIX "3.", strlen(CS_NODE_RECORD_PREFIX) + 2) != 0) continue;
    struct stat sb;
    assert_int_equal(fstatat(dfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW), 0);
    assert_int_equal(sb.st_mode & 07777, 0444);
    int rfd = openat(dfd, e->d_name, O_RDONLY);
    ssize_t n = read(rfd, buf, sizeof buf - 1);
    close(rfd);
    assert_true(n > 0);
    buf[n] = 0;
    assert_string_equal(buf, CS_NODE_RECORD_MAGIC "\njob=9\nstep=3\nnode=node07\nuid=1001\npid=4242\n");
    ok++;
  }
  if (d) closedir(d);
  assert_int_equal(ok, 1);
  /* ALL, a hostlist expression, nothing: no record is filled */
  static const char *const bad[] = {"ALL", "all", "n[1-4]", "a,b", "", "-x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char step[8];
    snprintf(step, sizeof step, "%zu", 10 + i);
    fd = cs_node_record_create(dfd, step, err, sizeof err);
    assert_true(fd >= 0);
    assert_int_equal(cs_node_record_fill(fd, "9", step, bad[i], 1001, 4242, err, sizeof err), -1);
  }
  fd = cs_node_record_create(dfd, "20", err, sizeof err);
  assert_int_equal(cs_node_record_fill(fd, "9", "20", NULL, 1001, 4242, err, sizeof err), -1);
  close(dfd);
}

int main(void) {
  snprintf(base, sizeof base, "/tmp/cs-spank-test.XXXXXX");
  if (!mkdtemp(base)) return 1;
  chmod(base, 0755);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_bare_flag),
      cmocka_unit_test(test_duplicates_and_empty_items),
      cmocka_unit_test(test_error_shows_64_bytes),
      cmocka_unit_test(test_site),
      cmocka_unit_test(test_expand_preload),
      cmocka_unit_test(test_jobdir),
      cmocka_unit_test(test_node_record),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
  return rc;
}
