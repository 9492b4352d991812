/* One-way cache-line transfer between two CPUs (core-to-core latency): two
 * threads pinned to CPU A and B pass a token through one shared line; each
 * round trip is two transfers. usage: c2c CPU_A CPU_B ROUNDS */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static _Alignas(64) atomic_long token;
static long rounds;
static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); pthread_setaffinity_np(pthread_self(), sizeof(s), &s); }
static void *pong(void *p) {
	pin(*(int *)p);
	for (long i = 0; i < rounds; i++) {
		while (atomic_load_explicit(&token, memory_order_acquire) != 2 * i + 1) __builtin_ia32_pause();
		atomic_store_explicit(&token, 2 * i + 2, memory_order_release);
	}
	return NULL;
}
int main(int argc, char **argv) {
	if (argc != 4) { fprintf(stderr, "usage: %s CPU_A CPU_B ROUNDS\n", argv[0]); return 2; }
	int a = atoi(argv[1]), b = atoi(argv[2]); rounds = atol(argv[3]);
	pthread_t t; pthread_create(&t, NULL, pong, &b); pin(a);
	struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < rounds; i++) {
		atomic_store_explicit(&token, 2 * i + 1, memory_order_release);
		while (atomic_load_explicit(&token, memory_order_acquire) != 2 * i + 2) __builtin_ia32_pause();
	}
	clock_gettime(CLOCK_MONOTONIC, &t1); pthread_join(t, NULL);
	double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	printf("CPU %d <-> %d: %.1f ns per round trip, %.1f ns one way\n", a, b, ns / rounds, ns / rounds / 2);
	return 0;
}
