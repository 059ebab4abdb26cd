/* The registry of memory-mapped input files and the SIGBUS handler; see mapped.h. */
#include "common/mapped.h"

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"

typedef struct {
    const char* addr;
    size_t len;
    const char* path;
} Mapping;
static Mapping* maps; /* grown outside the handler only */
static volatile size_t n_maps;
static size_t cap_maps;

static void put(const char* s) { /* async-signal-safe */
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(2, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

static void put_u64(uint64_t v) {
    char buf[24], *p = buf + sizeof(buf) - 1;
    *p = 0;
    do *--p = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    put(p);
}

static void on_sigbus(int sig, siginfo_t* si, void* ctx) {
    (void)ctx;
    const char* a = si->si_addr;
    for (size_t i = 0; i < n_maps; i++) {
        if (a >= maps[i].addr && a < maps[i].addr + maps[i].len) {
            put("error: SIGBUS reading '");
            put(maps[i].path);
            put("' at byte offset ");
            put_u64((uint64_t)(a - maps[i].addr));
            put(": the file shrank (or its storage failed) while it was being read; stopping. "
                "Checkpoints already written are unchanged.\n");
            _exit(1);
        }
    }
    put("error: SIGBUS at an address outside every registered file mapping; stopping\n");
    signal(sig, SIG_DFL);
    raise(sig);
}

void mapped_add(const void* addr, size_t len, const char* path) {
    if (cap_maps == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, &sa, NULL);
    }
    if (n_maps == cap_maps) {
        size_t cap = cap_maps ? 2 * cap_maps : 16;
        Mapping* grown = mallocCheck(cap * sizeof(Mapping));
        if (n_maps) memcpy(grown, maps, n_maps * sizeof(Mapping));
        Mapping* old = maps;
        maps = grown; /* the handler sees either array whole */
        free(old);
        cap_maps = cap;
    }
    maps[n_maps] = (Mapping){addr, len, path};
    n_maps = n_maps + 1;
}

void mapped_remove(const void* addr) {
    for (size_t i = 0; i < n_maps; i++)
        if (maps[i].addr == addr) {
            maps[i] = maps[n_maps - 1];
            n_maps = n_maps - 1;
            return;
        }
}
