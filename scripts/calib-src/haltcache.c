/* What a halt costs a vCPU's caches (docs/CALIBRATION.md "local", halt eviction).
 *
 * A dependent pointer chase over a working set of KIB KiB (one line per
 * 64-byte step, in a random order so that prefetchers do not help), run
 * CHUNKS times after each sleep of SLEEP_US (0 = no sleep) and averaged over
 * REPS repetitions. The first chase after the sleep pays for whatever the
 * halted vCPU lost; the later ones are the warm cost. Run pinned to one vCPU
 * with the other idle:  taskset -c 1 ./haltcache SLEEP_US CHUNKS KIB REPS
 * Prints the mean time of each chase in microseconds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s SLEEP_US CHUNKS KIB REPS\n", argv[0]);
		return 2;
	}
	long sleep_us = atol(argv[1]);
	int chunks = atoi(argv[2]);
	size_t kib = (size_t)atol(argv[3]);
	int reps = atoi(argv[4]);
	size_t n = kib * 1024 / 64;
	char *buf = aligned_alloc(4096, kib * 1024);
	size_t *perm = malloc(n * sizeof(size_t));
	double *acc = calloc((size_t)chunks, sizeof(double));
	if (!buf || !perm || !acc || n < 2) {
		fprintf(stderr, "bad sizes\n");
		return 2;
	}
	for (size_t i = 0; i < n; i++)
		perm[i] = i;
	srand(1);
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)rand() % (i + 1), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (size_t i = 0; i < n; i++)
		*(size_t *)(buf + perm[i] * 64) = perm[(i + 1) % n] * 64;
	volatile size_t sink = 0;
	for (int r = 0; r < reps; r++) {
		struct timespec s = { sleep_us / 1000000, (sleep_us % 1000000) * 1000 };
		if (sleep_us)
			nanosleep(&s, NULL);
		for (int c = 0; c < chunks; c++) {
			uint64_t t0 = now_ns();
			size_t q = sink;
			for (size_t i = 0; i < n; i++)
				q = *(size_t *)(buf + q);
			sink = q;
			acc[c] += (double)(now_ns() - t0);
		}
	}
	for (int c = 0; c < chunks; c++)
		printf("%.1f ", acc[c] / reps / 1000.0);
	printf("\n");
	return 0;
}
