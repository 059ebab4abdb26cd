/* Which kernel runs attention's products in compute_dtype "bf16" on this CPU (model/attention.c): AMX tiles
   where the CPU has AMX-BF16 and the kernel lets this process use them, vdpbf16ps where the CPU's BF16 dot
   products outrun its FP32 multiply-adds (AMD's Zen 4 and Zen 5: twice the multiply-adds per instruction at the
   same rate), and FP32 elsewhere: on Intel cores vdpbf16ps issues on one port where FP32 FMA has two, so it
   does the same multiply-adds per cycle plus the rounding of the operands, and measured 0.63-0.68x FP32
   attention on an Intel Xeon with AMX (docs/cpus.md, "AMX"). */
#ifndef REPOC_AMX_H
#define REPOC_AMX_H

#include <stdbool.h>

/* the CPU has AMX-TILE and AMX-BF16 and Linux granted this process the tile state (asked once; the answer is
   kept). Float builds on x86-64 only. */
bool amx_usable(void);

/* a compute_dtype "bf16" model gives attention BF16 operands (AttnShape.bf16): AMX, or vdpbf16ps on AMD */
bool attention_bf16_pays(void);

/* what attention's products run on in bf16 mode, for the start-up line: "AMX tiles", "vdpbf16ps" or why FP32 */
const char* attention_bf16_kernel(void);

#endif
