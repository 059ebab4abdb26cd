/* Atomic writes never write through a symbolic link: a link (or a leftover)
   at the temporary name <path>.tmp.<pid> is replaced, its target untouched,
   for file_write_atomic and st_write alike. */
#include <stdlib.h>
#include <sys/stat.h>

#include "common/check.h"
#include "common/fileio.h"
#include "common/safetensors.h"
#include "tests/testutil.h"

static char root[] = "/tmp/repoc_fileio.XXXXXX";

/* a link at path.tmp.<this pid> to a file "victim" holding "precious" */
static void plant_link(const char* path, char* victim, size_t len) {
    snprintf(victim, len, "%s/victim_%ld", root, random());
    FILE* f = fopenCheck(victim, "w");
    fputs("precious", f);
    fcloseCheck(f, victim);
    char tmp[1024];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    CHECK(symlink(victim, tmp) == 0, "symlink %s", tmp);
}

static bool holds(const char* path, const char* text) {
    char* got = file_read_all_or_null(path, NULL);
    bool same = got && !strcmp(got, text);
    free(got);
    return same;
}

int main(void) {
    CHECK(mkdtemp(root), "mkdtemp");
    char path[600], victim[700], tmp[700];

    snprintf(path, sizeof(path), "%s/latest", root);
    plant_link(path, victim, sizeof(victim));
    file_write_atomic(path, "step_0000002\n", 13);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    struct stat st;
    EXPECT(holds(victim, "precious"), "file_write_atomic: the target of a link at the temporary name is untouched");
    EXPECT(holds(path, "step_0000002\n") && lstat(path, &st) == 0 && S_ISREG(st.st_mode),
           "file_write_atomic: the file is written, as a regular file");
    EXPECT(lstat(tmp, &st) != 0, "file_write_atomic: nothing left at the temporary name");

    snprintf(path, sizeof(path), "%s/model.safetensors", root);
    plant_link(path, victim, sizeof(victim));
    real x[4] = {1, 2, 3, 4};
    StWriteTensor w = {"x", ST_F32, 1, {4, 0}, x};
    st_write(path, &w, 1, NULL, NULL, 0);
    StFile f;
    st_open_or_die(&f, path);
    const StTensor* t = st_find(&f, "x");
    EXPECT(holds(victim, "precious"), "st_write: the target of a link at the temporary name is untouched");
    EXPECT(t && t->numel == 4, "st_write: the file is written and reads back");
    st_close(&f);

    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    if (system(cmd) != 0) printf("  (could not remove %s)\n", root);
    printf("%d passed, %d failed\n", test_passes, test_failures);
    return test_failures ? 1 : 0;
}
