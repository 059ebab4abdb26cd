/* Whole-file reading and atomic writing (docs/formats.md, "Run directory and checkpoints": write a
   temporary file, fsync, rename, so a crash at any moment leaves either the old
   or the new file, never half of one); the outputs a user names, which are
   replaced so only when they are regular files; lock files. */
#ifndef REPOC_FILEIO_H
#define REPOC_FILEIO_H

#include <stdbool.h>
#include <stddef.h>

/* The whole file, NUL-terminated, malloc'd; *len = its size. Dies naming the path. */
char* file_read_all(const char* path, size_t* len);
/* The JSON document in the file (cJSON_Delete it); dies naming the path when it cannot be read or parsed */
struct cJSON* json_read_file(const char* path);
/* NULL (and errno set) instead of dying, for optional files */
char* file_read_all_or_null(const char* path, size_t* len);
/* the reason file_read_all_or_null failed with errno err ("not a regular file ..." for EINVAL) */
const char* file_read_error(int err);
/* Write path atomically: path.tmp.<pid>, fsync, rename, fsync of the directory. repoc's own
   files (checkpoints, the run directory) are written so: whatever is at path is replaced. */
void file_write_atomic(const char* path, const void* data, size_t len);

/* An output path a user names (--json, --out): how file_write_output writes it.
   OUT_REPLACE: atomically (file_write_atomic) at target, which is path itself when it is a
   regular file or does not exist yet, or the regular file a symbolic link at path points to
   (the link is kept). OUT_STREAM: path is written through, never renamed over: a FIFO, a
   device (/dev/null, /dev/full), or a descriptor's link (/dev/stdout, /dev/fd/N,
   /proc/self/fd/N, whatever the descriptor is); opened to append, and when it is our own
   stdout or stderr, written through that descriptor so its offset moves on. */
typedef enum { OUT_REPLACE, OUT_STREAM } OutputKind;
/* The kind of path and, for OUT_REPLACE, the file to replace into target. Returns 0, or 1
   with the reason in err: a directory, a symbolic link to nothing, a link loop. */
int file_output_kind(const char* path, OutputKind* kind, char* target, size_t target_len, char* err, size_t err_len);
/* Write data to the user-named output path as file_output_kind says; dies naming path on
   any error (a write error such as ENOSPC from /dev/full too). A stream gets stdout
   flushed first, so what the program printed before comes first on a shared descriptor. */
void file_write_output(const char* path, const void* data, size_t len);
struct cJSON;
/* Print root as indented JSON with a final newline into the user-named output path
   (file_write_output), and free root */
void file_write_json(const char* path, struct cJSON* root);
/* flock(LOCK_EX | LOCK_NB) on path (created when missing, never through a link), which then
   holds our pid. Returns the open descriptor (held until file_unlock or the process exits), or -1 with
   errno set; for EWOULDBLOCK, the holder's pid (waited for up to a second) in holder, else
   "unknown". */
int file_lock(const char* path, char* holder, size_t holder_len);
/* Release a lock of file_lock and remove its file, so that a finished run leaves none behind; a process
   that locked the removed file meanwhile notices and locks the new one. */
void file_unlock(const char* path, int fd);
/* fsync a directory so a rename inside it is durable; dies naming it */
void fsync_dir(const char* dir);
/* the directory part of path ("." when none) into out */
void dir_of(const char* path, char* out, size_t out_len);
/* mkdir -p; dies naming the first component that cannot be made */
void mkdir_p(const char* path);
bool path_exists(const char* path);
bool is_dir(const char* path);

/* The temporary names file_write_atomic and st_write leave behind when killed: <stem>.tmp.<pid>.
   tmp_name_pid: pid when name is name[0..stem) + ".tmp." + 1 to 9 digits, else 0. pid_alive: whether a
   process has that pid (another user's too). file_remove_stale_tmp: unlink every regular file (a link or
   directory stays) dir/<stems[i]>.tmp.<pid> whose pid is not this process's and no live process has;
   nothing else is touched. Returns how many it removed. */
long tmp_name_pid(const char* name, size_t stem);
bool pid_alive(long pid);
size_t file_remove_stale_tmp(const char* dir, const char* const* stems, size_t n);

#endif
