/* Shared by the C tests: one line per check (OK / NOT OK) with counters,
   tolerance comparisons printed (label, first pairs,
   max abs and rel error, the tolerance), and running code that is expected
   to die in a child process with its output captured. Header-only, so a test
   can be built on its own (make test-asan). */
#ifndef REPOC_TESTUTIL_H
#define REPOC_TESTUTIL_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef OMP
#include <omp.h>
#endif

#include "hf/hf_config.h" /* hf_config_parse, for test_parse_arch */
#include "model/config.h" /* ModelConfig, for test_model_sizes */

static int test_passes, test_failures;

/* print "OK     <message>" or "NOT OK <message>" and count it */
static void report(int ok, const char* fmt, ...) __attribute__((format(printf, 2, 3), unused));
static void report(int ok, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("  %-7s ", ok ? "OK" : "NOT OK");
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    if (ok) test_passes++;
    else test_failures++;
}
#define EXPECT(cond, ...) report((cond) ? 1 : 0, __VA_ARGS__)

/* a test model's sizes in one call; the rest of c stays as it is (model_config_default, usually):
   V vocabulary, D width, L layers, H query heads, KVH key/value heads, F SwiGLU hidden width */
static inline void test_model_sizes(ModelConfig* c, size_t V, size_t D, size_t L, size_t H, size_t KVH, size_t F) {
    c->V = V;
    c->D = D;
    c->L = L;
    c->H = H;
    c->KVH = KVH;
    c->F = F;
}

/* FP32's rounding bound for d products chained one after the other, none longer than K terms, relative to
   the size of what they compute: a float product's result lies within gamma_K = K 2^-24 (to first order) of
   the sum of its terms' magnitudes from the exact value, whatever order a kernel adds them in (Higham,
   "Accuracy and Stability of Numerical Algorithms", 2nd ed., Theorem 3.1 and section 3.5: recursive
   summation's worst case bounds any other order's), and along a chain the first-order errors add. Two
   computations of one value by different kernels (OpenBLAS or oneDNN, one call or rows split, another CPU's
   kernel family) lie within twice that of each other, the elementwise functions between the products (norms,
   exp, SiLU) adding a few 2^-24 each, far below K 2^-24. Tests take it relative to max|ref|, as the BF16
   bounds take 2^-8. */
static inline double fp32_chain_rtol(double d, double K) { return d * K * 0x1p-24; }

/* a small config.json of architecture arch (V 64, D 32, F 48, `layers` layers, H 4, KVH 2) with extra keys
   spliced in, parsed: hf_config_parse's return and message */
static inline int test_parse_arch(const char* arch, size_t layers, const char* extra, ModelConfig* c, char* err,
                                  size_t len) {
    char text[2048];
    snprintf(text, sizeof(text),
             "{\"architectures\": [\"%s\"], \"vocab_size\": 64, \"hidden_size\": 32, \"intermediate_size\": 48, "
             "\"num_hidden_layers\": %zu, \"num_attention_heads\": 4, \"num_key_value_heads\": 2%s%s}",
             arch, layers, extra[0] ? ", " : "", extra);
    return hf_config_parse(text, strlen(text), "config.json", c, err, len);
}

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
        if (!(e <= tol)) bad++; /* NaN counts as bad */
        max_abs = fmax(max_abs, e);
        if (ref[i] != 0) max_rel = fmax(max_rel, e / fabs((double)ref[i]));
    }
    report(bad == 0, "%-58s n=%-6zu max|ref| %.3e  max abs %.2e  max rel %.2e  tol %.2e (%s)", label, n, max_ref,
           max_abs, max_rel, tol, why);
    if (bad)
        for (size_t i = 0; i < n && i < 5; i++)
            printf("            [%zu] got %+.8e ref %+.8e %s\n", i, got[i], ref[i],
                   fabs((double)got[i] - ref[i]) <= tol ? "OK" : "NOT OK");
    return bad == 0;
}

/* doubles, elementwise |got - ref| <= atol + rtol * |ref| (each element against its own reference);
   prints one line with the first pairs, the max errors and the tolerances. Returns 1 on pass. */
static inline int expect_close_each(const char* label, const double* got, const double* ref, size_t n, double atol,
                                    double rtol) {
    double max_abs = 0, max_rel = 0;
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(got[i] - ref[i]);
        ok &= e <= atol + rtol * fabs(ref[i]); /* NaN fails */
        max_abs = fmax(max_abs, e);
        if (ref[i] != 0) max_rel = fmax(max_rel, e / fabs(ref[i]));
    }
    char pairs[128] = "";
    for (size_t i = 0, k = 0; i < n && i < 3 && k < sizeof(pairs); i++)
        k += (size_t)snprintf(pairs + k, sizeof(pairs) - k, " (%.9g, %.9g)", got[i], ref[i]);
    report(ok, "%s: n=%zu%s max abs %.2e rel %.2e (atol %.0e rtol %.0e)", label, n, pairs, max_abs, max_rel, atol,
           rtol);
    return ok;
}

/* Run child(arg) in a forked process with its stdout+stderr captured into out;
   returns its exit status (128+signal when killed). The parent's OpenMP pool
   does not survive fork, so the child runs single-threaded. */
static inline int capture_child(void (*child)(void*), void* arg, char* out, size_t out_len) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
#ifdef OMP
        omp_set_num_threads(1);
#endif
        close(fd[0]);
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        child(arg);
        fflush(stdout);
        _exit(0);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < out_len && (r = read(fd[0], out + n, out_len - 1 - n)) > 0) n += (size_t)r;
    out[n] = 0;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static inline void exec_self(void* argv) {
    execv("/proc/self/exe", (char* const*)argv);
    _exit(127);
}
/* run this test program again with argv (argv[0] its name), output captured */
static inline int run_self_captured(char* const* argv, char* out, size_t out_len) {
    return capture_child(exec_self, (void*)argv, out, out_len);
}

/* the child must exit non-zero and print every one of the NULL-terminated phrases */
static inline void expect_dies_with(const char* label, void (*fn)(void*), void* arg, const char* const* phrases) {
    char out[8192];
    int st = capture_child(fn, arg, out, sizeof(out));
    int ok = st != 0 && st < 128; /* a clean error exit, not a crash */
    ok &= strstr(out, "Sanitizer") == NULL && strstr(out, "runtime error:") == NULL; /* under make test-asan */
    for (const char* const* p = phrases; *p; p++) ok &= strstr(out, *p) != NULL;
    char* nl = strchr(out, '\n');
    if (nl && nl[1] == 0) *nl = 0;
    EXPECT(ok, "%s: exit %d: %s", label, st, out);
}

#endif
