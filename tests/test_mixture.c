/* Tests of weighted data mixtures (data/mixture.c) and the WSD schedule
   (optim/schedule.c). Two raw .u16 sources with disjoint token ranges, so a
   row's tokens say which source it came from:
   - proportions: over 10k rows (625 steps of 16) each source's share is
     within 3 standard deviations of a multinomial draw (the dealing is in
     fact exact to a few rows; that is checked too);
   - exact resume and data-parallel slicing: a step's rows come out the same
     from a freshly opened mixture, and split over calls as in one call;
   - sequential order reads each source's windows in order, and the pass
     count says when a source wraps;
   - bad input: weight <= 0 or not finite, no files, a name twice, an unknown key;
   - wsd: warmup, stable, linear and 1-sqrt decay values, and decay_fraction. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "data/mixture.h"
#include "optim/schedule.h"
#include "tests/testutil.h"

static char dir[64];
static char path_a[128], path_b[128];
#define NA 20000 /* source a: tokens 0..99 */
#define NB 3000  /* source b: tokens 100..199, small: it wraps */
#define T 16
#define R 16

static void write_u16(const char* path, size_t n, unsigned base) {
    FILE* fp = fopenCheck(path, "wb");
    for (size_t i = 0; i < n; i++) {
        uint16_t v = (uint16_t)(base + i % 100);
        fwriteCheck(&v, sizeof v, 1, fp, path);
    }
    fcloseCheck(fp, path);
}

/* the mixture {"a": wa, "b": wb}, opened */
static int open_mix(Mixture* mx, double wa, double wb) {
    char text[512], err[256];
    snprintf(text, sizeof text,
             "[{\"name\": \"a\", \"files\": [\"%s\"], \"weight\": %g},"
             " {\"name\": \"b\", \"files\": \"%s\", \"weight\": %g}]",
             path_a, wa, path_b, wb);
    cJSON* j = cJSON_Parse(text);
    int r = mixture_parse(mx, j, "data.train", err, sizeof err);
    cJSON_Delete(j);
    if (r) {
        printf("  unexpected error: %s\n", err);
        return r;
    }
    mixture_open(mx, "data.train", "auto", 256, T);
    return 0;
}

static void test_proportions(void) {
    Mixture mx;
    if (open_mix(&mx, 0.7, 0.3)) {
        report(0, "open");
        return;
    }
    static int32_t x[R * T], y[R * T];
    uint8_t src[R];
    size_t rows = 0, from_b = 0, agree = 0;
    for (size_t s = 0; s < 625; s++) {
        mixture_rows(&mx, &(RowRequest){ORDER_SHUFFLE, 7, s, R, 0, R, T}, x, y, src);
        for (size_t r = 0; r < R; r++, rows++) {
            bool b = x[r * T] >= 100; /* the tokens say where the row came from */
            from_b += b;
            agree += (b == (src[r] == 1));
        }
    }
    double p = 0.3, sd = sqrt(rows * p * (1 - p));
    EXPECT(agree == rows, "every row's tokens come from the source it was dealt to (%zu of %zu)", agree, rows);
    EXPECT(fabs((double)from_b - rows * p) <= 3 * sd, "source b: %zu of %zu rows, expected %.0f +- %.0f (3 sd)", from_b,
           rows, rows * p, 3 * sd);
    size_t worst = 0;
    for (uint64_t G = 0; G <= 10000; G++) { /* the deal is exact to within a row at every prefix */
        uint64_t a = mixture_count(&mx, 0, G), b = mixture_count(&mx, 1, G);
        size_t e = (size_t)fabs((double)a - 0.7 * G);
        if (a + b != G) worst = 1000;
        if (e > worst) worst = e;
    }
    EXPECT(worst <= 1, "C_a(G) + C_b(G) = G and |C_a(G) - 0.7 G| <= 1 for every G <= 10000 (worst %zu)", worst);
    mixture_close(&mx);

    /* three sources, uneven weights: each share within 3 sd over 10k rows */
    char text[512], err[256];
    snprintf(text, sizeof text,
             "[{\"name\": \"x\", \"files\": [\"%s\"], \"weight\": 5},"
             "{\"name\": \"y\", \"files\": [\"%s\"], \"weight\": 3}, {\"name\": \"z\", \"files\": [\"%s\"], "
             "\"weight\": 2}]",
             path_a, path_b, path_a);
    cJSON* j = cJSON_Parse(text);
    EXPECT(mixture_parse(&mx, j, "data.train", err, sizeof err) == 0, "three sources parse");
    cJSON_Delete(j);
    mixture_open(&mx, "data.train", "auto", 256, T);
    size_t n[3] = {0};
    for (uint64_t g = 0; g < 10000; g++) {
        uint64_t i;
        n[mixture_slot(&mx, g, &i)]++;
    }
    const double share[3] = {0.5, 0.3, 0.2};
    for (int k = 0; k < 3; k++)
        EXPECT(fabs(n[k] - 1e4 * share[k]) <= 3 * sqrt(1e4 * share[k] * (1 - share[k])),
               "three sources: %s got %zu of 10000 rows (share %.1f)", mx.src[k].name, n[k], share[k]);
    mixture_close(&mx);

    /* weights whose sum overflows a double: still dealt evenly (the infinite sum dealt 0% / 100%) */
    if (open_mix(&mx, 1e308, 1e308)) {
        report(0, "open");
        return;
    }
    EXPECT(mx.src[0].share == 0.5 && mx.src[1].share == 0.5 && mixture_count(&mx, 0, 1000) == 500 &&
               mixture_count(&mx, 1, 1000) == 500,
           "weights [1e308, 1e308]: shares %g / %g, 1000 rows dealt %llu / %llu", mx.src[0].share, mx.src[1].share,
           (unsigned long long)mixture_count(&mx, 0, 1000), (unsigned long long)mixture_count(&mx, 1, 1000));
    mixture_close(&mx);
}

static void test_resume_and_split(DataOrder order, const char* label) {
    Mixture m1, m2;
    if (open_mix(&m1, 0.7, 0.3) || open_mix(&m2, 0.7, 0.3)) {
        report(0, "open");
        return;
    }
    static int32_t x1[R * T], y1[R * T], x2[R * T], y2[R * T];
    bool same = true, split = true;
    for (size_t s = 0; s < 200; s += 7) {
        mixture_rows(&m1, &(RowRequest){order, 3, s, R, 0, R, T}, x1, y1, NULL);
        /* a resumed run: a new mixture asked for step s first */
        mixture_rows(&m2, &(RowRequest){order, 3, s, R, 0, R, T}, x2, y2, NULL);
        same &= !memcmp(x1, x2, sizeof x1) && !memcmp(y1, y2, sizeof y1);
        /* four ranks of 4 rows, rows 4r..4r+3 each */
        for (size_t r = 0; r < 4; r++)
            mixture_rows(&m2, &(RowRequest){order, 3, s, R, 4 * r, 4, T}, x2 + 4 * r * T, y2 + 4 * r * T, NULL);
        split &= !memcmp(x1, x2, sizeof x1) && !memcmp(y1, y2, sizeof y1);
    }
    EXPECT(same, "%s: a step's rows from a fresh mixture equal the first one's (exact resume)", label);
    EXPECT(split, "%s: rows split over 4 calls equal one call (data-parallel slicing)", label);
    mixture_close(&m1);
    mixture_close(&m2);
}

static void test_sequential(void) {
    Mixture mx;
    if (open_mix(&mx, 0.7, 0.3)) {
        report(0, "open");
        return;
    }
    /* source b's i-th row starts at token (i T) mod NB of its stream: its first token is 100 + (i T mod NB) mod 100 */
    static int32_t x[R * T], y[R * T];
    uint8_t src[R];
    bool in_order = true, targets = true;
    for (size_t s = 0; s < 100; s++) {
        mixture_rows(&mx, &(RowRequest){ORDER_SEQUENTIAL, 1, s, R, 0, R, T}, x, y, src);
        for (size_t r = 0; r < R; r++) {
            uint64_t g_lo = (uint64_t)s * R, i = 0;
            /* the row's index within its source: find its slot among the step's */
            for (uint64_t g = g_lo; g < g_lo + R; g++) {
                uint64_t idx;
                size_t k = mixture_slot(&mx, g, &idx);
                size_t N = k ? NB : NA;
                if (k == src[r] && x[r * T] == (int32_t)((k ? 100 : 0) + idx * T % N % 100)) {
                    i = 1;
                    break;
                }
            }
            in_order &= i == 1;
            targets &= y[r * T] == x[r * T + 1];
        }
    }
    EXPECT(in_order, "sequential: every row is its source's next window (i T mod N)");
    EXPECT(targets, "sequential: targets are the inputs shifted by one");
    /* b gets ~0.3 of 16 rows a step, 16 tokens each: its 3000 tokens last ~39 steps */
    uint64_t p38 = mixture_pass(&mx, 1, 38 * R, T), p40 = mixture_pass(&mx, 1, 40 * R, T);
    EXPECT(mixture_pass(&mx, 1, 0, T) == 0 && p38 == 1 && p40 == 2,
           "source b (3000 tokens): pass 1 up to step 38, pass 2 by step 40 (got %llu, %llu)", (unsigned long long)p38,
           (unsigned long long)p40);
    mixture_close(&mx);
}

static void expect_error(const char* label, const char* list, const char* want) {
    Mixture mx;
    char err[512] = "";
    cJSON* j = cJSON_Parse(list);
    int r = mixture_parse(&mx, j, "data.train", err, sizeof err);
    mixture_close(&mx);
    cJSON_Delete(j);
    EXPECT(r != 0 && strstr(err, want), "%s: \"%s\"", label, err);
}

static void test_errors(void) {
    expect_error("weight 0", "[{\"name\": \"a\", \"files\": [\"x\"], \"weight\": 0}]",
                 "data.train[0].weight: expected a finite number > 0");
    expect_error("weight < 0",
                 "[{\"name\": \"a\", \"files\": [\"x\"], \"weight\": 1}, "
                 "{\"name\": \"b\", \"files\": [\"x\"], \"weight\": -2}]",
                 "data.train[1].weight");
    expect_error("weight not finite", "[{\"name\": \"a\", \"files\": [\"x\"], \"weight\": 1e999}]",
                 "data.train[0].weight: expected a finite number > 0");
    expect_error("weight a string", "[{\"name\": \"a\", \"files\": [\"x\"], \"weight\": \"NaN\"}]",
                 "data.train[0].weight");
    expect_error("no files", "[{\"name\": \"a\", \"files\": [], \"weight\": 1}]",
                 "data.train[0].files: source 'a' has no files");
    expect_error("files missing", "[{\"name\": \"a\", \"weight\": 1}]", "source 'a' has no files");
    expect_error("name twice", "[{\"name\": \"a\", \"files\": [\"x\"]}, {\"name\": \"a\", \"files\": [\"y\"]}]",
                 "data.train[1].name: source name 'a' given twice");
    expect_error("no name", "[{\"files\": [\"x\"]}]", "data.train[0].name");
    expect_error("unknown key", "[{\"name\": \"a\", \"files\": [\"x\"], \"wieght\": 1}]",
                 "data.train[0].wieght: unknown key");
    expect_error("exhausted", "[{\"name\": \"a\", \"files\": [\"x\"], \"exhausted\": \"loop\"}]",
                 "data.train[0].exhausted: expected \"wrap\" or \"stop\"");
}

static void test_wsd(void) {
    OptimConfig c;
    optim_config_default(&c);
    c.schedule = SCHED_WSD;
    c.lr = 1.0;
    c.min_lr = 0.1;
    c.warmup_steps = 10;
    c.decay_steps = 20; /* N = 100: stable on steps 10..79, decay on 80..99 */
    double w = lr_at(&c, 4, 100), st = lr_at(&c, 79, 100), d1 = lr_at(&c, 80, 100), mid = lr_at(&c, 89, 100),
           last = lr_at(&c, 99, 100);
    EXPECT(w == 0.5 && st == 1.0, "wsd: warmup lr(4) = 0.5, stable lr(79) = 1 (got %g, %g)", w, st);
    EXPECT(fabs(d1 - (1.0 - 0.9 * 0.05)) < 1e-15 && fabs(mid - 0.55) < 1e-15 && fabs(last - 0.1) < 1e-15,
           "wsd linear: lr(80) = 0.955, lr(89) = 0.55, lr(99) = min_lr 0.1 (got %.17g, %.17g, %.17g)", d1, mid, last);
    c.decay_shape = DECAY_SQRT;
    double s89 = lr_at(&c, 89, 100);
    EXPECT(fabs(s89 - (0.1 + 0.9 * (1 - sqrt(0.5)))) < 1e-15 && lr_at(&c, 99, 100) == 0.1,
           "wsd 1-sqrt: lr(89) = 0.1 + 0.9 (1 - sqrt(1/2)) = %.6f, lr(99) = 0.1", s89);
    c.decay_steps = 0;
    c.decay_fraction = 0.25; /* D = 25 of 100: decay from step 75 */
    c.decay_shape = DECAY_LINEAR;
    EXPECT(lr_at(&c, 74, 100) == 1.0 && lr_at(&c, 75, 100) < 1.0,
           "wsd decay_fraction 0.25: stable to step 74, decaying from 75");
    /* extending the run while stable: lr(s) is the same stable lr, the decay moves to the new end */
    EXPECT(lr_at(&c, 74, 200) == 1.0 && lr_at(&c, 149, 200) == 1.0 && lr_at(&c, 150, 200) < 1.0,
           "wsd extended to 200 steps: stable to 149, decaying from 150");
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/repoc_mixture_XXXXXX");
    CHECK(mkdtemp(dir), "mkdtemp failed");
    snprintf(path_a, sizeof path_a, "%s/a.u16", dir);
    snprintf(path_b, sizeof path_b, "%s/b.u16", dir);
    write_u16(path_a, NA, 0);
    write_u16(path_b, NB, 100);
    printf("mixture proportions\n");
    test_proportions();
    printf("exact resume and slicing\n");
    test_resume_and_split(ORDER_SHUFFLE, "shuffle");
    test_resume_and_split(ORDER_SEQUENTIAL, "sequential");
    printf("sequential order and passes\n");
    test_sequential();
    printf("bad sources\n");
    test_errors();
    printf("wsd schedule\n");
    test_wsd();
    unlink(path_a);
    unlink(path_b);
    rmdir(dir);
    printf("%d passed, %d failed\n", test_passes, test_failures);
    return test_failures != 0;
}
