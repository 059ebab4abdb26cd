/* TensorBoard event files beside metrics.jsonl, so that `tensorboard --logdir runs/` shows a run: each
   metrics.jsonl line becomes one Event (its step, the wall time of writing, a Summary holding every number of
   the line as a scalar under the line's key path: "loss", "val_loss_source/web", "retrieval/single@128",
   "positions/layer3/range"). The file is a TFRecord stream: per record a uint64 length, the masked CRC-32C
   of those 8 bytes, the bytes (an Event protocol buffer), their masked CRC-32C, all little-endian. The first
   record names the format ("brain.Event:2").

   Each process that logs writes its own file, events.out.tfevents.<seconds>.<host>.<pid>.repoc. At the start
   of a resumed run the earlier files lose, as metrics.jsonl does, the records of steps the run will log again
   (train/metrics.h), and a record cut by a crash is dropped with a warning: no step is ever there twice. */
#ifndef REPOC_TENSORBOARD_H
#define REPOC_TENSORBOARD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    FILE* f;
    char path[4200];
} TbWriter;

/* the earlier event files of out_dir trimmed to keep_step (0: removed), then a new one opened */
void tb_open(TbWriter* tb, const char* out_dir, size_t keep_step);
/* one metrics.jsonl line (a JSON object with "step") as one Event */
void tb_line(TbWriter* tb, const char* line, size_t len);
void tb_close(TbWriter* tb);

/* CRC-32C (Castagnoli) of p[0..n) and TFRecord's mask of it */
uint32_t tb_crc32c(const uint8_t* p, size_t n);
static inline uint32_t tb_masked_crc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

#endif
