/* Memory-mapped input files and SIGBUS. Reading a page of a mapping whose file
   has shrunk since it was mapped raises SIGBUS, which would end the process
   with no message (exit 135). Files registered here are named instead: the
   handler writes "error: SIGBUS reading 'FILE' at byte offset N ..." and exits 1.
   Nothing it could leave half-written exists: checkpoints are renamed into
   place whole, so the last one stays as it was. */
#ifndef REPOC_MAPPED_H
#define REPOC_MAPPED_H

#include <stddef.h>

/* Register [addr, addr+len) as a mapping of path (the string must outlive the
   registration); the first call installs the SIGBUS handler. */
void mapped_add(const void* addr, size_t len, const char* path);
/* Forget the mapping at addr (before munmap). */
void mapped_remove(const void* addr);

#endif
