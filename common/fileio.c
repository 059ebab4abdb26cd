/* Whole-file reading and atomic writing; see fileio.h. */
#include "common/fileio.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"

/* errno for a path that is not a regular file: EISDIR for a directory, else EINVAL */
static int not_regular_errno(mode_t mode) { return S_ISDIR(mode) ? EISDIR : EINVAL; }

char* file_read_all_or_null(const char* path, size_t* len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);   /* a FIFO must not block before the type check */
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

void file_write_atomic(const char* path, const void* data, size_t len) {
    char tmp[4096], dir[4096];
    CHECK(snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) < (int)sizeof(tmp), "path too long: %s", path);
    unlink(tmp);   /* a leftover, or a link someone put there: removed, never written through */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) DIE("cannot create '%s': %s", tmp, strerror(errno));
    const char* p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            DIE("writing '%s': %s", tmp, strerror(e));
        }
        p += w;
        left -= (size_t)w;
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

void file_write_json(const char* path, cJSON* root) {
    char* text = cJSON_Print(root);
    cJSON_Delete(root);
    CHECK(text, "out of memory printing the JSON of '%s'", path);
    size_t len = strlen(text);
    text[len] = '\n';   /* the terminating NUL becomes a final newline */
    file_write_atomic(path, text, len + 1);
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
    for (char* s = buf + 1; ; s++) {
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
