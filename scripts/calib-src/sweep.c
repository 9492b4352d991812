/* sweep: a CPU-bound filler that evicts the caches of the CPU it runs on.
 * Usage: sweep KIB   (0: spin without touching memory)
 * Reads one byte of every 64-byte line of a KIB-sized buffer, forever. Run at
 * SCHED_IDLE next to a task that sleeps and wakes (scripts/calibrate-hotset):
 * the task then finds the CPU busy in both cases (no halt, the same wakeup
 * path), and with KIB > L2 its lines have been evicted to the L3 or beyond
 * while it slept, as after a migration. */
#include <stdlib.h>
#include <stdio.h>
int main(int argc, char **argv) {
	long kib = argc > 1 ? atol(argv[1]) : 0;
	if (kib <= 0) {
		for (;;)
			__asm__ volatile("pause");
	}
	size_t n = (size_t)kib * 1024;
	volatile unsigned char *b = malloc(n);
	if (!b) { perror("malloc"); return 1; }
	for (size_t i = 0; i < n; i++) b[i] = (unsigned char)i;
	unsigned sum = 0;
	for (;;)
		for (size_t i = 0; i < n; i += 64) sum += b[i];
}
