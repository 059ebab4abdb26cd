/* Shared by the C tests: tolerance comparisons printed the STYLE.md §8 way
   (label, first pairs OK/NOT OK, max abs and rel error, the tolerance). */
#ifndef REPOC_TESTUTIL_H
#define REPOC_TESTUTIL_H

#include <math.h>
#include <stdio.h>

static int test_failures;

#define EXPECT(cond, ...)                                              \
    do {                                                               \
        int ok_ = (cond);                                              \
        printf("  %-7s ", ok_ ? "OK" : "NOT OK");                      \
        printf(__VA_ARGS__);                                           \
        printf("\n");                                                  \
        test_failures += !ok_;                                         \
    } while (0)

/* elementwise |got - ref| <= atol + rtol_of_max * max|ref|; prints one line (and the first
   pairs when it fails). Returns 1 on pass. */
static inline int expect_close(const char* label, const float* got, const float* ref, size_t n, double atol,
                               double rtol_of_max, const char* why) {
    double max_ref = 0, max_abs = 0, max_rel = 0;
    for (size_t i = 0; i < n; i++) max_ref = fmax(max_ref, fabs((double)ref[i]));
    double tol = atol + rtol_of_max * max_ref;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]);
        if (!(e <= tol)) bad++;   /* NaN counts as bad */
        max_abs = fmax(max_abs, e);
        if (ref[i] != 0) max_rel = fmax(max_rel, e / fabs((double)ref[i]));
    }
    printf("  %-7s %-58s n=%-6zu max|ref| %.3e  max abs %.2e  max rel %.2e  tol %.2e (%s)\n", bad ? "NOT OK" : "OK",
           label, n, max_ref, max_abs, max_rel, tol, why);
    if (bad)
        for (size_t i = 0; i < n && i < 5; i++)
            printf("            [%zu] got %+.8e ref %+.8e %s\n", i, got[i], ref[i],
                   fabs((double)got[i] - ref[i]) <= tol ? "OK" : "NOT OK");
    test_failures += bad > 0;
    return bad == 0;
}

#endif

#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/threads.h"

/* Run fn(arg) in a child process (so a function that dies can be tested),
   capturing its stdout+stderr into out. Returns the child's exit status
   (128+signal if it was killed). */
static inline int run_captured(void (*fn)(void*), void* arg, char* out, size_t out_len) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        /* the parent's OpenMP pool did not survive fork: run single-threaded here */
        threads_init(1);
        close(fd[0]);
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        fn(arg);
        fflush(stdout);
        _exit(0);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while ((r = read(fd[0], out + n, out_len - 1 - n)) > 0 && n + 1 < out_len) n += (size_t)r;
    out[n] = 0;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* the child must exit non-zero and print every one of the NULL-terminated phrases */
static inline void expect_dies_with(const char* label, void (*fn)(void*), void* arg, const char* const* phrases) {
    char out[8192];
    int st = run_captured(fn, arg, out, sizeof(out));
    int ok = st != 0 && st < 128;   /* a clean error exit, not a crash */
    ok &= strstr(out, "Sanitizer") == NULL && strstr(out, "runtime error:") == NULL;   /* under make test-asan */
    for (const char* const* p = phrases; *p; p++) ok &= strstr(out, *p) != NULL;
    char* nl = strchr(out, '\n');
    if (nl && nl[1] == 0) *nl = 0;
    EXPECT(ok, "%s: exit %d: %s", label, st, out);
}
