/* The link plan (train/linkplan.h): the communication seconds of each mode worked by hand from the ring's
   bytes and messages, and the mode the plan favours for a small and a large model. */
#include "train/linkplan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

/* linkplan_print's "favours" line for p into line */
static void favoured(const LinkPlan* p, char* line, size_t len) {
    FILE* fp = tmpfile();
    linkplan_print(p, fp);
    rewind(fp);
    line[0] = 0;
    char buf[512];
    while (fgets(buf, sizeof(buf), fp))
        if (strstr(buf, "favours")) snprintf(line, len, "%.*s", (int)strcspn(buf, "\n"), buf);
    fclose(fp);
}

/* got within 1e-12 relative of the value by hand: both are a few double operations */
static void expect_s(const char* what, double got, double want) {
    EXPECT(fabs(got - want) <= 1e-12 * want, "%s: %.9g s, by hand %.9g s", what, got, want);
}

int main(void) {
    /* P = 2^20 on 2 ranks at 8 Gb/s (1e9 B/s): the ring sends 2 (N-1)/N P w = 2^20 w bytes per rank in
       2 (N-1) ceil(P / (N 2^18)) = 4 messages of LINKPLAN_LATENCY_S each; ZeRO-1 adds P/2 x 4 bytes in 2 */
    LinkPlan p = {.gbps = 8, .trained = (size_t)1 << 20, .ranks = 2, .compute_s = 1, .sharded = false};
    double lat = LINKPLAN_LATENCY_S, mib4 = 4194304e-9, mib2 = 2097152e-9;
    expect_s("f32, replicated", linkplan_comm_s(&p, 4, 1), mib4 + 4 * lat);
    expect_s("bf16, replicated", linkplan_comm_s(&p, 2, 1), mib2 + 4 * lat);
    expect_s("DiLoCo H=10, f32: a tenth", linkplan_comm_s(&p, 4, 10), (mib4 + 4 * lat) / 10);
    p.sharded = true;
    expect_s("f32, sharded", linkplan_comm_s(&p, 4, 1), mib4 + mib2 + 6 * lat);
    expect_s("DiLoCo ignores sharding", linkplan_comm_s(&p, 4, 10), (mib4 + 4 * lat) / 10);

    /* overlapped with the backward (2/3 of the 1 s compute): 4.6 ms of ring is hidden but for the part summed
       last (a quarter here), the all-gather never; 1e9 parameters at 1 Gb/s (32 s of ring + 8 s of gather
       with 2 x 1908 + 1908 messages) with 10 s of compute: all but 6.67 s of it shows */
    p.overlap = true;
    p.last_share = 0.25;
    expect_s("f32, sharded, overlapped", linkplan_comm_s(&p, 4, 1), (mib4 + 4 * lat) / 4 + mib2 + 2 * lat);
    expect_s("DiLoCo is not overlapped", linkplan_comm_s(&p, 4, 10), (mib4 + 4 * lat) / 10);
    LinkPlan wide = {.gbps = 1, .trained = 1000000000, .ranks = 2, .compute_s = 10, .overlap = true, .last_share = 0.1};
    double ring = 32 + 2 * 1908 * lat;
    expect_s("1e9, 1 Gb/s, overlapped, replicated", linkplan_comm_s(&wide, 4, 1), ring - 10 * 2.0 / 3.0);
    wide.sharded = true;
    expect_s("1e9, 1 Gb/s, overlapped, sharded", linkplan_comm_s(&wide, 4, 1), ring - 10 * 2.0 / 3.0 + 16 + 1908 * lat);
    /* the slowest link that keeps up: where the communication is 10% of the compute; replicated and not
       overlapped, 2^20 parameters' 4 MiB ring + 0.4 ms of latency in 0.1 s: 8 * 4194304 / (0.1 - 4 lat) bits/s */
    p = (LinkPlan){.gbps = 8, .trained = (size_t)1 << 20, .ranks = 2, .compute_s = 1};
    double want = 8 * 4194304 / (0.1 - 4 * lat) / 1e9, got = linkplan_min_gbps(&p, 4, 1);
    EXPECT(got >= want && got <= want * 1.0011, "keeps up from %.6g Gb/s, by hand %.6g", got, want);
    EXPECT(linkplan_comm_s(&(LinkPlan){.gbps = got, .trained = p.trained, .ranks = 2, .compute_s = 1}, 4, 1) <= 0.1,
           "at the slowest link that keeps up, the communication is at most 10%% of the compute");
    p.compute_s = 0.003; /* 4 messages of 100 µs are more than 0.3 ms: no link keeps up */
    EXPECT(isinf(linkplan_min_gbps(&p, 4, 1)), "latency alone above 10%%: %g", linkplan_min_gbps(&p, 4, 1));

    char line[512];
    p = (LinkPlan){.gbps = 8, .trained = (size_t)1 << 20, .ranks = 2, .compute_s = 1};
    favoured(&p, line, sizeof(line)); /* 4.6 ms of 1 s: synchronous f32 keeps up */
    EXPECT(strstr(line, "synchronous, f32") != NULL, "2^20 parameters, 8 Gb/s, 1 s compute: %s", line);
    /* 1e9 parameters over 1 Gb/s: f32 32 s, bf16 16 s, H=50 0.64 s (+ latency) per step: with 10 s of
       compute H=50 is the first under 1 s, with 1 s none is and H=100 is the fastest */
    LinkPlan big = {.gbps = 1, .trained = 1000000000, .ranks = 2, .compute_s = 10, .sharded = false};
    favoured(&big, line, sizeof(line));
    EXPECT(strstr(line, "DiLoCo H=50") != NULL, "1e9 parameters, 1 Gb/s, 10 s compute: %s", line);
    big.compute_s = 1;
    favoured(&big, line, sizeof(line));
    EXPECT(strstr(line, "DiLoCo H=100") != NULL && strstr(line, "none keeps"), "1e9, 1 Gb/s, 1 s compute: %s", line);
    return test_failures ? 1 : 0;
}
