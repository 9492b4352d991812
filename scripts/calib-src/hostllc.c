/* Does the guest's LLC lose lines while the vCPU runs? (docs/CALIBRATION.md
 * "local", "Host traffic in the LLC"; data for F-450.)
 *
 * A dependent pointer chase over KIB KiB (random line order, 2 MiB pages
 * asked for), warmed by three passes, then pushed out of the L2 by writing a
 * private 3 MiB buffer (the L2 is 1 MiB), so that it sits in the LLC only.
 * The vCPU then spins on the clock for SPIN_MS without halting and without
 * touching memory, and one pass of the chase is timed. Mean ns per load over
 * REPS repetitions, for each spin. A set the LLC keeps costs an LLC hit per
 * load (~15 ns here), one it lost costs DRAM (~100-115 ns). Run pinned:
 *   taskset -c 1 ./hostllc KIB REPS
 * Also a latency probe: ./hostllc -chase MIB runs a plain chase over MIB MiB.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void *build(size_t n, char **bufp, size_t **permp)
{
	char *buf = mmap(0, n * 64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(buf, n * 64, MADV_HUGEPAGE);
	size_t *perm = malloc(n * sizeof(size_t));
	for (size_t i = 0; i < n; i++)
		perm[i] = i;
	srand(2);
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = ((size_t)rand() * RAND_MAX + rand()) % (i + 1);
		size_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (size_t i = 0; i < n; i++)
		*(void **)(buf + perm[i] * 64) = buf + perm[(i + 1) % n] * 64;
	*bufp = buf;
	*permp = perm;
	return buf + perm[0] * 64;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "-chase")) {
		size_t n = (size_t)atol(argv[2]) * 1024 * 1024 / 64, steps = 20000000;
		char *buf;
		size_t *perm;
		void *p = build(n, &buf, &perm);
		for (size_t i = 0; i < n; i++)
			p = *(void **)p;
		double t0 = now_ns();
		for (size_t i = 0; i < steps; i++)
			p = *(void **)p;
		printf("%s MiB: %.1f ns/load%s\n", argv[2], (now_ns() - t0) / steps, p ? "" : " ");
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: %s KIB REPS | %s -chase MIB\n", argv[0], argv[0]);
		return 2;
	}
	size_t n = (size_t)atol(argv[1]) * 1024 / 64;
	int reps = atoi(argv[2]);
	char *buf;
	size_t *perm;
	void *p = build(n, &buf, &perm);
	char *evict = malloc(3u << 20);
	memset(evict, 0, 3u << 20);
	const double spins[] = { 0, 1, 2, 3, 5, 7, 10, 20 };
	for (int w = 0; w < (int)(sizeof(spins) / sizeof(spins[0])); w++) {
		double sum = 0;
		for (int r = 0; r < reps; r++) {
			for (size_t i = 0; i < 3 * n; i++)
				p = *(void **)p;
			for (size_t i = 0; i < (3u << 20); i += 64)
				evict[i]++;
			double t = now_ns();
			while (now_ns() - t < spins[w] * 1e6)
				;
			double t0 = now_ns();
			for (size_t i = 0; i < n; i++)
				p = *(void **)p;
			sum += (now_ns() - t0) / n;
		}
		printf("%s KiB, spin %.0f ms: %.1f ns/load%s\n", argv[1], spins[w], sum / reps, p ? "" : " ");
	}
	return 0;
}
