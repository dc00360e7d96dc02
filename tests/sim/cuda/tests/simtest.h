/* tests/sim/cuda/tests/simtest.h: tiny assertion harness for the CUDA simulator tests.
 * Every CHECK failure is reported with its location; the program exits non-zero at the end
 * (or at once for REQUIRE). */
#ifndef COLLSCOPE_SIMTEST_H
#define COLLSCOPE_SIMTEST_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int simtest_failures;
static int simtest_checks;

#define CHECK(cond) do { simtest_checks++; if (!(cond)) { simtest_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); simtest_checks++; \
    if (a_ != b_) { simtest_failures++; \
    fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, #a, a_, #b, b_); } } while (0)
#define REQUIRE(cond) do { if (!(cond)) { \
    fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond); exit(1); } } while (0)

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

#define RUN(fn) do { int before_ = simtest_failures; fn(); \
    fprintf(stderr, "%-40s %s\n", #fn, simtest_failures == before_ ? "ok" : "FAILED"); } while (0)

static inline int simtest_done(const char *name)
{
    fprintf(stderr, "%s: %d checks, %d failed\n", name, simtest_checks, simtest_failures);
    return simtest_failures ? 1 : 0;
}
#endif
