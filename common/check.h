/* Checked helpers used everywhere (docs/contributing.md, "Errors"): every failure prints
   "file:line: message" naming what was expected and what was found, and exits
   with status 1. The checks survive -DNDEBUG. */
#ifndef REPOC_CHECK_H
#define REPOC_CHECK_H

#include <stddef.h>
#include <stdio.h>

_Noreturn void die_at(const char* file, int line, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

#define DIE(...) die_at(__FILE__, __LINE__, __VA_ARGS__)
/* Set by dist_init (common/dist.h): `prefix` goes before file:line in every
   message ("rank 1 of 2, "), and end(1) ends the process instead of exit(1)
   (MPI_Abort, which also stops the other ranks). */
void die_set_handler(const char* prefix, void (*end)(int));
#define CHECK(cond, ...) \
    do { \
        if (!(cond)) die_at(__FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

void* malloc_check(size_t size, const char* file, int line);
void* calloc_check(size_t n, size_t size, const char* file, int line);
/* 64-byte aligned, zeroed: the arenas (params, grads, moments, activations) */
void* arena_alloc_check(size_t size, const char* file, int line);
FILE* fopen_check(const char* path, const char* mode, const char* file, int line);
void fread_check(void* ptr, size_t size, size_t n, FILE* fp, const char* path, const char* file, int line);
void fwrite_check(const void* ptr, size_t size, size_t n, FILE* fp, const char* path, const char* file, int line);
void fclose_check(FILE* fp, const char* path, const char* file, int line);

#define mallocCheck(n) malloc_check((n), __FILE__, __LINE__)
#define callocCheck(n, s) calloc_check((n), (s), __FILE__, __LINE__)
#define arenaAlloc(n) arena_alloc_check((n), __FILE__, __LINE__)
/* the same, naming the arena in the out-of-memory message */
void* arena_alloc_named(size_t size, const char* name, const char* file, int line);
/* the same zeroed, aligned arena, or NULL when out of memory (the caller names what it was for) */
void* arena_try_alloc(size_t size);
#define arenaAllocNamed(n, name) arena_alloc_named((n), (name), __FILE__, __LINE__)
#define fopenCheck(p, m) fopen_check((p), (m), __FILE__, __LINE__)
#define freadCheck(b, s, n, f, p) fread_check((b), (s), (n), (f), (p), __FILE__, __LINE__)
#define fwriteCheck(b, s, n, f, p) fwrite_check((b), (s), (n), (f), (p), __FILE__, __LINE__)
#define fcloseCheck(f, p) fclose_check((f), (p), __FILE__, __LINE__)

/* For parsers that report instead of dying (the fuzzers call them): format the
   message into err (when err and err_len are non-zero) and return 1. */
int set_err(char* err, size_t err_len, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

/* a * b, or die naming what overflowed */
size_t mul_check(size_t a, size_t b, const char* what, const char* file, int line);
#define mulCheck(a, b, what) mul_check((a), (b), (what), __FILE__, __LINE__)

#endif
