/* Data-parallel communication (common/dist.h): MPI_COMM_WORLD under
   -DREPOC_MPI, rank 0 of 1 otherwise. */
#include "common/dist.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/bf16.h"
#include "common/check.h"

#ifdef REPOC_MPI
#include <mpi.h>
#endif

static int g_rank = 0, g_world = 1, g_local = 1;
static size_t g_bytes_sent; /* bytes this rank handed to MPI's send side (dist_bytes_sent) */

int dist_rank(void) { return g_rank; }
int dist_world(void) { return g_world; }
int dist_local_world(void) { return g_local; }
size_t dist_bytes_sent(void) { return g_bytes_sent; }

void dist_share(size_t n, int rank, int world, size_t* lo, size_t* hi) {
    size_t w = (size_t)world, r = (size_t)rank, q = n / w, extra = n % w;
    *lo = r * q + (r < extra ? r : extra);
    *hi = *lo + q + (r < extra);
}

#ifdef REPOC_MPI

#ifdef REPOC_F64
#define MPI_REAL_T MPI_DOUBLE
#else
#define MPI_REAL_T MPI_FLOAT
#endif
#define CHUNK ((size_t)1 << 30)      /* elements per call: MPI counts are int */
#define RING_PIECE ((size_t)1 << 18) /* reals per message of the ring all-reduce (1 MiB in float) */

/* set up once by dist_init, so that no collective allocates: the ring's
   receive buffer, and per-rank counts and displacements */
static real* g_piece;
static bf16 *g_wire_out, *g_wire_in; /* the BF16 ring's send and receive pieces */
static size_t *g_counts, *g_displs;
static int *g_icounts, *g_idispls;
static int g_thread_level; /* what MPI_Init_thread provided */
/* set in the overlap thread only: its ring messages are waited on by testing and sleeping (below) */
static _Thread_local bool t_polling;
static atomic_bool g_overlap_waited_on; /* the main thread waits in dist_overlap_wait: stop sleeping */

void dist_abort(int code) {
    fflush(stdout);
    fflush(stderr);
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down) MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

void dist_init(int* argc, char*** argv) {
    int provided = 0;
    /* SERIALIZED: the overlap thread calls MPI while the main thread does not (dist_overlap_begin .. wait) */
    if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "error: MPI_Init_thread failed\n");
        exit(1);
    }
    g_thread_level = provided;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_world);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &g_local);
    MPI_Comm_free(&local);
    g_piece = mallocCheck(RING_PIECE * sizeof(real));
    g_wire_out = mallocCheck(RING_PIECE * sizeof(bf16));
    g_wire_in = mallocCheck(RING_PIECE * sizeof(bf16));
    g_counts = mallocCheck((size_t)g_world * sizeof(size_t));
    g_displs = mallocCheck((size_t)g_world * sizeof(size_t));
    g_icounts = mallocCheck((size_t)g_world * sizeof(int));
    g_idispls = mallocCheck((size_t)g_world * sizeof(int));
    static char prefix[64];
    snprintf(prefix, sizeof(prefix), "rank %d of %d, ", g_rank, g_world);
    die_set_handler(g_world > 1 ? prefix : "", dist_abort); /* one rank's error stops them all */
    CHECK(provided >= MPI_THREAD_FUNNELED, "MPI provides thread level %d, repoc needs MPI_THREAD_FUNNELED (%d)",
          provided, MPI_THREAD_FUNNELED);
}

static void overlap_stop(void);

void dist_finalize(void) {
    overlap_stop(); /* before MPI_Finalize: the thread may be in an MPI call */
    MPI_Finalize();
    free(g_piece);
    free(g_wire_out);
    free(g_wire_in);
    free(g_counts);
    free(g_displs);
    free(g_icounts);
    free(g_idispls);
}

/* the int count of one rank's share, or die naming the limit */
static int int_count(size_t n, const char* what) {
    CHECK(n <= INT_MAX, "%s: %zu elements on one rank; MPI counts stop at %d (use more ranks)", what, n, INT_MAX);
    return (int)n;
}

/* One exchange of a ring: ns elements of `elem` bytes to the next rank, nr from the previous one; the bytes
   sent are counted (dist_bytes_sent) */
static void ring_exchange(const void* send, size_t ns, void* recv, size_t nr, MPI_Datatype type, size_t elem) {
    int next = (g_rank + 1) % g_world, prev = (g_rank + g_world - 1) % g_world;
    int cs = int_count(ns, "ring piece"), cr = int_count(nr, "ring piece");
    if (!t_polling) {
        MPI_Sendrecv(send, cs, type, next, 0, recv, cr, type, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else { /* Open MPI moves a message only inside MPI calls: test, and sleep between tests while the cores
                compute; once the main thread waits for the sums, wait as the blocking call does */
        MPI_Request rq[2];
        MPI_Irecv(recv, cr, type, prev, 0, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(send, cs, type, next, 0, MPI_COMM_WORLD, &rq[1]);
        for (int done = 0; !done;) {
            if (atomic_load_explicit(&g_overlap_waited_on, memory_order_relaxed)) {
                MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
                break;
            }
            MPI_Testall(2, rq, &done, MPI_STATUSES_IGNORE);
            if (!done) nanosleep(&(struct timespec){.tv_nsec = 20000}, NULL);
        }
    }
    g_bytes_sent += ns * elem;
}

/* the ring's chunk ids: the one rank g_rank sends in step s of the reduce-scatter (s + 1 for the all-gather),
   and the one it receives */
static int chunk_sent(int s) { return ((g_rank - s - 1) % g_world + g_world) % g_world; }
static int chunk_received(int s) { return ((g_rank - s - 2) % g_world + g_world) % g_world; }

/* g_counts, g_displs: dist_share's ranges of n elements, chunk r of the ring for rank r */
static void ring_chunks(size_t n) {
    for (int r = 0; r < g_world; r++) {
        size_t lo, hi;
        dist_share(n, r, g_world, &lo, &hi);
        g_displs[r] = lo;
        g_counts[r] = hi - lo;
    }
}

/* elements [o, o + RING_PIECE) of a chunk of n, clipped: 0 once o passes n */
static size_t piece(size_t n, size_t o) { return o < n ? (n - o < RING_PIECE ? n - o : RING_PIECE) : 0; }

/* Ring all-gather in place: in world - 1 steps every rank passes the chunk it holds last (its own first) to
   the next rank, which stores it at the chunk's place of buf. Pure copies: the bits are the sender's. */
static void ring_allgather_real(real* buf) {
    for (int s = -1; s < g_world - 2; s++) {
        int send = chunk_sent(s), recv = chunk_received(s);
        ring_exchange(buf + g_displs[send], g_counts[send], buf + g_displs[recv], g_counts[recv], MPI_REAL_T,
                      sizeof(real));
    }
}

/* Ring all-reduce: a reduce-scatter in world - 1 steps, in each of which every
   rank passes one chunk to the next rank and adds the chunk it receives from
   the previous one (piece by piece), then a ring all-gather of the summed chunks;
   chunk r is dist_share's range of rank r. Each sum is formed once, on one
   rank, so every rank ends with the same bits. Open MPI 4.1's MPI_Allreduce of
   the 203 MB gradients of a 51M-parameter model took 0.52-1.0 s on 2 ranks of
   the 2-core VM (shared memory, every coll_tuned algorithm); this takes
   35-45 ms there. */
void dist_allreduce_sum_real(real* buf, size_t n) {
    if (g_world == 1) return;
    ring_chunks(n);
    for (int s = 0; s < g_world - 1; s++) {
        int send = chunk_sent(s), recv = chunk_received(s);
        size_t ns = g_counts[send], nr = g_counts[recv];
        for (size_t o = 0; o < ns || o < nr; o += RING_PIECE) { /* the next rank cuts the same pieces */
            size_t cs = piece(ns, o), cr = piece(nr, o);
            ring_exchange(buf + g_displs[send] + (cs ? o : 0), cs, g_piece, cr, MPI_REAL_T, sizeof(real));
            real* dst = buf + g_displs[recv] + (cr ? o : 0);
            for (size_t i = 0; i < cr; i++) dst[i] += g_piece[i];
        }
    }
    ring_allgather_real(buf);
}

/* One step of the BF16 ring: chunk `send` of buf rounded to bf16 and sent piece by piece, chunk `recv`
   received, widened and added to buf's (add) or stored in its place */
static void bf16_ring_step(real* buf, int send, int recv, bool add) {
    size_t ns = g_counts[send], nr = g_counts[recv];
    for (size_t o = 0; o < ns || o < nr; o += RING_PIECE) {
        size_t cs = piece(ns, o), cr = piece(nr, o);
        bf16_round_reals(g_wire_out, buf + g_displs[send] + (cs ? o : 0), cs);
        ring_exchange(g_wire_out, cs, g_wire_in, cr, MPI_UINT16_T, sizeof(bf16));
        real* dst = buf + g_displs[recv] + (cr ? o : 0);
        if (add)
            for (size_t i = 0; i < cr; i++) dst[i] += (real)bf16_to_f32(g_wire_in[i]);
        else
            for (size_t i = 0; i < cr; i++) dst[i] = (real)bf16_to_f32(g_wire_in[i]);
    }
}

/* The same ring with BF16 on the wire: every piece is rounded to nearest even bf16 as it is sent and the
   receiver adds its widened value to its own FP32 (real) partial sum; the owner of a chunk rounds the
   finished sums to bf16 in place, and the all-gather passes those bf16 values on (exactly). So every rank
   ends with the same bits, each a bf16 value, and an element's sum over w ranks is rounded w times: w - 1
   partial sums on their way round the ring, then the total. */
void dist_allreduce_sum_bf16(real* buf, size_t n) {
    if (g_world == 1) return;
    ring_chunks(n);
    for (int s = 0; s < g_world - 1; s++) bf16_ring_step(buf, chunk_sent(s), chunk_received(s), true);
    real* own = buf + g_displs[g_rank];
    for (size_t i = 0; i < g_counts[g_rank]; i++) own[i] = (real)bf16_to_f32(bf16_round_nearest((float)own[i]));
    for (int s = -1; s < g_world - 2; s++) bf16_ring_step(buf, chunk_sent(s), chunk_received(s), false);
}

void dist_allreduce_sum(real* buf, size_t n, bool bf16) {
    if (bf16) dist_allreduce_sum_bf16(buf, n);
    else dist_allreduce_sum_real(buf, n);
}

/* The overlap thread (dist.h): the ranges posted since dist_overlap_begin, summed in the order posted */
#define OVERLAP_MAX 1024
static struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a range posted, a range summed, or quit */
    bool started, quit, bf16;
    real* buf;
    size_t lo[OVERLAP_MAX], hi[OVERLAP_MAX];
    size_t n_posted, n_done;
} g_ov = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void* overlap_main(void* unused) {
    (void)unused;
    sigset_t all; /* signals (the trainer's SIGINT, SIGUSR1) go to the main thread */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    t_polling = true;
    pthread_mutex_lock(&g_ov.mu);
    for (;;) {
        while (!g_ov.quit && g_ov.n_done == g_ov.n_posted) pthread_cond_wait(&g_ov.cv, &g_ov.mu);
        if (g_ov.quit) break;
        real* x = g_ov.buf + g_ov.lo[g_ov.n_done];
        size_t n = g_ov.hi[g_ov.n_done] - g_ov.lo[g_ov.n_done];
        bool bf16 = g_ov.bf16;
        pthread_mutex_unlock(&g_ov.mu);
        dist_allreduce_sum(x, n, bf16);
        pthread_mutex_lock(&g_ov.mu);
        g_ov.n_done++;
        pthread_cond_broadcast(&g_ov.cv);
    }
    pthread_mutex_unlock(&g_ov.mu);
    return NULL;
}

bool dist_overlap_init(void) {
    if (g_world == 1 || g_thread_level < MPI_THREAD_SERIALIZED) return false;
    if (!g_ov.started) CHECK(!pthread_create(&g_ov.thread, NULL, overlap_main, NULL), "cannot start a thread");
    g_ov.started = true;
    return true;
}

void dist_overlap_begin(real* buf, bool bf16) {
    pthread_mutex_lock(&g_ov.mu);
    CHECK(g_ov.started && g_ov.n_done == g_ov.n_posted, "dist_overlap_begin: not started, or ranges still in flight");
    g_ov.buf = buf;
    g_ov.bf16 = bf16;
    g_ov.n_posted = g_ov.n_done = 0;
    pthread_mutex_unlock(&g_ov.mu);
}

void dist_overlap_post(size_t lo, size_t hi) {
    if (hi <= lo) return;
    pthread_mutex_lock(&g_ov.mu);
    CHECK(g_ov.n_posted < OVERLAP_MAX, "dist_overlap_post: more than %d ranges in one step", OVERLAP_MAX);
    g_ov.lo[g_ov.n_posted] = lo;
    g_ov.hi[g_ov.n_posted] = hi;
    g_ov.n_posted++;
    pthread_cond_broadcast(&g_ov.cv);
    pthread_mutex_unlock(&g_ov.mu);
}

void dist_overlap_wait(void) {
    atomic_store(&g_overlap_waited_on, true);
    pthread_mutex_lock(&g_ov.mu);
    while (g_ov.n_done < g_ov.n_posted) pthread_cond_wait(&g_ov.cv, &g_ov.mu);
    pthread_mutex_unlock(&g_ov.mu);
    atomic_store(&g_overlap_waited_on, false);
}

static void overlap_stop(void) {
    if (!g_ov.started) return;
    pthread_mutex_lock(&g_ov.mu);
    g_ov.quit = true;
    pthread_cond_broadcast(&g_ov.cv);
    pthread_mutex_unlock(&g_ov.mu);
    pthread_join(g_ov.thread, NULL);
    g_ov.started = false;
}

void dist_allreduce_sum_double(double* buf, size_t n) {
    if (g_world == 1) return;
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t c = n - i < CHUNK ? n - i : CHUNK;
        MPI_Allreduce(MPI_IN_PLACE, buf + i, (int)c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        g_bytes_sent += c * sizeof(double);
    }
}

bool dist_any(bool flag) {
    int v = flag;
    if (g_world == 1) return flag;
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    g_bytes_sent += sizeof(v);
    return v != 0;
}

void dist_bcast(void* buf, size_t n) {
    if (g_world == 1) return;
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t c = n - i < CHUNK ? n - i : CHUNK;
        MPI_Bcast((char*)buf + i, (int)c, MPI_BYTE, 0, MPI_COMM_WORLD);
        if (g_rank == 0) g_bytes_sent += c;
    }
}

void dist_barrier(void) {
    if (g_world > 1) MPI_Barrier(MPI_COMM_WORLD);
}

void dist_allgatherv_real(real* buf, const size_t* counts, const size_t* displs) {
    if (g_world == 1) return;
    for (int r = 0; r < g_world; r++) {
        g_counts[r] = counts[r];
        g_displs[r] = displs[r];
    }
    ring_allgather_real(buf);
}

void dist_gatherv_real(const real* send, real* recv, const size_t* counts) {
    if (g_world == 1) {
        memcpy(recv, send, counts[0] * sizeof(real));
        return;
    }
    size_t at = 0;
    for (int r = 0; r < g_world; r++) {
        g_icounts[r] = int_count(counts[r], "gatherv");
        g_idispls[r] = int_count(at, "gatherv displacement");
        at += counts[r];
    }
    MPI_Gatherv(send, g_icounts[g_rank], MPI_REAL_T, recv, g_icounts, g_idispls, MPI_REAL_T, 0, MPI_COMM_WORLD);
    if (g_rank) g_bytes_sent += counts[g_rank] * sizeof(real);
}

void dist_allgather(const void* mine, void* all, size_t n) {
    if (g_world == 1) {
        memcpy(all, mine, n);
        return;
    }
    MPI_Allgather(mine, int_count(n, "allgather"), MPI_BYTE, all, (int)n, MPI_BYTE, MPI_COMM_WORLD);
    g_bytes_sent += n;
}

#else /* one process: rank 0 of 1 */

void dist_abort(int code) {
    fflush(stdout);
    exit(code);
}
void dist_init(int* argc, char*** argv) {}
void dist_finalize(void) {}
void dist_allreduce_sum_real(real* buf, size_t n) {}
void dist_allreduce_sum_bf16(real* buf, size_t n) {}
void dist_allreduce_sum(real* buf, size_t n, bool bf16) {}
bool dist_overlap_init(void) { return false; }
void dist_overlap_begin(real* buf, bool bf16) {}
void dist_overlap_post(size_t lo, size_t hi) {}
void dist_overlap_wait(void) {}
void dist_allreduce_sum_double(double* buf, size_t n) {}
bool dist_any(bool flag) { return flag; }
void dist_bcast(void* buf, size_t n) {}
void dist_barrier(void) {}
void dist_allgatherv_real(real* buf, const size_t* counts, const size_t* displs) {}
void dist_gatherv_real(const real* send, real* recv, const size_t* counts) {
    memcpy(recv, send, counts[0] * sizeof(real));
}
void dist_allgather(const void* mine, void* all, size_t n) { memcpy(all, mine, n); }

#endif
