/*
 * standalone_main.c - a main() for the fuzz harnesses without libFuzzer, so
 * that `make fuzz-regress` replays tests/fuzz/regressions/ with gcc and
 * ASan/UBSan when clang is not installed.
 *
 * Usage: fuzz_<target> FILE...   Each file is read whole and passed once to
 * LLVMFuzzerTestOneInput().  A contract violation aborts (the harness calls
 * abort()), a sanitizer report aborts (-fno-sanitize-recover), and a case
 * that runs longer than RFS_FUZZ_TIMEOUT seconds (default 10, the -timeout
 * of the libFuzzer runs) is killed with a message naming the file.  Exit
 * status 0 means every file ran to completion; 2 means a file was unreadable.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *current = "";

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "standalone fuzz driver: TIMEOUT on ";
	ssize_t r = write(2, msg, sizeof(msg) - 1);
	r = write(2, current, strlen(current));
	r = write(2, "\n", 1);
	(void)r;
	abort();
}

/* Reads path whole into a malloc'd buffer; NULL on failure. */
static uint8_t *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		uint8_t *bigger = realloc(buf, cap * 2);
		if (!bigger) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = bigger;
		cap *= 2;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		return NULL;
	}
	*size = n;
	return buf;
}

int main(int argc, char **argv)
{
	const char *t = getenv("RFS_FUZZ_TIMEOUT");
	unsigned timeout = t ? (unsigned)strtoul(t, NULL, 10) : 10;
	signal(SIGALRM, on_alarm);
	int ran = 0;
	for (int i = 1; i < argc; i++) {
		size_t size = 0;
		uint8_t *data = read_file(argv[i], &size);
		if (!data) {
			fprintf(stderr, "standalone fuzz driver: cannot read %s\n", argv[i]);
			return 2;
		}
		/* An exact-size copy, as libFuzzer gives, so ASan sees overruns. */
		uint8_t *exact = malloc(size ? size : 1);
		if (!exact)
			return 2;
		memcpy(exact, data, size);
		free(data);
		current = argv[i];
		alarm(timeout);
		LLVMFuzzerTestOneInput(exact, size);
		alarm(0);
		free(exact);
		ran++;
	}
	fprintf(stderr, "%s: %d input(s) ran without a finding\n", argv[0], ran);
	return 0;
}
