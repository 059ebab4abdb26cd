/* AdamW's state file, optimizer.safetensors (see adamw_io.h): written
   piece by piece through st_write_filled, gathered from every rank when the
   state is sharded; read back by name with every shape and value checked. */
#include "optim/adamw_io.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/check.h"
#include "common/dist.h"
#include "common/safetensors.h"

/* Sharded AdamW state (ZeRO-1: each rank holds the moments of one slice) is written by rank 0 into the same
   file as a full one, piece by piece: for each piece st_write asks for,
   rank 0 broadcasts a request (which moment, which range of the gradient
   arena) and every rank sends its part of that range (MPI_Gatherv), while
   the other ranks serve requests until MOMENTS_DONE. Rank 0 never holds more
   than one staging buffer of the state of other ranks. */
enum { MOMENT_M = 0, MOMENT_V = 1, MOMENTS_DONE = 2 };
typedef struct {
    uint64_t kind, first, count;
} MomentRequest;

/* each rank's optimizer holds dist_share's slice of the gradient arena */
static bool is_sharded(const AdamW* opt) { return opt->lo != 0 || opt->hi != opt->n; }

/* every rank: its part of gradient-arena elements [first, first+count) of one
   moment, gathered in rank order into rank 0's out */
static void gather_moments(const AdamW* opt, MomentRequest rq, real* out) {
    int world = dist_world(), me = dist_rank();
    size_t* counts = mallocCheck((size_t)world * sizeof(size_t));
    size_t a = rq.first, b = rq.first + rq.count;
    for (int r = 0; r < world; r++) {
        size_t lo, hi;
        dist_share(opt->n, r, world, &lo, &hi);
        if (r == me)
            CHECK(lo == opt->lo && hi == opt->hi,
                  "optimizer slice [%zu, %zu) is not rank %d's share "
                  "[%zu, %zu)",
                  opt->lo, opt->hi, me, lo, hi);
        size_t from = a > lo ? a : lo, to = b < hi ? b : hi;
        counts[r] = to > from ? to - from : 0;
    }
    size_t from = (a > opt->lo ? a : opt->lo) - opt->lo; /* this rank's part, relative to its slice */
    real* widened = NULL;                                /* bf16 state travels as reals */
    const real* send = opt->m;
    if (opt->cfg.state_bf16) {
        widened = mallocCheck((counts[me] ? counts[me] : 1) * sizeof(real));
        if (counts[me]) adamw_moment_get(opt, (int)rq.kind, from, counts[me], widened);
        send = widened;
    } else {
        const real* state = rq.kind == MOMENT_M ? opt->m : opt->v;
        send = counts[me] ? state + from : state;
    }
    dist_gatherv_real(send, out, counts);
    free(widened);
    free(counts);
}

/* st_write's fill on rank 0: one piece of exp_avg or exp_avg_sq of one tensor */
typedef struct {
    const AdamW* opt;
    uint64_t kind;
    size_t grad_offset;
} MomentFill;
static void fill_moments(void* ctx, size_t first, size_t count, real* out) {
    const MomentFill* f = ctx;
    if (!is_sharded(f->opt)) { /* bf16 state of one rank: widened piece by piece */
        adamw_moment_get(f->opt, (int)f->kind, f->grad_offset + first, count, out);
        return;
    }
    MomentRequest rq = {f->kind, f->grad_offset + first, count};
    dist_bcast(&rq, sizeof(rq));
    gather_moments(f->opt, rq, out);
}

/* the tensor names of each kind of state: MOMENT_M, MOMENT_V, the master weights */
static const char* const PREFIX[3] = {"exp_avg.", "exp_avg_sq.", "master."};

void adamw_serve_save(const AdamW* opt) {
    if (!is_sharded(opt)) return;
    for (;;) {
        MomentRequest rq;
        dist_bcast(&rq, sizeof(rq));
        if (rq.kind == MOMENTS_DONE) return;
        gather_moments(opt, rq, NULL);
    }
}

void adamw_save(const char* path, const Model* m, const AdamW* opt, bool with_master) {
    const TensorTable* tt = &m->tensors;
    StWriteTensor* w = callocCheck(3 * tt->n, sizeof(StWriteTensor));
    StFill* fills = callocCheck(3 * tt->n, sizeof(StFill));
    MomentFill* sources = callocCheck(2 * tt->n, sizeof(MomentFill));
    char(*names)[TENSOR_NAME_LEN + 16] = callocCheck(3 * tt->n, TENSOR_NAME_LEN + 16);
    size_t n = 0;
    for (size_t i = 0; i < tt->n; i++) {
        const TensorInfo* t = &tt->t[i];
        for (int kind = 0; kind < 3; kind++) {
            if (kind < 2 && t->grad_offset == NO_GRAD) continue;  /* frozen: no state */
            if (kind == 2 && (!with_master || t->bf16)) continue; /* a BF16 base is its own master */
            snprintf(names[n], sizeof(names[n]), "%s%s", PREFIX[kind], t->name);
            w[n] = (StWriteTensor){names[n], ST_F32, t->ndim, {t->shape[0], t->shape[1]}, m->params + t->offset};
            if (kind < 2 && opt->cfg.state_bf16) w[n].dtype = ST_BF16; /* bf16 -> real -> bf16 is exact */
            if (kind < 2 && !is_sharded(opt) && !opt->cfg.state_bf16) {
                w[n].data = (kind == MOMENT_M ? opt->m : opt->v) + t->grad_offset;
            } else if (kind < 2) { /* gathered piece by piece */
                sources[2 * i + kind] = (MomentFill){opt, (uint64_t)kind, t->grad_offset};
                w[n].data = NULL;
                fills[n] = (StFill){fill_moments, &sources[2 * i + kind]};
            }
            n++;
        }
    }
    const char* keys[] = {"format", "repoc_optimizer_version"};
    const char* values[] = {"repoc-adamw", "1"};
    st_write_filled(path, w, fills, n, keys, values, 2);
    if (is_sharded(opt)) {
        MomentRequest done = {MOMENTS_DONE, 0, 0};
        dist_bcast(&done, sizeof(done));
    }
    free(w);
    free(fills);
    free(sources);
    free(names);
}

/* moment `kind` of gradient-arena elements [g0, g1) from tensor s (element g0 - grad_offset on), any float
   dtype, into the optimizer's state in its own dtype; checked finite (v also >= 0) */
static void load_moment(const StFile* f, const StTensor* s, const char* path, const char* name, AdamW* opt, int kind,
                        size_t grad_offset, size_t g0, size_t g1) {
    enum { PIECE = 1 << 20 };
    real* buf = mallocCheck((g1 - g0 < PIECE ? g1 - g0 : PIECE) * sizeof(real));
    for (size_t a = g0; a < g1; a += PIECE) {
        size_t n = g1 - a < PIECE ? g1 - a : PIECE;
        st_read_real_range(f, s, a - grad_offset, n, buf);
        for (size_t k = 0; k < n; k++) /* m finite; v (a mean of squares) finite and >= 0 */
            CHECK(isfinite(buf[k]) && (kind == 0 || buf[k] >= 0),
                  "%s: tensor '%s' element %zu is %g: "
                  "AdamW %s must be finite%s",
                  path, name, a - grad_offset + k, (double)buf[k], kind == 0 ? "first moments" : "second moments",
                  kind == 0 ? "" : " and non-negative");
        adamw_moment_set(opt, kind, a - opt->lo, n, buf);
    }
    free(buf);
}

void adamw_load(const char* path, Model* m, AdamW* opt, bool with_master) {
    StFile f;
    st_open_or_die(&f, path);
    const TensorTable* tt = &m->tensors;
    char name[TENSOR_NAME_LEN + 16];
    StDtype want = opt->cfg.state_bf16 ? ST_BF16 : ST_F32;
    bool noted = false;
    for (size_t i = 0; i < tt->n; i++) {
        const TensorInfo* t = &tt->t[i];
        for (int kind = 0; kind < 3; kind++) {
            if (kind < 2 && t->grad_offset == NO_GRAD) continue;
            if (kind == 2 && (!with_master || t->bf16)) continue; /* a BF16 base is its own master */
            snprintf(name, sizeof(name), "%s%s", PREFIX[kind], t->name);
            const StTensor* s = st_find(&f, name);
            CHECK(s, "%s: no tensor '%s' (was the checkpoint written with other frozen tensors?)", path, name);
            bool moment_dtype = kind < 2 && (s->dtype == ST_F32 || s->dtype == ST_BF16);
            CHECK(s->numel == t->numel && (s->dtype == ST_F32 || moment_dtype),
                  "%s: tensor '%s' has %zu %s values, expected %zu %s", path, name, s->numel, st_dtype_name(s->dtype),
                  t->numel, kind < 2 ? "F32 or BF16" : "F32");
            if (kind == 2) {
                st_read_real(&f, s, m->params + t->offset);
                continue;
            }
            if (s->dtype != want && !noted) {
                printf("note: %s holds the AdamW moments as %s, this run keeps them as %s (optim.state_dtype): "
                       "converted%s\n",
                       path, st_dtype_name(s->dtype), st_dtype_name(want),
                       want == ST_BF16 ? " by rounding to nearest" : " exactly");
                noted = true;
            }
            size_t g0, g1; /* moments: the part inside the optimizer's slice */
            if (!adamw_slice_part(opt, t->grad_offset, t->numel, &g0, &g1)) continue;
            load_moment(&f, s, path, name, opt, kind, t->grad_offset, g0, g1);
        }
    }
    st_close(&f);
}
