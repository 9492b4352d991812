/* Lock hand-over between two CPUs (docs/CALIBRATION.md, contention; F-440).
 * Two threads pinned to CPU A and CPU B share a test-and-set spinlock and a
 * counter. Each takes the lock, increments the counter HOLD times (the
 * critical section touches the lock's line and one data line), releases, and
 * does OUTSIDE iterations of private work. Reports ns per acquisition with
 * one thread (uncontended), and with both (contended: the lock line and the
 * data line move between the CPUs on every hand-over).
 * usage: handover CPU_A CPU_B HOLD OUTSIDE SECONDS
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Alignas(64) atomic_int lock;
static _Alignas(64) volatile uint64_t shared_count;
static volatile int last_owner = -1;
static volatile uint64_t handovers;
static atomic_int stop;
static int hold, outside;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

struct arg { int cpu; uint64_t acquisitions; };

static void *worker(void *p)
{
	struct arg *a = p;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(a->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	volatile uint64_t priv = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		while (atomic_exchange_explicit(&lock, 1, memory_order_acquire))
			while (atomic_load_explicit(&lock, memory_order_relaxed))
				__builtin_ia32_pause();
		if (last_owner != a->cpu) {
			handovers++;
			last_owner = a->cpu;
		}
		for (int i = 0; i < hold; i++)
			shared_count++;
		atomic_store_explicit(&lock, 0, memory_order_release);
		a->acquisitions++;
		for (int i = 0; i < outside; i++)
			priv++;
	}
	return NULL;
}

static double run(int n, int *cpus, double secs)
{
	pthread_t th[2];
	struct arg a[2] = { { cpus[0], 0 }, { cpus[1], 0 } };
	atomic_store(&stop, 0);
	handovers = 0;
	last_owner = -1;
	uint64_t t0 = now_ns();
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, &a[i]);
	struct timespec s = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };
	nanosleep(&s, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	uint64_t dt = now_ns() - t0, acq = a[0].acquisitions + a[1].acquisitions;
	if (n == 2)
		fprintf(stderr, "  %llu acquisitions, %llu hand-overs between the CPUs: %.1f ns of wall per hand-over\n",
			(unsigned long long)acq, (unsigned long long)handovers, (double)dt / (double)handovers);
	return (double)dt / (double)acq;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: %s CPU_A CPU_B HOLD OUTSIDE SECONDS\n", argv[0]);
		return 2;
	}
	int cpus[2] = { atoi(argv[1]), atoi(argv[2]) };
	hold = atoi(argv[3]);
	outside = atoi(argv[4]);
	double secs = atof(argv[5]);
	double one = run(1, cpus, secs), two = run(2, cpus, secs);
	printf("hold=%d outside=%d: %.1f ns per acquisition alone, %.1f ns with two CPUs (%.1f ns of wall per acquisition each)\n",
	       hold, outside, one, two, 2 * two);
	return 0;
}
