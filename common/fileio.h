/* Whole-file reading and atomic writing (docs/design.md, "Run directory and checkpoints": write a
   temporary file, fsync, rename, so a crash at any moment leaves either the old
   or the new file, never half of one). */
#ifndef REPOC_FILEIO_H
#define REPOC_FILEIO_H

#include <stdbool.h>
#include <stddef.h>

/* The whole file, NUL-terminated, malloc'd; *len = its size. Dies naming the path. */
char* file_read_all(const char* path, size_t* len);
/* NULL (and errno set) instead of dying, for optional files */
char* file_read_all_or_null(const char* path, size_t* len);
/* the reason file_read_all_or_null failed with errno err ("not a regular file ..." for EINVAL) */
const char* file_read_error(int err);
/* Write path atomically: path.tmp.<pid>, fsync, rename, fsync of the directory. */
void file_write_atomic(const char* path, const void* data, size_t len);
struct cJSON;
/* Print root as indented JSON with a final newline into path (file_write_atomic), and free root */
void file_write_json(const char* path, struct cJSON* root);
/* fsync a directory so a rename inside it is durable; dies naming it */
void fsync_dir(const char* dir);
/* the directory part of path ("." when none) into out */
void dir_of(const char* path, char* out, size_t out_len);
/* mkdir -p; dies naming the first component that cannot be made */
void mkdir_p(const char* path);
bool path_exists(const char* path);
bool is_dir(const char* path);

#endif
