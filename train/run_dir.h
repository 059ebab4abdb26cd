/* The run directory (run.out_dir) as the trainer owns it: one run at a time
   (a flock on out_dir/run.lock, released by the kernel when the process
   dies, so kill -9 never leaves a stale lock), and removal that only ever
   touches what repoc wrote: never a file through a symbolic link, never a
   name repoc does not write. Rank 0 alone calls these. */
#ifndef REPOC_RUN_DIR_H
#define REPOC_RUN_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* Take the exclusive lock on out_dir (which must exist) and record this pid in
   out_dir/run.lock; die naming the holder's pid when another process has it.
   The lock is held until the process exits. Does nothing when already held. */
void run_dir_lock(const char* out_dir);

/* Remove a checkpoint directory repoc wrote (step_NNNNNNN or its .tmp.<pid>):
   its checkpoint files (and their .tmp.<pid> leftovers) are unlinked, never
   followed; anything else in it, and a step path that is itself a link or not
   a directory, is left in place with a note on stdout. */
void run_dir_remove_checkpoint(const char* dir);

/* Remove what a killed run left half-written in out_dir, by exact name:
   step_NNNNNNN.tmp.<pid>/ (through run_dir_remove_checkpoint) and
   latest|run_config.json|metrics.jsonl .tmp.<pid> files, where <pid> is not
   this process and no live process has that pid. Call with the lock held. */
void run_dir_clean_stale(const char* out_dir);

/* What out_dir holds of an earlier run: step_N entries (ckpt_list_steps) and whether
   metrics.jsonl has any content. */
typedef struct { size_t n_steps; bool metrics; } RunDirContents;
RunDirContents run_dir_contents(const char* out_dir);

#endif
