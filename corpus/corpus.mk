# corpus.mk - make fragment for the kernel-written ReiserFS corpus; included
# from the top Makefile (paths are relative to the repository top).
#
#   make corpus-deps     install what the corpus needs (root) or say what is missing
#   make corpus          rebuild all shipped images + manifests from nothing
#                        (fetches the Debian 6.1 kernel, boots it under qemu)
#   make corpus-big      also build the big, not shipped images (160 MiB tree)
#   make test-kernel     kernel-view check of 3 shipped images against their manifests,
#                        of 4 damaged images rebuilt by rfsck (test-kernel.sh --rebuilt)
#                        and of 46 damaged images repaired by rfsck fix, read and
#                        written by the kernel (test-kernel.sh --fixed)
#   make corpus-baseline damage recipes x reiserfsck, scored by the kernel view
#   make corpus-selftest kernel-free self-test of damage/score/oracle (12 s)
#   make bench-images    the large benchmark volumes (4 GiB / 32 GiB / 1 TiB, kernel-written,
#                        verified) under corpus/build/bench/; reused when verified
#
# Scratch goes to $(RFSCK_CORPUS_CACHE) (default corpus/build, git-ignored).

CORPUS_DIR   ?= corpus
CORPUS_TOOLS := $(CORPUS_DIR)/tools
CORPUS_PY    ?= python3
CORPUS_DEBS  := qemu-system-x86 busybox-static reiserfsprogs grub-common xz-utils python3 \
                cpio gzip gcc libc6-dev dpkg apt coreutils
CORPUS_CMDS  := qemu-system-x86_64 busybox mkreiserfs reiserfsck debugreiserfs grub-fstest xz \
                python3 cpio gzip gcc dpkg-deb apt-get apt-cache

.PHONY: corpus corpus-deps corpus-big test-kernel corpus-baseline corpus-selftest corpus-clean bench-images

corpus-deps:
	@missing=""; for c in $(CORPUS_CMDS); do command -v $$c >/dev/null 2>&1 || missing="$$missing $$c"; done; \
	[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || missing="$$missing libc.a(libc6-dev)"; \
	if [ -z "$$missing" ]; then echo "corpus-deps: all present"; \
	elif [ "$$(id -u)" = 0 ]; then echo "corpus-deps: installing (missing:$$missing)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(CORPUS_DEBS) >/dev/null; \
	else echo "corpus-deps: missing:$$missing" >&2; \
	  echo "corpus-deps: as root run: apt-get update && apt-get install -y $(CORPUS_DEBS)" >&2; exit 1; fi

corpus: corpus-deps
	$(CORPUS_PY) $(CORPUS_TOOLS)/build-corpus.py -j 2

corpus-big: corpus-deps
	$(CORPUS_PY) $(CORPUS_TOOLS)/build-corpus.py --big --only r36-bigtree

# test-kernel: the shipped images as the kernel reads them, then images that
# rfsck rebuilt (test-kernel.sh --rebuilt) and images that rfsck fix repaired
# (test-kernel.sh --fixed), the last two with the release ./rfsck; all three run, the
# target fails if any fails.
test-kernel: corpus-deps rfsck
	@sh $(CORPUS_TOOLS)/test-kernel.sh; a=$$?; \
	RFSCK=$(CURDIR)/rfsck sh $(CORPUS_TOOLS)/test-kernel.sh --rebuilt; b=$$?; \
	RFSCK=$(CURDIR)/rfsck sh $(CORPUS_TOOLS)/test-kernel.sh --fixed; c=$$?; \
	[ $$a -eq 0 ] && [ $$b -eq 0 ] && [ $$c -eq 0 ]

# bench-images: the volumes `make bench` measures (build-bench-images.py;
# BENCH_IMAGES_ARGS, e.g. "--only bench-4g" or "--force").
bench-images: corpus-deps
	$(CORPUS_PY) $(CORPUS_TOOLS)/build-bench-images.py $(BENCH_IMAGES_ARGS)

corpus-baseline: corpus-deps
	$(CORPUS_PY) $(CORPUS_TOOLS)/baseline.py

corpus-selftest:
	sh $(CORPUS_TOOLS)/selftest.sh

corpus-clean:
	rm -rf $(CORPUS_DIR)/build
