# rfsck - check, repair, rebuild and salvage ReiserFS v3 volumes.
#
#   make          build ./rfsck (optimised)
#   make test     install missing build dependencies (as root), build with
#                 AddressSanitizer + UndefinedBehaviorSanitizer, run every test
#   make demo     build, then run rfsck on an image shipped in corpus/
#   make bench    benchmarks against reiserfsck (not part of make test)
#   make corpus   rebuild the kernel-written corpus (needs qemu; see corpus/)
#   make fuzz     libFuzzer harnesses for a bounded time (needs clang; tests/fuzz/)

CC       ?= cc
PKGS     := sqlite3 libmagic jansson
WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wformat=2 -Wno-format-nonliteral -Wvla
BASEFLAGS = -std=c17 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -Iinclude $(WARN) \
            $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LIBS      = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm
TESTLIBS  = $(shell pkg-config --libs cmocka 2>/dev/null)

REL_CFLAGS  := -O2 -g
ASAN_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
               -fno-sanitize-recover=all -DRFS_TEST_BUILD

LIB_SRC  := $(sort $(wildcard src/*.c rebuild/*.c index/*.c))
LIB_SRC  := $(filter-out src/main.c,$(LIB_SRC))
HDRS     := $(wildcard include/rfs/*.h src/*.h rebuild/*.h index/*.h)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
TOOL_SRC := $(sort $(wildcard tests/tools/*.c))

REL_DIR  := build/release
ASAN_DIR := build/asan

# index/schema.sql is compiled in as a C string (one source of truth for the
# schema: the file that docs and the sqlite3 shell read).
GEN_SCHEMA := build/gen/index_schema.c
REL_OBJ  := $(LIB_SRC:%.c=$(REL_DIR)/%.o) $(REL_DIR)/gen/index_schema.o
ASAN_OBJ := $(LIB_SRC:%.c=$(ASAN_DIR)/%.o) $(ASAN_DIR)/gen/index_schema.o
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(ASAN_DIR)/tests/%)
TOOL_BIN := $(TOOL_SRC:tests/tools/%.c=$(ASAN_DIR)/tools/%)

# Debian packages the build and the tests need.
DEB_BUILD := build-essential pkg-config libsqlite3-dev libmagic-dev libjansson-dev \
             libcmocka-dev
DEB_TEST  := reiserfsprogs grub-common xz-utils gzip file sqlite3 python3 coreutils time sleuthkit \
             xfsprogs e2fsprogs

.PHONY: all deps test unit integration demo clean bench help fuzz-regress

all: rfsck

rfsck: $(REL_DIR)/rfsck
	cp $< $@.tmp && mv -f $@.tmp $@

$(REL_DIR)/rfsck: $(REL_DIR)/src/main.o $(REL_DIR)/librfs.a
	$(CC) $(REL_CFLAGS) -o $@ $^ $(LIBS)

$(REL_DIR)/librfs.a: $(REL_OBJ)
	rm -f $@; ar rcs $@ $^

$(REL_DIR)/%.o: %.c $(HDRS) | deps-check
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(REL_CFLAGS) -c -o $@ $<

$(GEN_SCHEMA): index/schema.sql
	@mkdir -p $(dir $@)
	awk 'BEGIN { print "extern const char rfs_index_schema_sql[];"; print "const char rfs_index_schema_sql[] =" } \
	     { gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); print "\"" $$0 "\\n\"" } \
	     END { print ";" }' $< > $@

$(REL_DIR)/gen/index_schema.o: $(GEN_SCHEMA)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(REL_CFLAGS) -c -o $@ $<

$(ASAN_DIR)/gen/index_schema.o: $(GEN_SCHEMA)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(ASAN_CFLAGS) -c -o $@ $<

$(ASAN_DIR)/rfsck: $(ASAN_DIR)/src/main.o $(ASAN_DIR)/librfs.a
	$(CC) $(ASAN_CFLAGS) -o $@ $^ $(LIBS)

$(ASAN_DIR)/librfs.a: $(ASAN_OBJ)
	rm -f $@; ar rcs $@ $^

$(ASAN_DIR)/%.o: %.c $(HDRS) | deps-check
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(ASAN_CFLAGS) -c -o $@ $<

$(ASAN_DIR)/tests/%: tests/unit/%.c $(ASAN_DIR)/librfs.a tests/unit/testutil.h
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(ASAN_CFLAGS) -Itests/unit -o $@ $< $(ASAN_DIR)/librfs.a $(LIBS) $(TESTLIBS)

$(ASAN_DIR)/tools/%: tests/tools/%.c $(ASAN_DIR)/librfs.a
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(ASAN_CFLAGS) -o $@ $< $(ASAN_DIR)/librfs.a $(LIBS)

# deps: install what is missing when root, otherwise say exactly what to install.
deps:
	@sh tests/install-deps.sh $(DEB_BUILD) $(DEB_TEST)

deps-check:
	@pkg-config --exists $(PKGS) || { echo "missing build libraries: run 'make deps' as root (Debian: $(DEB_BUILD))" >&2; exit 1; }

# Tests: unit tests (cmocka) then integration scripts, all against the ASan/UBSan build.
test: deps
	$(MAKE) unit fuzz-regress integration

unit: $(UNIT_BIN) $(ASAN_DIR)/rfsck $(TOOL_BIN)
	@sh tests/run-unit.sh $(UNIT_BIN)

integration: $(ASAN_DIR)/rfsck $(TOOL_BIN)
	@RFSCK=$(CURDIR)/$(ASAN_DIR)/rfsck TOOLS=$(CURDIR)/$(ASAN_DIR)/tools \
	  sh tests/run-integration.sh

DEMO_DAMAGED ?= corpus/images/r36-nested.damaged.img.xz
DEMO_IMAGE ?= corpus/images/r36-features-r5.img.xz
demo: deps
	$(MAKE) rfsck
	@sh tests/demo.sh $(CURDIR)/rfsck $(CURDIR)/$(DEMO_DAMAGED) $(CURDIR)/$(DEMO_IMAGE)

# bench: builds (or reuses, when verified) the large kernel-written volumes,
# then measures; BENCH_SKIP_BIG=1 measures the shipped corpus only.
bench: deps
	$(MAKE) rfsck
	@if [ "$${BENCH_SKIP_BIG:-0}" != 1 ] && [ "$${BENCH_REPORT_ONLY:-0}" != 1 ]; then $(MAKE) bench-images; fi
	sh tests/bench/bench.sh ./rfsck docs/benchmarks.md

help:
	@sed -n '1,9p' Makefile

clean:
	rm -rf build rfsck

-include corpus/corpus.mk
-include tests/fuzz/fuzz.mk
