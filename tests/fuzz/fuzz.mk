# tests/fuzz/fuzz.mk - libFuzzer harnesses (included from the top Makefile).
#
#   make fuzz           build every harness with clang + libFuzzer + ASan/UBSan,
#                       make the seed corpora, run each harness FUZZ_SECONDS
#                       (one at a time), copy any crash into tests/fuzz/regressions/
#   make fuzz-build     only build build/fuzz/fuzz_<target>
#   make fuzz-seeds     only (re)make build/fuzz/seeds/ from the public corpus
#   make fuzz-regress   replay tests/fuzz/regressions/<target>/* through the
#                       harnesses built with $(CC) + ASan/UBSan and a plain main()
#                       (no clang needed; this is the one for `make test`), then
#                       the public fuzzed images through every mode (replay_public.sh)
#   make fuzz-one FUZZ_TARGET=leaf   run one harness
#   make fuzz-modes     only the whole-mode harnesses (check, rebuild, salvage)
#   make fuzz-deps      install what the libFuzzer build needs (as root, like
#                       `make deps`); every clang object and the seeds depend on it
#
# Variables: FUZZ_SECONDS (per harness, default 60), FUZZ_TARGETS, FUZZ_CC,
# FUZZ_PUBLIC (the public corpus), FUZZ_ARGS (extra libFuzzer flags),
# FUZZ_DEB (the Debian packages of the clang build).

FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_PUBLIC  ?= $(abspath ../shared/corpus-public)
FUZZ_ARGS    ?=
FUZZ_MODE_TARGETS := check rebuild salvage
FUZZ_TARGETS ?= super leaf internal dir stat journal hash image $(FUZZ_MODE_TARGETS)

# Extra libFuzzer flags per target.  The mode harnesses run a whole command
# on an image of at most 4 MiB: no single allocation may exceed 256 MiB (a
# size read from disk must be bounded by the device), and -close_fd_mask=2
# gives libFuzzer its own copy of stderr (the harness captures the command's).
FUZZ_MODE_ARGS := -malloc_limit_mb=256
FUZZ_ARGS_check   ?= $(FUZZ_MODE_ARGS)
FUZZ_ARGS_rebuild ?= $(FUZZ_MODE_ARGS)
FUZZ_ARGS_salvage ?= $(FUZZ_MODE_ARGS)

FUZZ_DIR     := build/fuzz
FUZZ_SA_DIR  := build/fuzz-standalone
FUZZ_REG_DIR := tests/fuzz/regressions
FUZZ_PKGS    := sqlite3 libmagic jansson
# Debian 12: clang is clang 14, and libFuzzer's and the sanitizers' runtime
# (libclang-rt-14-dev) is only a Recommends of it, which install-deps.sh does
# not pull in; python3 makes the seeds.
FUZZ_DEB     ?= clang libclang-rt-14-dev python3
# FUZZ_LIBS and FUZZ_BASE ask pkg-config when used (=, not :=): on a fresh
# machine the libraries are installed by fuzz-deps after this file is read.
FUZZ_LIBS     = $(shell pkg-config --libs $(FUZZ_PKGS) 2>/dev/null) -lpthread -lm
FUZZ_WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
                -Wformat=2 -Wno-format-nonliteral -Wvla
FUZZ_BASE     = -std=c17 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -Iinclude $(FUZZ_WARN) \
                $(shell pkg-config --cflags $(FUZZ_PKGS) 2>/dev/null) \
                -O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=all -DRFS_TEST_BUILD
# Library objects get coverage instrumentation without libFuzzer's main().
# clang warns about the deliberate literal concatenation in an array of SQL
# strings (rebuild/scan.c), which gcc, the project's compiler, does not.
FUZZ_CLANG_ONLY := -Wno-string-concatenation
FUZZ_LIB_FLAGS  = $(FUZZ_BASE) $(FUZZ_CLANG_ONLY) -fsanitize=fuzzer-no-link,address,undefined
FUZZ_BIN_FLAGS  = $(FUZZ_BASE) $(FUZZ_CLANG_ONLY) -fsanitize=fuzzer,address,undefined
FUZZ_SA_FLAGS   = $(FUZZ_BASE) -fsanitize=address,undefined

# Everything the top Makefile links into rfsck except main(): the mode
# harnesses call the command entry points, which need rebuild/ and index/
# (and the schema compiled in from index/schema.sql, GEN_SCHEMA).
FUZZ_LIB_SRC := $(filter-out src/main.c,$(sort $(wildcard src/*.c rebuild/*.c index/*.c)))
FUZZ_LIB_OBJ := $(FUZZ_LIB_SRC:%.c=$(FUZZ_DIR)/%.o) $(FUZZ_DIR)/gen/index_schema.o
FUZZ_HDRS    := $(wildcard include/rfs/*.h src/*.h rebuild/*.h index/*.h)
FUZZ_BINS    := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)
FUZZ_SA_BINS := $(FUZZ_TARGETS:%=$(FUZZ_SA_DIR)/fuzz_%)
FUZZ_SEEDS   := $(FUZZ_DIR)/seeds/.stamp

# The standalone (no clang) build links the ASan library of the top Makefile.
FUZZ_ASAN_LIB ?= build/asan/librfs.a

.PHONY: fuzz fuzz-modes fuzz-build fuzz-deps fuzz-seeds fuzz-regress fuzz-one fuzz-run-one fuzz-clean

# A fresh machine needs no manual step: as root this installs the build
# libraries and clang + its runtime (tests/install-deps.sh, as `make deps`
# does); otherwise it names the missing packages and fails.  Order-only
# prerequisite of every clang object and of the seeds, so it runs once per
# make and never forces a rebuild.
fuzz-deps:
	@sh tests/install-deps.sh $(DEB_BUILD) $(FUZZ_DEB)

fuzz-build: $(FUZZ_BINS)

$(FUZZ_DIR)/librfs.a: $(FUZZ_LIB_OBJ)
	rm -f $@; ar rcs $@ $^

$(FUZZ_DIR)/src/%.o: src/%.c $(FUZZ_HDRS) | fuzz-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_LIB_FLAGS) -c -o $@ $<

$(FUZZ_DIR)/rebuild/%.o: rebuild/%.c $(FUZZ_HDRS) | fuzz-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_LIB_FLAGS) -c -o $@ $<

$(FUZZ_DIR)/index/%.o: index/%.c $(FUZZ_HDRS) | fuzz-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_LIB_FLAGS) -c -o $@ $<

$(FUZZ_DIR)/gen/index_schema.o: $(GEN_SCHEMA) | fuzz-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_LIB_FLAGS) -c -o $@ $<

# SHA-256 (salvage hashes the image twice and runs a 1 MB known-answer test
# on every call) has no branch worth fuzzing, and under coverage
# instrumentation it took 90 % of a salvage execution: compiled with the
# sanitizers but without coverage.
$(FUZZ_DIR)/src/sha256.o: FUZZ_LIB_FLAGS = $(FUZZ_BASE) $(FUZZ_CLANG_ONLY) -fsanitize=address,undefined

# The mode harnesses share modes_common.h (template, runner, contracts).
$(FUZZ_MODE_TARGETS:%=$(FUZZ_DIR)/fuzz_%) $(FUZZ_MODE_TARGETS:%=$(FUZZ_SA_DIR)/fuzz_%): \
	tests/fuzz/modes_common.h

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_DIR)/librfs.a | fuzz-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_BIN_FLAGS) -o $@ $< $(FUZZ_DIR)/librfs.a $(FUZZ_LIBS)

$(FUZZ_SA_DIR)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/standalone_main.c $(FUZZ_ASAN_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_SA_FLAGS) -o $@ $< tests/fuzz/standalone_main.c $(FUZZ_ASAN_LIB) $(FUZZ_LIBS)

fuzz-seeds: $(FUZZ_SEEDS)

$(FUZZ_SEEDS): tests/fuzz/make_seeds.py | fuzz-deps
	@mkdir -p $(dir $@)
	python3 tests/fuzz/make_seeds.py $(FUZZ_DIR)/seeds $(FUZZ_PUBLIC)
	@touch $@

# Runs harness $(1) for FUZZ_SECONDS; on a finding, files every artifact as
# tests/fuzz/regressions/$(1)/<name> with <name>.txt (provenance, habit 17).
define fuzz_run
	@mkdir -p $(FUZZ_DIR)/corpus/$(1) $(FUZZ_DIR)/artifacts/$(1) $(FUZZ_DIR)/logs
	@rm -f $(FUZZ_DIR)/artifacts/$(1)/*
	@cmd="$(FUZZ_DIR)/fuzz_$(1) -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
-rss_limit_mb=2048 -print_final_stats=1 -dict=$(FUZZ_DIR)/seeds/reiserfs.dict \
-artifact_prefix=$(FUZZ_DIR)/artifacts/$(1)/ $(FUZZ_ARGS_$(1)) $(FUZZ_ARGS) \
$(FUZZ_DIR)/corpus/$(1) $(FUZZ_DIR)/seeds/$(1)"; \
	echo "== fuzz $(1): $$cmd"; \
	$$cmd > $(FUZZ_DIR)/logs/$(1).log 2>&1; rc=$$?; \
	grep -E '^#[0-9]+[[:space:]]+(DONE|INITED)|^stat::|SUMMARY|ERROR' $(FUZZ_DIR)/logs/$(1).log | tail -n 12; \
	found=0; \
	for a in $(FUZZ_DIR)/artifacts/$(1)/*; do \
	  [ -f "$$a" ] || continue; found=1; \
	  mkdir -p $(FUZZ_REG_DIR)/$(1); \
	  name=$$(basename "$$a"); cp "$$a" $(FUZZ_REG_DIR)/$(1)/$$name; \
	  { echo "harness:  fuzz_$(1) (tests/fuzz/fuzz_$(1).c)"; \
	    echo "found:    $$(date -u '+%Y-%m-%d %H:%M UTC') by make fuzz (libFuzzer, clang $$($(FUZZ_CC) -dumpversion))"; \
	    echo "command:  $$cmd"; \
	    echo "replay:   make fuzz-regress   or   $(FUZZ_DIR)/fuzz_$(1) $(FUZZ_REG_DIR)/$(1)/$$name"; \
	    echo "status:   open (remove this line when src/ is fixed)"; \
	    echo "what it broke (first report lines of the log):"; \
	    grep -E 'ERROR|SUMMARY|contract violated|TIMEOUT|timeout|#[0-9]+ 0x[0-9a-f]+ in .*/(src|rebuild|index|tests)/' $(FUZZ_DIR)/logs/$(1).log | head -n 14 | sed 's/^/  /'; \
	  } > $(FUZZ_REG_DIR)/$(1)/$$name.txt; \
	  echo "== fuzz $(1): FINDING filed as $(FUZZ_REG_DIR)/$(1)/$$name (+ .txt)"; \
	done; \
	if [ $$rc -ne 0 ] || [ $$found -ne 0 ]; then echo "== fuzz $(1): FAILED (rc $$rc), log $(FUZZ_DIR)/logs/$(1).log"; \
	  echo $(1) >> $(FUZZ_DIR)/failed; fi
endef

fuzz: fuzz-build fuzz-seeds
	@rm -f $(FUZZ_DIR)/failed
	@for t in $(FUZZ_TARGETS); do \
	  $(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST)) fuzz-run-one FUZZ_TARGET=$$t; \
	done
	@if [ -s $(FUZZ_DIR)/failed ]; then echo "fuzz: findings in: $$(tr '\n' ' ' < $(FUZZ_DIR)/failed)"; exit 1; fi
	@echo "fuzz: no findings in $(FUZZ_SECONDS) s per harness"

# The three whole-mode harnesses only, FUZZ_SECONDS each.
fuzz-modes:
	@$(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST)) fuzz FUZZ_TARGETS="$(FUZZ_MODE_TARGETS)"

FUZZ_TARGET ?= leaf
fuzz-one: $(FUZZ_DIR)/fuzz_$(FUZZ_TARGET) fuzz-seeds
	@rm -f $(FUZZ_DIR)/failed
	@$(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST)) fuzz-run-one
	@if [ -s $(FUZZ_DIR)/failed ]; then exit 1; fi

fuzz-run-one:
	$(call fuzz_run,$(FUZZ_TARGET))

# Every reproducer must have its .txt; each runs in its own process so one
# finding does not hide another.  An "env: VAR=value ..." line in the .txt
# sets variables for that reproducer only (RFS_FUZZ_STRICT=0 would turn on
# fuzz_rebuild.c's tolerance of finding F1).  Then replay_public.sh runs the
# ASan rfsck's check, fix --dry-run, rebuild --dry-run and salvage on every
# image of $(FUZZ_PUBLIC)/fuzzed and /negative, whole, with the harnesses'
# contracts (skipped, with a message, when there is no public corpus).
fuzz-regress: $(FUZZ_SA_BINS) $(ASAN_DIR)/rfsck
	@fail=0; n=0; \
	for t in $(FUZZ_TARGETS); do \
	  d=$(FUZZ_REG_DIR)/$$t; [ -d $$d ] || continue; \
	  for f in $$(find $$d -type f ! -name '*.txt' | sort); do \
	    n=$$((n + 1)); \
	    if [ ! -f "$$f.txt" ]; then echo "fuzz-regress: $$f has no $$f.txt (provenance)"; fail=$$((fail + 1)); continue; fi; \
	    envs=$$(sed -n 's/^env: *//p' "$$f.txt"); \
	    if env $$envs ASAN_OPTIONS=handle_abort=1:$$ASAN_OPTIONS $(FUZZ_SA_DIR)/fuzz_$$t "$$f" >/dev/null 2>$(FUZZ_SA_DIR)/last.err; then :; else \
	      echo "fuzz-regress: FAIL fuzz_$$t $$f (see $$f.txt)"; \
	      grep -E 'ERROR|SUMMARY|TIMEOUT|violated|#[0-9]+ .* (src|rebuild|index|tests)/' $(FUZZ_SA_DIR)/last.err | head -n 8 | sed 's/^/  /'; \
	      fail=$$((fail + 1)); fi; \
	  done; \
	done; \
	echo "fuzz-regress: $$n reproducer(s), $$fail failed"; \
	w=$$(mktemp -d "$${TMPDIR:-/tmp}/rfsck-fuzz-public.XXXXXX"); \
	sh tests/fuzz/replay_public.sh $(CURDIR)/$(ASAN_DIR)/rfsck $(FUZZ_PUBLIC) $$w; prc=$$?; \
	rm -rf $$w; [ $$fail -eq 0 ] && { [ $$prc -eq 0 ] || [ $$prc -eq 77 ]; }

fuzz-clean:
	rm -rf $(FUZZ_DIR) $(FUZZ_SA_DIR)
