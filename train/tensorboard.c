/* TensorBoard event files (train/tensorboard.h). The protocol buffers written, from TensorFlow's
   event.proto and summary.proto:
     Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
     Summary { repeated Value value = 1; }
     Value   { string tag = 1; float simple_value = 2; }
   encoded as the protobuf wire format says: each field a varint key (number << 3 | wire type), then a
   varint (type 0), 8 bytes (type 1), a varint length and the bytes (type 2) or 4 bytes (type 5). */
#include "train/tensorboard.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/check.h"
#include "common/fileio.h"
#include "common/textbuf.h"

uint32_t tb_crc32c(const uint8_t* p, size_t n) {
    static uint32_t table[256];
    if (!table[1]) /* the reflected polynomial 0x82F63B78; racing threads write the same values */
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
            table[i] = c;
        }
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
}

/* ---- the wire format ---- */
static void put_varint(TextBuf* b, uint64_t v) {
    char c[10];
    size_t n = 0;
    do {
        c[n++] = (char)((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
        v >>= 7;
    } while (v);
    textbuf_put(b, c, n);
}
static void put_le(TextBuf* b, uint64_t v, size_t bytes) {
    char c[8];
    for (size_t i = 0; i < bytes; i++) c[i] = (char)(v >> (8 * i));
    textbuf_put(b, c, bytes);
}
static void put_bytes(TextBuf* b, unsigned field, const char* s, size_t n) {
    put_varint(b, field << 3 | 2);
    put_varint(b, n);
    textbuf_put(b, s, n);
}

/* Value { tag, simple_value } appended to the Summary in sum */
static void put_value(TextBuf* sum, const char* tag, double x) {
    TextBuf v = {.what = "TensorBoard value"};
    put_bytes(&v, 1, tag, strlen(tag));
    float f = (float)x;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    put_varint(&v, 2 << 3 | 5);
    put_le(&v, bits, 4);
    put_bytes(sum, 1, v.s, v.len);
    textbuf_free(&v);
}

/* every number under j as a Value tagged by its key path, the top level's "step" aside; an array element
   that is an object with a "layer" number is named layerN (the positions' layers) and its "layer" left out,
   any other by its index */
static void put_numbers(TextBuf* sum, const cJSON* j, const char* path, const char* skip) {
    const cJSON* it;
    size_t i = 0;
    cJSON_ArrayForEach(it, j) {
        char tag[512];
        const cJSON* layer = cJSON_IsObject(it) ? cJSON_GetObjectItemCaseSensitive(it, "layer") : NULL;
        bool by_layer = !it->string && cJSON_IsNumber(layer);
        if (it->string) snprintf(tag, sizeof tag, "%s%s%s", path, *path ? "/" : "", it->string);
        else if (by_layer) snprintf(tag, sizeof tag, "%s/layer%.0f", path, layer->valuedouble);
        else snprintf(tag, sizeof tag, "%s/%zu", path, i);
        i++;
        if (it->string && !strcmp(it->string, skip)) continue;
        if (cJSON_IsNumber(it)) put_value(sum, tag, it->valuedouble);
        else if (cJSON_IsObject(it) || cJSON_IsArray(it)) put_numbers(sum, it, tag, by_layer ? "layer" : "");
    }
}

static double wall_time(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

/* Event.wall_time: now */
static void put_wall_time(TextBuf* ev) {
    double t = wall_time();
    uint64_t bits;
    memcpy(&bits, &t, 8);
    put_varint(ev, 1 << 3 | 1);
    put_le(ev, bits, 8);
}

static uint32_t load32(const uint8_t* p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* one TFRecord: length, masked CRC of the length, the data, masked CRC of the data */
static void put_record(TextBuf* out, const char* data, size_t n) {
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)n >> (8 * i));
    textbuf_put(out, (const char*)len, 8);
    put_le(out, tb_masked_crc(tb_crc32c(len, 8)), 4);
    textbuf_put(out, data, n);
    put_le(out, tb_masked_crc(tb_crc32c((const uint8_t*)data, n)), 4);
}

static void write_or_die(TbWriter* tb, const TextBuf* rec) {
    if (fwrite(rec->s, 1, rec->len, tb->f) != rec->len || fflush(tb->f) != 0)
        DIE("writing '%s': %s; stopping (the checkpoints already written are intact)", tb->path, strerror(errno));
}

void tb_line(TbWriter* tb, const char* line, size_t len) {
    if (!tb->f) return;
    cJSON* j = cJSON_ParseWithLength(line, len);
    const cJSON* step = cJSON_GetObjectItemCaseSensitive(j, "step");
    CHECK(cJSON_IsNumber(step), "TensorBoard: a metrics line without a step: %.*s", (int)len, line);
    TextBuf sum = {.what = "TensorBoard summary"}, ev = {.what = "TensorBoard event"}, rec = {.what = "TFRecord"};
    put_numbers(&sum, j, "", "step");
    put_wall_time(&ev);
    put_varint(&ev, 2 << 3 | 0);
    put_varint(&ev, (uint64_t)step->valuedouble);
    put_bytes(&ev, 5, sum.s ? sum.s : "", sum.len);
    put_record(&rec, ev.s, ev.len);
    write_or_die(tb, &rec);
    textbuf_free(&sum);
    textbuf_free(&ev);
    textbuf_free(&rec);
    cJSON_Delete(j);
}

/* ---- reading back, to trim the files of an earlier process ---- */
typedef struct {
    const uint8_t* p;
    size_t n, at;
} Reader;

static bool get_varint(Reader* r, uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64 && r->at < r->n; shift += 7) {
        uint8_t c = r->p[r->at++];
        *v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) return true;
    }
    return false;
}

/* the next field: its number, wire type, and (type 2) its bytes or (else) its value; false at the end or
   on bytes that are no protocol buffer */
static bool next_field(Reader* r, unsigned* field, unsigned* type, uint64_t* v, Reader* sub) {
    uint64_t key;
    if (r->at >= r->n || !get_varint(r, &key)) return false;
    *field = (unsigned)(key >> 3);
    *type = (unsigned)(key & 7);
    if (*type == 0) return get_varint(r, v);
    size_t len = *type == 1 ? 8 : *type == 5 ? 4 : 0;
    if (*type == 2 && !get_varint(r, v)) return false;
    if (*type == 2) len = (size_t)*v;
    if (len > r->n - r->at || (*type != 1 && *type != 2 && *type != 5)) return false;
    *sub = (Reader){r->p + r->at, len, 0};
    r->at += len;
    return true;
}

/* an Event's step, and whether it is an evaluation's (a tag val_loss, or under positions/) */
static void event_kind(const uint8_t* p, size_t n, uint64_t* step, bool* eval) {
    Reader r = {p, n, 0}, sub, val, tag;
    unsigned f, t, vf, vt, tf, tt;
    uint64_t v;
    *step = 0;
    *eval = false;
    while (next_field(&r, &f, &t, &v, &sub)) {
        if (f == 2 && t == 0) *step = v;
        if (f != 5 || t != 2) continue;
        while (next_field(&sub, &vf, &vt, &v, &val)) /* Summary.value */
            while (vf == 1 && vt == 2 && next_field(&val, &tf, &tt, &v, &tag))
                if (tf == 1 && tt == 2)
                    *eval |= (tag.n == 8 && !memcmp(tag.p, "val_loss", 8)) ||
                             (tag.n > 10 && !memcmp(tag.p, "positions/", 10));
    }
}

/* the records of one earlier file that a resume at keep_step keeps: the file's first (file_version), the
   step records of steps <= keep_step, the evaluations' of steps < keep_step (as metrics.jsonl keeps them);
   rewritten in place only when something goes */
static void trim(const char* path, size_t keep_step) {
    size_t n;
    uint8_t* p = (uint8_t*)file_read_all_or_null(path, &n);
    if (!p) return;
    TextBuf out = {.what = "TensorBoard file"};
    size_t at = 0, kept = 0, dropped = 0;
    while (n - at >= 12) {
        uint64_t len = 0;
        for (int i = 0; i < 8; i++) len |= (uint64_t)p[at + i] << (8 * i);
        if (load32(p + at + 8) != tb_masked_crc(tb_crc32c(p + at, 8)) || len > n - at - 16) break;
        const uint8_t* d = p + at + 12;
        if (load32(d + len) != tb_masked_crc(tb_crc32c(d, len))) break;
        uint64_t step;
        bool eval;
        event_kind(d, len, &step, &eval);
        if (!at || (eval ? step < keep_step : step <= keep_step)) {
            textbuf_put(&out, (const char*)p + at, len + 16);
            kept++;
        } else {
            dropped++;
        }
        at += len + 16;
    }
    if (at < n)
        printf("warning: %s: the bytes from byte offset %zu on are no whole record (a crash cut it): dropped\n", path,
               at);
    if (dropped || at < n) file_write_atomic(path, out.s ? out.s : "", out.len);
    textbuf_free(&out);
    free(p);
}

/* repoc's event files in out_dir (events.out.tfevents.*.repoc): trimmed, or removed when keep_step is 0 */
static void trim_earlier(const char* out_dir, size_t keep_step) {
    DIR* d = opendir(out_dir);
    if (!d) return;
    const struct dirent* e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "events.out.tfevents.", 20)) continue;
        bool file = len >= 26 && !strcmp(e->d_name + len - 6, ".repoc");
        bool leftover = strstr(e->d_name, ".repoc.tmp.") != NULL; /* a trim killed midway: out_dir is locked */
        if (!file && !leftover) continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", out_dir, e->d_name);
        if (file && keep_step) trim(path, keep_step);
        else CHECK(unlink(path) == 0 || errno == ENOENT, "removing '%s': %s", path, strerror(errno));
    }
    closedir(d);
}

void tb_open(TbWriter* tb, const char* out_dir, size_t keep_step) {
    trim_earlier(out_dir, keep_step);
    char host[256] = "host";
    gethostname(host, sizeof host - 1);
    host[strcspn(host, "/")] = 0;
    snprintf(tb->path, sizeof tb->path, "%s/events.out.tfevents.%.0f.%s.%d.repoc", out_dir, wall_time(), host,
             (int)getpid());
    tb->f = fopenCheck(tb->path, "wb");
    TextBuf ev = {.what = "TensorBoard event"}, rec = {.what = "TFRecord"};
    put_wall_time(&ev);
    put_bytes(&ev, 3, "brain.Event:2", 13);
    put_record(&rec, ev.s, ev.len);
    write_or_die(tb, &rec);
    textbuf_free(&ev);
    textbuf_free(&rec);
}

void tb_close(TbWriter* tb) {
    if (tb->f) fcloseCheck(tb->f, tb->path);
    tb->f = NULL;
}
