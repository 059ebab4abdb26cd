/* One run per out_dir, the names of its checkpoint files and step directories, and removal that touches
   only repoc's own files; see run_dir.h. */
#include "train/run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h> /* open, openat, O_NOFOLLOW */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "common/fileio.h" /* tmp_name_pid, pid_alive, file_remove_stale_tmp */

const CkptFile CKPT_FILES[CKPT_N_FILES] = {
    {"config.json", CKPT_ALWAYS},          {"optimizer.safetensors", CKPT_ALWAYS},
    {"trainer_state.json", CKPT_ALWAYS},   {"model.safetensors", CKPT_BASE},
    {"adapter_config.json", CKPT_ADAPTER}, {"adapter_model.safetensors", CKPT_ADAPTER},
    {"outer.safetensors", CKPT_OPTIONAL},
};
const char* const CKPT_CARRIED[CKPT_N_CARRIED] = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                                                  "generation_config.json"};

bool run_dir_step_of(const char* name, size_t* step) {
    if (strncmp(name, "step_", 5) != 0) return false;
    const char* d = name + 5;
    size_t n = strspn(d, "0123456789");
    if (n == 0 || n > 19 || d[n] != 0) return false;
    *step = (size_t)strtoull(d, NULL, 10);
    return true;
}

size_t run_dir_list_steps(const char* out_dir, size_t** steps_out) {
    DIR* d = opendir(out_dir);
    size_t n = 0, cap = 16;
    size_t* steps = mallocCheck(cap * sizeof(size_t));
    if (d) {
        struct dirent* e;
        while ((e = readdir(d))) {
            size_t s;
            if (!run_dir_step_of(e->d_name, &s)) continue;
            if (n == cap) {
                size_t* grown = mallocCheck(2 * cap * sizeof(size_t));
                memcpy(grown, steps, n * sizeof(size_t));
                free(steps);
                steps = grown;
                cap *= 2;
            }
            steps[n++] = s;
        }
        closedir(d);
    }
    for (size_t i = 1; i < n; i++) /* insertion sort: a run keeps a handful */
        for (size_t j = i; j > 0 && steps[j - 1] > steps[j]; j--) {
            size_t t = steps[j];
            steps[j] = steps[j - 1];
            steps[j - 1] = t;
        }
    *steps_out = steps;
    return n;
}

/* name is stem, or stem + .tmp.<pid> (a file_write_atomic or st_write leftover) */
static bool is_file_or_tmp(const char* name, const char* stem) {
    size_t n = strlen(stem);
    return !strncmp(name, stem, n) && (name[n] == 0 || tmp_name_pid(name, n) > 0);
}

/* a file repoc writes into a checkpoint: its own, or one carried from the source model */
static bool is_ckpt_file(const char* name) {
    for (size_t i = 0; i < CKPT_N_FILES; i++)
        if (is_file_or_tmp(name, CKPT_FILES[i].name)) return true;
    for (size_t i = 0; i < CKPT_N_CARRIED; i++)
        if (is_file_or_tmp(name, CKPT_CARRIED[i])) return true;
    return false;
}

void run_dir_remove_checkpoint(const char* dir) {
    struct stat st;
    if (lstat(dir, &st) != 0) return;
    if (!S_ISDIR(st.st_mode)) { /* a link (or a file) in the place of a checkpoint: not repoc's */
        printf("note: left '%s' in place: it is %s, not a checkpoint directory repoc wrote\n", dir,
               S_ISLNK(st.st_mode) ? "a symbolic link" : "not a directory");
        return;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR* d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        printf("note: cannot open '%s' to remove it: %s\n", dir, strerror(errno));
        return;
    }
    char kept[256] = "";
    size_t n_kept = 0;
    struct dirent* e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        struct stat fs;
        bool ours = is_ckpt_file(e->d_name) && fstatat(fd, e->d_name, &fs, AT_SYMLINK_NOFOLLOW) == 0 &&
                    (S_ISREG(fs.st_mode) || S_ISLNK(fs.st_mode)); /* a link is unlinked, never followed */
        if (ours && unlinkat(fd, e->d_name, 0) == 0) continue;
        if (n_kept++ < 4) snprintf(kept + strlen(kept), sizeof(kept) - strlen(kept), " '%.60s'", e->d_name);
    }
    closedir(d);
    if (n_kept)
        printf("note: kept '%s': it holds %zu entr%s repoc did not write:%s%s\n", dir, n_kept,
               n_kept == 1 ? "y" : "ies", kept, n_kept > 4 ? " ..." : "");
    else if (rmdir(dir) != 0) printf("note: cannot remove '%s': %s\n", dir, strerror(errno));
}

void run_dir_clean_stale(const char* out_dir) {
    static const char* const files[] = {"latest", "run_config.json", "metrics.jsonl"};
    file_remove_stale_tmp(out_dir, files, 3);
    DIR* d = opendir(out_dir);
    if (!d) return;
    struct dirent* e;
    char path[4096];
    while ((e = readdir(d))) {
        const char* name = e->d_name;
        size_t digits = strspn(name + 5, "0123456789");
        long pid = !strncmp(name, "step_", 5) && digits >= 7 ? tmp_name_pid(name, 5 + digits) : 0;
        if (pid <= 0 || pid == (long)getpid() || pid_alive(pid)) continue;
        snprintf(path, sizeof(path), "%s/%s", out_dir, name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) run_dir_remove_checkpoint(path);
    }
    closedir(d);
}

RunDirContents run_dir_contents(const char* out_dir) {
    RunDirContents c = {0, false};
    char path[4096];
    snprintf(path, sizeof(path), "%s/metrics.jsonl", out_dir);
    struct stat st;
    c.metrics = stat(path, &st) == 0 && st.st_size > 0;
    size_t* steps;
    c.n_steps = run_dir_list_steps(out_dir, &steps);
    free(steps);
    return c;
}

static int lock_fd = -1; /* held open (and locked) until run_dir_unlock or the process exits */
static char lock_path[4096];

void run_dir_lock(const char* out_dir) {
    if (lock_fd >= 0) return;
    char path[4096], holder[32];
    snprintf(path, sizeof(path), "%s/run.lock", out_dir);
    int fd = file_lock(path, holder, sizeof(holder));
    if (fd < 0 && errno == EWOULDBLOCK)
        DIE("run.out_dir '%s' is in use by another run (pid %s holds '%s'); one run per out_dir: wait for it, "
            "stop it, or choose another run.out_dir",
            out_dir, holder, path);
    if (fd < 0) DIE("cannot lock '%s': %s", path, strerror(errno));
    lock_fd = fd;
    snprintf(lock_path, sizeof lock_path, "%s", path);
}

void run_dir_unlock(void) {
    file_unlock(lock_path, lock_fd);
    lock_fd = -1;
}
