/* build/analyze's files of the paper's analyses (docs/analyze.md): ranges.csv
   and .svg (z's range against the input length, log scale, with RoPE's L - 1
   for reference), boundaries.csv and .svg, mechanism.csv and .svg (needle
   against filler distance to the query, one point per head), and for a text
   (--text) text_positions.csv with each token's text and one figure per RePo
   layer, text_layer<l>.svg, with outlier-robust axes (outliers marked on the edge). */
#ifndef REPOC_ANALYZE_Z_FILES_H
#define REPOC_ANALYZE_Z_FILES_H

#include <stddef.h>

#include "eval/analyze_types.h"

/* the text figures' y axes end at Tukey's far-out fences Q1 - 3 IQR and Q3 + 3 IQR (within the extremes):
   a spike leaves the axis however short the text, and a wide but outlier-free z keeps all of it */
#define TEXT_FENCE 3.0

/* boundaries, mechanism and ranges as .csv and .svg (+ .png) into dir, those measured */
void analysis_write_z(const Analysis* an, const char* dir);
/* text: text_positions.csv and text_layer<l>.svg (+ .png) of the heads chosen into dir */
void analysis_write_text(const Analysis* an, const char* dir, const size_t* heads, size_t n_heads);

#endif
