/* Whole-file reading, atomic writing, user-named outputs and lock files; see fileio.h. */
#include "common/fileio.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h> /* kill(pid, 0): is a pid alive */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"

/* errno for a path that is not a regular file: EISDIR for a directory, else EINVAL */
static int not_regular_errno(mode_t mode) { return S_ISDIR(mode) ? EISDIR : EINVAL; }

char* file_read_all_or_null(const char* path, size_t* len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block before the type check */
    if (fd < 0) return NULL;
    struct stat st;
    int bad = fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? not_regular_errno(st.st_mode) : 0;
    if (bad) {
        close(fd);
        errno = bad;
        return NULL;
    }
    FILE* fp = fdopen(fd, "rb");
    if (!fp) {
        close(fd);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    char* buf = mallocCheck(n + 1);
    freadCheck(buf, 1, n, fp, path);
    fclose(fp);
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

const char* file_read_error(int err) {
    return err == EINVAL ? "not a regular file (a FIFO, device or socket)" : strerror(err);
}

char* file_read_all(const char* path, size_t* len) {
    char* buf = file_read_all_or_null(path, len);
    if (!buf) DIE("cannot read '%s': %s", path, file_read_error(errno));
    return buf;
}

struct cJSON* json_read_file(const char* path) {
    size_t len;
    char* text = file_read_all(path, &len);
    cJSON* root = cJSON_ParseWithLength(text, len);
    free(text);
    CHECK(root, "%s: invalid JSON", path);
    return root;
}

void dir_of(const char* path, char* out, size_t out_len) {
    const char* slash = strrchr(path, '/');
    if (!slash) snprintf(out, out_len, ".");
    else if (slash == path) snprintf(out, out_len, "/");
    else snprintf(out, out_len, "%.*s", (int)(slash - path), path);
}

void fsync_dir(const char* dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) DIE("cannot open directory '%s' to sync it: %s", dir, strerror(errno));
    if (fsync(fd) != 0 && errno != EINVAL) DIE("fsync of directory '%s': %s", dir, strerror(errno));
    close(fd);
}

/* all len bytes of data to fd: 0, or -1 with errno set */
static int write_all(int fd, const void* data, size_t len) {
    const char* p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

void file_write_atomic(const char* path, const void* data, size_t len) {
    char tmp[4096], dir[4096];
    CHECK(snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) < (int)sizeof(tmp), "path too long: %s", path);
    unlink(tmp); /* a leftover, or a link someone put there: removed, never written through */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) DIE("cannot create '%s': %s", tmp, strerror(errno));
    if (write_all(fd, data, len) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        DIE("writing '%s': %s", tmp, strerror(e));
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        DIE("flushing '%s': %s", tmp, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        DIE("renaming '%s' to '%s': %s", tmp, path, strerror(e));
    }
    dir_of(path, dir, sizeof(dir));
    fsync_dir(dir);
}

/* path lies in /proc, or is a link into it (/dev/stdout -> /proc/self/fd/1, /dev/fd/N): a
   descriptor's own link, which names that descriptor's stream even when it is a regular file */
static bool names_descriptor(const char* path, const struct stat* lst) {
    char buf[4096], real[PATH_MAX];
    if (S_ISLNK(lst->st_mode)) {
        ssize_t n = readlink(path, buf, sizeof(buf) - 1);
        if (n > 0) {
            buf[n] = 0;
            if (!strncmp(buf, "/proc/", 6)) return true;
        }
    }
    dir_of(path, buf, sizeof(buf));
    return realpath(buf, real) && (!strcmp(real, "/proc") || !strncmp(real, "/proc/", 6));
}

int file_output_kind(const char* path, OutputKind* kind, char* target, size_t target_len, char* err, size_t err_len) {
    struct stat lst, st;
    *kind = OUT_REPLACE;
    if (lstat(path, &lst) != 0) { /* nothing there yet: a new regular file (creating it says why not) */
        if ((size_t)snprintf(target, target_len, "%s", path) >= target_len)
            return set_err(err, err_len, "'%s': path too long", path);
        return 0;
    }
    bool link = S_ISLNK(lst.st_mode);
    if (stat(path, &st) != 0) {
        if (link && errno == ENOENT)
            return set_err(err, err_len,
                           "'%s' is a symbolic link to a file that does not exist: create the file "
                           "or remove the link",
                           path);
        return set_err(err, err_len, "'%s': %s", path, strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) return set_err(err, err_len, "'%s' is a directory", path);
    if (!S_ISREG(st.st_mode) || names_descriptor(path, &lst)) *kind = OUT_STREAM;
    char real[PATH_MAX];
    if (*kind == OUT_REPLACE && link && !realpath(path, real))
        return set_err(err, err_len, "'%s': cannot resolve the symbolic link: %s", path, strerror(errno));
    if ((size_t)snprintf(target, target_len, "%s", *kind == OUT_REPLACE && link ? real : path) >= target_len)
        return set_err(err, err_len, "'%s': path too long", path);
    return 0;
}

void file_write_output(const char* path, const void* data, size_t len) {
    OutputKind kind;
    char target[4096], err[4400];
    if (file_output_kind(path, &kind, target, sizeof(target), err, sizeof(err))) DIE("cannot write %s", err);
    if (kind == OUT_REPLACE) {
        file_write_atomic(target, data, len);
        return;
    }
    fflush(stdout);
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC); /* a FIFO waits here for its reader */
    if (fd < 0) DIE("cannot open '%s' for writing: %s", path, strerror(errno));
    /* our own stdout or stderr (/dev/stdout into a file): written through that descriptor, so the
       text printed after it goes after it instead of over it (an open of its own has its own offset) */
    struct stat a, b;
    int out = fd;
    for (int std = 1; std <= 2; std++)
        if (fstat(fd, &a) == 0 && fstat(std, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) out = std;
    if (write_all(out, data, len) != 0) {
        int e = errno;
        close(fd);
        DIE("writing '%s': %s", path, strerror(e));
    }
    if (close(fd) != 0) DIE("closing '%s': %s", path, strerror(errno));
}

/* whether fd is still the file at path: a holder that ends removes the lock file (file_unlock), so a lock
   taken on the file it removed guards nothing */
static bool still_at(int fd, const char* path) {
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* the pid of a lock's holder from its file (it writes it just after taking the lock: up to a second) */
static void read_holder(int fd, char* holder, size_t holder_len) {
    char buf[32] = "";
    ssize_t n = 0;
    for (int tries = 0; tries < 50; tries++) {
        n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n > 0 && memchr(buf, '\n', (size_t)n)) break;
        usleep(20000);
    }
    buf[n > 0 ? n : 0] = 0;
    buf[strcspn(buf, "\n")] = 0;
    if (buf[0]) snprintf(holder, holder_len, "%s", buf);
}

int file_lock(const char* path, char* holder, size_t holder_len) {
    snprintf(holder, holder_len, "unknown");
    for (;;) {
        int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) return -1;
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            if (e == EWOULDBLOCK) read_holder(fd, holder, holder_len);
            close(fd);
            errno = e;
            return -1;
        }
        if (!still_at(fd, path)) { /* its last holder removed it as we took it: lock the file at path now */
            close(fd);
            continue;
        }
        char pid[32];
        int len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
        if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        return fd;
    }
}

void file_unlock(const char* path, int fd) {
    if (fd < 0) return;
    unlink(path); /* while still held: a waiter that then locks the removed file sees it is gone (still_at) */
    close(fd);
}

void file_write_json(const char* path, cJSON* root) {
    char* text = cJSON_Print(root);
    cJSON_Delete(root);
    CHECK(text, "out of memory printing the JSON of '%s'", path);
    size_t len = strlen(text);
    text[len] = '\n'; /* the terminating NUL becomes a final newline */
    file_write_output(path, text, len + 1);
    free(text);
}

bool path_exists(const char* path) {
    struct stat st;
    return stat(path, &st) == 0;
}

bool is_dir(const char* path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

void mkdir_p(const char* path) {
    char buf[4096];
    CHECK(strlen(path) < sizeof(buf), "path too long: %s", path);
    strcpy(buf, path);
    for (char* s = buf + 1;; s++) {
        if (*s == '/' || *s == 0) {
            char c = *s;
            *s = 0;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) DIE("cannot create directory '%s': %s", buf, strerror(errno));
            if (!is_dir(buf)) DIE("'%s' exists and is not a directory", buf);
            *s = c;
            if (c == 0) break;
        }
    }
}

long tmp_name_pid(const char* name, size_t stem) {
    if (strncmp(name + stem, ".tmp.", 5) != 0) return 0;
    const char* d = name + stem + 5;
    if (*d < '0' || *d > '9' || strlen(d) > 9) return 0;
    for (const char* c = d; *c; c++)
        if (*c < '0' || *c > '9') return 0;
    return atol(d);
}

bool pid_alive(long pid) { return kill((pid_t)pid, 0) == 0 || errno == EPERM; }

size_t file_remove_stale_tmp(const char* dir, const char* const* stems, size_t n) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return 0;
    }
    size_t removed = 0;
    struct dirent* e;
    while ((e = readdir(d))) {
        long pid = 0;
        for (size_t i = 0; i < n && !pid; i++)
            if (!strncmp(e->d_name, stems[i], strlen(stems[i]))) pid = tmp_name_pid(e->d_name, strlen(stems[i]));
        if (pid <= 0 || pid == (long)getpid() || pid_alive(pid)) continue;
        struct stat st;
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        removed += unlinkat(fd, e->d_name, 0) == 0;
    }
    closedir(d);
    return removed;
}
