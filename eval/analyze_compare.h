/* build/analyze --compare: several analysis.json files (eval/analyze_out.h) side by side
   (docs/analyze.md). */
#ifndef REPOC_ANALYZE_COMPARE_H
#define REPOC_ANALYZE_COMPARE_H

#include <stddef.h>

/* Grouped bars and a table from several analysis.json files into dir */
void analyze_compare(const char* const* files, size_t n, const char* dir);

#endif
