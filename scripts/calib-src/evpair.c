/* evpair: a waker and a wakee with chosen duty cycles (scripts/probe-vcpu-pack).
 * Usage: evpair ITERS SLEEP_US SPIN_A_US SPIN_B_US [pipe]
 * Thread A loops ITERS times: usleep(SLEEP_US), spin SPIN_A_US, eventfd write
 * (a wakeup without WF_SYNC), or with `pipe` a one-byte pipe write (WF_SYNC).
 * Thread B reads (counting coalesced eventfd writes, or bytes) and spins
 * SPIN_B_US per read. Both unpinned: where the kernel puts
 * B at each wakeup (A's CPU or another) is what the probe records. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static int efd, pfd[2], use_pipe;
static long iters, spin_a, spin_b, sleep_us;

static void spin(long us)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static void *thread_b(void *unused)
{
	(void)unused;
	uint64_t v;
	char buf[64];
	long total = 0;
	while (total < iters) {
		if (use_pipe) {
			ssize_t n = read(pfd[0], buf, sizeof(buf));
			if (n <= 0)
				break;
			total += n;
		} else {
			if (read(efd, &v, 8) != 8)
				break;
			total += (long)v;
		}
		spin(spin_b);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: %s ITERS SLEEP_US SPIN_A_US SPIN_B_US [pipe]\n", argv[0]);
		return 2;
	}
	iters = atol(argv[1]);
	sleep_us = atol(argv[2]);
	spin_a = atol(argv[3]);
	spin_b = atol(argv[4]);
	use_pipe = argc == 6;
	efd = eventfd(0, 0);
	if (use_pipe && pipe(pfd) != 0) {
		perror("pipe");
		return 1;
	}
	pthread_t t;
	pthread_create(&t, NULL, thread_b, NULL);
	for (long i = 0; i < iters; i++) {
		if (sleep_us)
			usleep(sleep_us);
		spin(spin_a);
		uint64_t one = 1;
		if (use_pipe ? write(pfd[1], "x", 1) != 1 : write(efd, &one, 8) != 8)
			break;
	}
	pthread_join(t, NULL);
	return 0;
}
