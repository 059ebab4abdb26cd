/* A 64-bit fingerprint of a Hugging Face checkpoint directory's weights. */
#ifndef REPOC_HF_FINGERPRINT_H
#define REPOC_HF_FINGERPRINT_H

#include <stdint.h>

/* Every tensor's name, dtype, shape and bytes, in any sharding (the same tensors in other files give the
   same value). Reads every weight byte once (page cache speed); names a LoRA adapter's base so a wrong or
   changed base is caught at load and merge. */
uint64_t hf_weights_fingerprint(const char* dir);

#endif
