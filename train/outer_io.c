/* The DiLoCo state of a checkpoint, outer.safetensors (train/outer.h): outer.kept.<name> and
   outer.momentum.<name> per trained tensor, and for every rank r > 0 rank<r>.param.<name>, rank<r>.exp_avg.<name>
   and rank<r>.exp_avg_sq.<name> (rank 0's are the checkpoint's model and optimizer files), all F32; metadata
   format "repoc-outer", repoc_outer_version 1, world (the ranks that wrote it). Rank 0 writes it piece by
   piece as adamw_io.c writes sharded moments: for each piece it broadcasts a request (which rank, which
   quantity, which range of the gradient arena) and that rank sends it (a gather in which only it has a part),
   while the other ranks serve requests until OUTER_DONE. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/dist.h"
#include "common/safetensors.h"
#include "train/outer.h"

#define OUTER_VERSION "1"

/* the quantities of one rank's inner state */
enum { Q_PARAM = 0, Q_EXP_AVG = 1, Q_EXP_AVG_SQ = 2, OUTER_DONE = 3 };
static const char* const Q_NAME[3] = {"param", "exp_avg", "exp_avg_sq"};

typedef struct {
    uint64_t rank, kind, first, count; /* gradient-arena elements [first, first + count) */
} OuterRequest;

/* this rank's quantity `kind` of gradient-arena elements [g, g + n) into out */
static void own_part(const Model* m, const AdamW* opt, uint64_t kind, size_t g, size_t n, real* out) {
    if (kind != Q_PARAM) {
        adamw_moment_get(opt, (int)kind - 1, g - opt->lo, n, out);
        return;
    }
    const TensorTable* tt = &m->tensors;
    for (size_t k = 0; k < tt->n; k++) { /* a request never leaves one tensor */
        const TensorInfo* t = &tt->t[k];
        if (t->grad_offset != NO_GRAD && g >= t->grad_offset && g + n <= t->grad_offset + t->numel) {
            memcpy(out, m->params + t->offset + (g - t->grad_offset), n * sizeof(real));
            return;
        }
    }
    DIE("outer state: no tensor holds gradient-arena elements [%zu, %zu)", g, g + n);
}

/* every rank: the request's piece, sent by its rank into rank 0's out */
static void serve_request(const Model* m, const AdamW* opt, OuterRequest rq, real* out) {
    int world = dist_world(), me = dist_rank();
    size_t* counts = callocCheck((size_t)world, sizeof(size_t));
    counts[rq.rank] = rq.count;
    real* mine = NULL;
    if ((uint64_t)me == rq.rank) {
        mine = mallocCheck(rq.count * sizeof(real));
        own_part(m, opt, rq.kind, rq.first, rq.count, mine);
    }
    dist_gatherv_real(mine, out, counts);
    free(mine);
    free(counts);
}

void outer_serve_save(const Outer* o, const Model* m, const AdamW* opt) {
    if (!o->on || dist_world() == 1) return;
    for (;;) {
        OuterRequest rq;
        dist_bcast(&rq, sizeof(rq));
        if (rq.kind == OUTER_DONE) return;
        serve_request(m, opt, rq, NULL);
    }
}

/* st_write's fill on rank 0: a piece of one quantity of one tensor of another rank */
typedef struct {
    const Model* m;
    const AdamW* opt;
    uint64_t rank, kind;
    size_t grad_offset;
} OuterFill;
static void fill_rank(void* ctx, size_t first, size_t count, real* out) {
    const OuterFill* f = ctx;
    OuterRequest rq = {f->rank, f->kind, f->grad_offset + first, count};
    dist_bcast(&rq, sizeof(rq));
    serve_request(f->m, f->opt, rq, out);
}

void outer_save(const Outer* o, const char* dir, const Model* m, const AdamW* opt) {
    if (!o->on) return;
    const TensorTable* tt = &m->tensors;
    size_t world = (size_t)dist_world(), per = 2 + 3 * (world - 1), cap = per * tt->n;
    StWriteTensor* w = callocCheck(cap, sizeof(StWriteTensor));
    StFill* fills = callocCheck(cap, sizeof(StFill));
    OuterFill* src = callocCheck(cap, sizeof(OuterFill));
    char(*names)[TENSOR_NAME_LEN + 48] = callocCheck(cap, TENSOR_NAME_LEN + 48);
    size_t n = 0;
    for (size_t k = 0; k < tt->n; k++) {
        const TensorInfo* t = &tt->t[k];
        if (t->grad_offset == NO_GRAD) continue;
        for (size_t j = 0; j < per; j++, n++) {
            w[n] = (StWriteTensor){names[n], ST_F32, t->ndim, {t->shape[0], t->shape[1]}, NULL};
            if (j < 2) {
                snprintf(names[n], sizeof(names[n]), "outer.%s.%s", j ? "momentum" : "kept", t->name);
                w[n].data = (j ? o->mom : o->kept) + t->grad_offset;
                continue;
            }
            uint64_t r = 1 + (j - 2) / 3, kind = (j - 2) % 3;
            snprintf(names[n], sizeof(names[n]), "rank%llu.%s.%s", (unsigned long long)r, Q_NAME[kind], t->name);
            src[n] = (OuterFill){m, opt, r, kind, t->grad_offset};
            fills[n] = (StFill){fill_rank, &src[n]};
        }
    }
    char path[4200], ranks[32];
    snprintf(path, sizeof(path), "%s/outer.safetensors", dir);
    snprintf(ranks, sizeof(ranks), "%zu", world);
    const char* keys[] = {"format", "repoc_outer_version", "world"};
    const char* values[] = {"repoc-outer", OUTER_VERSION, ranks};
    st_write_filled(path, w, fills, n, keys, values, 3);
    if (world > 1) {
        OuterRequest done = {0, OUTER_DONE, 0, 0};
        dist_bcast(&done, sizeof(done));
    }
    free(w);
    free(fills);
    free(src);
    free(names);
}

/* tensor `name` of f, of t's size, into dst (F32 only: the file is written so) */
static void read_tensor(const StFile* f, const char* path, const char* name, const TensorInfo* t, real* dst) {
    const StTensor* s = st_find(f, name);
    CHECK(s, "%s: no tensor '%s' (was the checkpoint written with other frozen tensors?)", path, name);
    CHECK(s->numel == t->numel && s->dtype == ST_F32, "%s: tensor '%s' has %zu %s values, expected %zu F32", path, name,
          s->numel, st_dtype_name(s->dtype), t->numel);
    st_read_real(f, s, dst);
}

/* this rank's (r > 0) parameters and moments of tensor t from f */
static void load_own(const StFile* f, const char* path, const TensorInfo* t, Model* m, AdamW* opt, real* buf) {
    char name[TENSOR_NAME_LEN + 48];
    for (int kind = 0; kind < 3; kind++) {
        snprintf(name, sizeof(name), "rank%d.%s.%s", dist_rank(), Q_NAME[kind], t->name);
        read_tensor(f, path, name, t, kind == Q_PARAM ? m->params + t->offset : buf);
        if (kind != Q_PARAM) adamw_moment_set(opt, kind - 1, t->grad_offset - opt->lo, t->numel, buf);
    }
}

void outer_load(Outer* o, const char* dir, Model* m, AdamW* opt) {
    if (!o->on) return;
    char path[4200];
    snprintf(path, sizeof(path), "%s/outer.safetensors", dir);
    FILE* probe = fopen(path, "rb");
    if (!probe) {
        printf("note: %s has no outer.safetensors (not written by a train.outer run): the outer loop starts "
               "from its weights, with zero momentum\n",
               dir);
        return;
    }
    fclose(probe);
    StFile f;
    st_open_or_die(&f, path);
    const char* fmt = st_meta(&f, "format");
    const char* ver = st_meta(&f, "repoc_outer_version");
    const char* world = st_meta(&f, "world");
    CHECK(fmt && !strcmp(fmt, "repoc-outer") && ver && !strcmp(ver, OUTER_VERSION),
          "%s: not a repoc-outer file of version %s", path, OUTER_VERSION);
    CHECK(world && atoi(world) == dist_world(),
          "%s: written by %s ranks, this run has %d: every rank's own parameters and AdamW state are in it, so "
          "a train.outer run resumes with the ranks that saved it",
          path, world ? world : "(unknown)", dist_world());
    const TensorTable* tt = &m->tensors;
    real* buf = mallocCheck((tt->n_grads ? tt->n_grads : 1) * sizeof(real));
    char name[TENSOR_NAME_LEN + 48];
    for (size_t k = 0; k < tt->n; k++) {
        const TensorInfo* t = &tt->t[k];
        if (t->grad_offset == NO_GRAD) continue;
        snprintf(name, sizeof(name), "outer.kept.%s", t->name);
        read_tensor(&f, path, name, t, o->kept + t->grad_offset);
        snprintf(name, sizeof(name), "outer.momentum.%s", t->name);
        read_tensor(&f, path, name, t, o->mom + t->grad_offset);
        if (dist_rank() > 0) load_own(&f, path, t, m, opt, buf);
    }
    free(buf);
    st_close(&f);
    model_params_changed(m);
}
