#!/usr/bin/env bash
# Regenerates the malformed safetensors corpus (tests/corpus/safetensors/, one
# file per error case, each named after it) and the valid fuzzer seeds
# (tests/corpus/safetensors_valid/). The files are committed; this script only
# documents how they were made (plain printf, no Python or torch). The expected
# error phrase of each malformed file is listed in tests/test_safetensors.c.
# Usage: tools/make_safetensors_corpus.sh   (from anywhere)
set -euo pipefail
export LC_ALL=C                 # ${#h} counts bytes, printf emits raw bytes
cd "$(dirname "$0")/.."
bad=tests/corpus/safetensors
good=tests/corpus/safetensors_valid
mkdir -p "$bad" "$good"

# le64 N: N (< 2^63) as 8 little-endian bytes
le64() {
    local n=$1 i
    for i in 0 1 2 3 4 5 6 7; do printf "\\$(printf '%03o' $(( (n >> (8 * i)) & 255 )))"; done
}
# st FILE HEADER [NZERO [DATA]]: the header length, HEADER, NZERO zero bytes,
# then DATA (a printf format of \x escapes)
st() {
    local f=$1 h=$2 nd=${3:-0} data=${4:-}
    { le64 ${#h}; printf '%s' "$h"; head -c "$nd" /dev/zero; printf "$data"; } > "$f"
}
# e DTYPE SHAPE OFFSETS: one tensor entry
e() { printf '{"dtype":"%s","shape":[%s],"data_offsets":[%s]}' "$1" "$2" "$3"; }

# ---- the file around the header
: > "$bad/empty.safetensors"
printf '\x10\x00\x00\x00\x00' > "$bad/truncated.safetensors"
{ le64 100; printf '{}'; } > "$bad/header_past_end.safetensors"
printf '\x00\x00\x00\x00\x00\x00\x00\x80{}' > "$bad/huge_header_length.safetensors"
le64 0 > "$bad/empty_header.safetensors"
# ---- the header as text
st "$bad/invalid_json.safetensors" '{"x":{"dtype":"F32",'
st "$bad/header_not_object.safetensors" '[1, 2, 3]'
st "$bad/trailing_garbage.safetensors" '{} x'
{ le64 4; printf '{\x00 }'; } > "$bad/nul_in_header.safetensors"
st "$bad/invalid_utf8.safetensors" $'{"\xff":1}'
# ---- tensor entries
st "$bad/entry_not_object.safetensors" '{"x":5}'
st "$bad/unknown_dtype.safetensors" "{\"x\":$(e F33 1 0,4)}" 4
st "$bad/dtype_not_string.safetensors" '{"x":{"dtype":32,"shape":[1],"data_offsets":[0,4]}}' 4
st "$bad/missing_dtype.safetensors" '{"x":{"shape":[1],"data_offsets":[0,4]}}' 4
st "$bad/missing_data_offsets.safetensors" '{"x":{"dtype":"F32","shape":[1]}}' 4
st "$bad/unknown_key.safetensors" '{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"foo":1}}' 4
st "$bad/duplicate_key_in_entry.safetensors" '{"x":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}}' 4
st "$bad/shape_not_array.safetensors" '{"x":{"dtype":"F32","shape":4,"data_offsets":[0,16]}}' 16
st "$bad/shape_non_number.safetensors" "{\"x\":$(e F32 '"4"' 0,16)}" 16
st "$bad/shape_negative.safetensors" "{\"x\":$(e F32 -1,4 0,0)}"
st "$bad/shape_fractional.safetensors" "{\"x\":$(e F32 1.5 0,4)}" 4
st "$bad/shape_huge.safetensors" "{\"x\":$(e U8 1e300 0,0)}"
st "$bad/shape_too_many_dims.safetensors" "{\"x\":$(e F32 1,1,1,1,1,1,1,1,1 0,4)}" 4
st "$bad/shape_product_overflow.safetensors" "{\"x\":$(e F32 4294967296,4294967296,16 0,0)}"
st "$bad/size_overflow.safetensors" "{\"x\":$(e F32 4294967296,1073741824 0,0)}"
st "$bad/size_mismatch.safetensors" "{\"x\":$(e F32 2,2 0,8)}" 8
st "$bad/offsets_wrong_length.safetensors" "{\"x\":$(e F32 1 0)}" 4
st "$bad/offsets_negative.safetensors" "{\"x\":$(e F32 1 -4,0)}" 4
st "$bad/offsets_fractional.safetensors" "{\"x\":$(e F32 1 0,4.5)}" 8
st "$bad/offsets_out_of_range.safetensors" "{\"x\":$(e F32 4 0,16)}" 8
st "$bad/offsets_begin_after_end.safetensors" "{\"x\":$(e U8 0 8,4)}" 8
st "$bad/offsets_overlap.safetensors" "{\"a\":$(e F32 2 0,8),\"b\":$(e F32 2 4,12)}" 12
st "$bad/duplicate_name.safetensors" "{\"x\":$(e F32 1 0,4),\"x\":$(e F32 1 4,8)}" 8
# ---- __metadata__
st "$bad/metadata_non_string.safetensors" '{"__metadata__":{"format":"pt","step":1}}'
st "$bad/metadata_not_object.safetensors" '{"__metadata__":["format","pt"]}'
st "$bad/metadata_duplicate_key.safetensors" '{"__metadata__":{"a":"1","a":"2"}}'
st "$bad/metadata_twice.safetensors" '{"__metadata__":{"a":"1"},"__metadata__":{"b":"2"}}'

# ---- valid files (fuzzer seeds; the test checks that they open)
st "$good/empty_object.safetensors" '{}      '
st "$good/one_f32.safetensors" "{\"x\":$(e F32 2 0,8)}" 0 '\x00\x00\x80\x3f\x00\x00\x00\xc0'   # 1.0, -2.0
h="{\"__metadata__\":{\"format\":\"pt\"},\"b\":$(e BF16 2 0,4),\"h\":$(e F16 3 4,10),\"i\":$(e I64 1 10,18),"
h="$h\"m\":$(e BOOL 2 18,20),\"s\":$(e F32 '' 20,24),\"z\":$(e F32 0,3 24,24)}"
{ le64 ${#h}; printf '%s' "$h"
  printf '\x80\x3f\x20\xc0'                    # b: bf16 1.0, -2.5
  printf '\x00\x3c\x01\x00\x00\x7c'            # h: f16 1.0, 2^-24, inf
  printf '\xff\xff\xff\xff\xff\xff\xff\xff'    # i: int64 -1
  printf '\x00\x01'                            # m: false, true
  printf '\x00\x00\x28\x42'                    # s: 42.0
} > "$good/mixed.safetensors"
echo "wrote $(ls "$bad" | wc -l) malformed files to $bad and $(ls "$good" | wc -l) valid files to $good"
