/*
 * undo_writer.c - test helper: writes a seeded series of pseudo-random blocks
 * to an image through rfs_dev with an undo file, so that integration tests can
 * interrupt it (SIGKILL, the stop hook) at chosen points and check that
 * `rfsck undo` gives back the original image.
 *
 *   undo_writer [options] IMAGE UNDOFILE
 *     --seed N        PRNG seed (default 1)
 *     --writes N      number of block writes (default 100)
 *     --first B       lowest block written (default 1: block 0 holds the identity)
 *     --range N       blocks written are in [first, first+N) (default: to the end);
 *                     a small range makes repeated writes of a block likely
 *     --bs N          block size (default 4096)
 *     --offset N      filesystem offset in the image (default 0)
 *     --batch N       write N blocks per rfs_dev_write_batch call (default 1)
 *     --sleep-us N    sleep between writes (for sleep-then-kill tests)
 *     --kill-after K  raise SIGKILL after K completed writes
 *     --stop N        stop hook: the Nth write fails after its undo save; the
 *                     writer then raises SIGKILL (or abandons with --abandon)
 *     --abandon       on a stopped write, rfs_dev_abandon and exit 3
 *     --no-identity   do not pin block 0's first 64 bytes as the identity
 *     --magic         make every written block look like a ReiserFS leaf and
 *                     superblock ("ReIsEr2Fs" at byte 52, level 1 block head)
 * Prints "wrote K" after each completed write.  Exit 0 after a clean close,
 * 3 after --abandon, 1 on any other failure, 2 on usage errors.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rfs/io.h"

static uint64_t next_random(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill_block(uint8_t *b, uint32_t bs, uint64_t *rng, int magic)
{
	for (uint32_t i = 0; i < bs; i += 8) {
		uint64_t r = next_random(rng);
		memcpy(b + i, &r, 8);
	}
	if (magic) {
		b[0] = 1;	/* block head: level 1 (a leaf) */
		b[1] = 0;
		memcpy(b + 52, "ReIsEr2Fs", 10);
	}
}

static int usage(void)
{
	fprintf(stderr, "usage: undo_writer [--seed N] [--writes N] [--first B] [--range N] "
		"[--bs N] [--offset N] [--batch N] [--sleep-us N] [--kill-after K] [--stop N] "
		"[--abandon] [--no-identity] [--magic] IMAGE UNDOFILE\n");
	return 2;
}

static int fail(const char *what, const struct rfs_error *err)
{
	char line[400];
	rfs_error_format(err, line, sizeof(line));
	fprintf(stderr, "undo_writer: %s: %s\n", what, line);
	return 1;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 's' }, { "writes", required_argument, NULL, 'w' },
		{ "first", required_argument, NULL, 'f' }, { "range", required_argument, NULL, 'r' },
		{ "bs", required_argument, NULL, 'b' }, { "offset", required_argument, NULL, 'o' },
		{ "batch", required_argument, NULL, 'B' }, { "sleep-us", required_argument, NULL, 'S' },
		{ "kill-after", required_argument, NULL, 'k' }, { "stop", required_argument, NULL, 'x' },
		{ "abandon", no_argument, NULL, 'a' }, { "no-identity", no_argument, NULL, 'n' },
		{ "magic", no_argument, NULL, 'm' }, { NULL, 0, NULL, 0 },
	};
	uint64_t seed = 1, writes = 100, first = 1, range = 0, offset = 0, kill_after = 0, stop = 0;
	uint64_t sleep_us = 0, batch = 1, bs = 4096;
	int abandon = 0, identity = 1, magic = 0, opt;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		uint64_t v = optarg ? strtoull(optarg, NULL, 0) : 0;
		switch (opt) {
		case 's': seed = v; break;
		case 'w': writes = v; break;
		case 'f': first = v; break;
		case 'r': range = v; break;
		case 'b': bs = v; break;
		case 'o': offset = v; break;
		case 'B': batch = v ? v : 1; break;
		case 'S': sleep_us = v; break;
		case 'k': kill_after = v; break;
		case 'x': stop = v; break;
		case 'a': abandon = 1; break;
		case 'n': identity = 0; break;
		case 'm': magic = 1; break;
		default: return usage();
		}
	}
	if (argc - optind != 2 || batch > 1024)
		return usage();
	struct rfs_dev_options o = {
		.path = argv[optind], .undo_path = argv[optind + 1], .offset = offset,
		.flags = RFS_DEV_WRITE, .stop_after_write_nth = stop,
	};
	struct rfs_error err;
	rfs_error_clear(&err);
	struct rfs_dev *dev;
	if (rfs_dev_open(&o, &dev, &err))
		return fail("open", &err);
	if (rfs_dev_set_block_size(dev, (uint32_t)bs, &err)) {
		rfs_dev_abandon(dev);
		return fail("block size", &err);
	}
	if (identity && rfs_dev_set_identity(dev, 0, 64, &err)) {
		rfs_dev_abandon(dev);
		return fail("identity", &err);
	}
	uint64_t nblocks = rfs_dev_block_count(dev);
	if (range == 0 || first + range > nblocks)
		range = nblocks > first ? nblocks - first : 0;
	if (range == 0) {
		rfs_dev_abandon(dev);
		fprintf(stderr, "undo_writer: no blocks to write\n");
		return 1;
	}
	uint8_t *bufs = malloc(batch * bs);
	uint64_t *blks = malloc(batch * sizeof(*blks));
	const void **ptrs = malloc(batch * sizeof(*ptrs));
	if (!bufs || !blks || !ptrs) {
		rfs_dev_abandon(dev);
		fprintf(stderr, "undo_writer: out of memory\n");
		return 1;
	}
	uint64_t rng = seed, done = 0;
	while (done < writes) {
		uint64_t n = writes - done < batch ? writes - done : batch;
		for (uint64_t i = 0; i < n; i++) {
			blks[i] = first + next_random(&rng) % range;
			fill_block(bufs + i * bs, (uint32_t)bs, &rng, magic);
			ptrs[i] = bufs + i * bs;
		}
		rfs_status st = rfs_dev_write_batch(dev, n, blks, ptrs, &err);
		if (st == RFS_ERR_INJECTED) {
			printf("stopped at write %llu\n", (unsigned long long)(done + 1));
			fflush(stdout);
			if (!abandon)
				raise(SIGKILL);
			rfs_dev_abandon(dev);
			return 3;
		}
		if (st) {
			rfs_dev_abandon(dev);
			return fail("write", &err);
		}
		done += n;
		printf("wrote %llu\n", (unsigned long long)done);
		fflush(stdout);
		if (kill_after && done >= kill_after)
			raise(SIGKILL);
		if (sleep_us)
			usleep((useconds_t)sleep_us);
	}
	free(bufs);
	free(blks);
	free(ptrs);
	if (rfs_dev_close(dev, &err))
		return fail("close", &err);
	return 0;
}
