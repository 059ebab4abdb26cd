/* One run per out_dir, and removal that touches only repoc's own files; see run_dir.h. */
#include "train/run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>          /* open, openat, O_NOFOLLOW */
#include <signal.h>         /* kill(pid, 0): is a pid alive */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>       /* flock */
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "train/checkpoint.h"   /* CKPT_FILES, ckpt_list_steps */

/* the pid of a ".tmp.<pid>" suffix right after name[0..stem), or 0 when name is not stem.tmp.<digits> */
static long tmp_pid(const char* name, size_t stem) {
    if (strncmp(name + stem, ".tmp.", 5) != 0) return 0;
    const char* d = name + stem + 5;
    if (*d < '0' || *d > '9' || strlen(d) > 9) return 0;
    for (const char* c = d; *c; c++)
        if (*c < '0' || *c > '9') return 0;
    return atol(d);
}

/* name is file, or file.tmp.<pid> (a file_write_atomic or st_write leftover) */
static bool is_ckpt_file(const char* name) {
    for (size_t i = 0; i < CKPT_N_FILES; i++) {
        size_t n = strlen(CKPT_FILES[i].name);
        if (!strncmp(name, CKPT_FILES[i].name, n) && (name[n] == 0 || tmp_pid(name, n) > 0)) return true;
    }
    return false;
}

void run_dir_remove_checkpoint(const char* dir) {
    struct stat st;
    if (lstat(dir, &st) != 0) return;
    if (!S_ISDIR(st.st_mode)) {   /* a link (or a file) in the place of a checkpoint: not repoc's */
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
                    (S_ISREG(fs.st_mode) || S_ISLNK(fs.st_mode));   /* a link is unlinked, never followed */
        if (ours && unlinkat(fd, e->d_name, 0) == 0) continue;
        if (n_kept++ < 4) snprintf(kept + strlen(kept), sizeof(kept) - strlen(kept), " '%.60s'", e->d_name);
    }
    closedir(d);
    if (n_kept) printf("note: kept '%s': it holds %zu entr%s repoc did not write:%s%s\n", dir, n_kept,
                       n_kept == 1 ? "y" : "ies", kept, n_kept > 4 ? " ..." : "");
    else if (rmdir(dir) != 0) printf("note: cannot remove '%s': %s\n", dir, strerror(errno));
}

/* a pid another process has: the leftover of a live process is not stale */
static bool pid_alive(long pid) { return kill((pid_t)pid, 0) == 0 || errno == EPERM; }

void run_dir_clean_stale(const char* out_dir) {
    DIR* d = opendir(out_dir);
    if (!d) return;
    static const char* const files[] = {"latest", "run_config.json", "metrics.jsonl"};
    struct dirent* e;
    char path[4096];
    while ((e = readdir(d))) {
        const char* name = e->d_name;
        long pid = 0;
        bool dir = false;
        size_t digits = strspn(name + 5, "0123456789");
        if (!strncmp(name, "step_", 5) && digits >= 7) {
            pid = tmp_pid(name, 5 + digits);
            dir = true;
        }
        for (size_t i = 0; i < 3 && !pid; i++)
            if (!strncmp(name, files[i], strlen(files[i]))) pid = tmp_pid(name, strlen(files[i]));
        if (pid <= 0 || pid == (long)getpid() || pid_alive(pid)) continue;
        snprintf(path, sizeof(path), "%s/%s", out_dir, name);
        struct stat st;
        if (lstat(path, &st) != 0) continue;
        if (dir && S_ISDIR(st.st_mode)) run_dir_remove_checkpoint(path);
        else if (!dir && S_ISREG(st.st_mode)) unlink(path);
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
    c.n_steps = ckpt_list_steps(out_dir, &steps);
    free(steps);
    return c;
}

static int lock_fd = -1;   /* held open (and locked) until the process exits */

void run_dir_lock(const char* out_dir) {
    if (lock_fd >= 0) return;
    char path[4096];
    snprintf(path, sizeof(path), "%s/run.lock", out_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) DIE("cannot open the lock file '%s': %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char holder[32] = "";
        /* the holder writes its pid just after taking the lock: give it up to a second to appear */
        ssize_t n = 0;
        for (int tries = 0; e == EWOULDBLOCK && tries < 50; tries++) {
            n = pread(fd, holder, sizeof(holder) - 1, 0);
            if (n > 0 && memchr(holder, '\n', (size_t)n)) break;
            usleep(20000);
        }
        holder[n > 0 ? n : 0] = 0;
        holder[strcspn(holder, "\n")] = 0;
        close(fd);
        if (e == EWOULDBLOCK)
            DIE("run.out_dir '%s' is in use by another run (pid %s holds '%s'); one run per out_dir: wait for it, "
                "stop it, or choose another run.out_dir", out_dir, holder[0] ? holder : "unknown", path);
        DIE("cannot lock '%s': %s", path, strerror(e));
    }
    char pid[32];
    int len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len)
        DIE("cannot write the lock file '%s': %s", path, strerror(errno));
    lock_fd = fd;
}
