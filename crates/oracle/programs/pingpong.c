/*
 * sl-pingpong: pipe ping-pong pairs for the schedlab oracle (docs/oracle.md).
 *
 * Part of schedlab (MIT OR Apache-2.0). Mirrors two schedlab built-ins:
 *   perf bench sched pipe   : one pair, a fixed number of round trips (-l)
 *   will-it-scale context_switch1 : N pairs (-p), each optionally bound to a
 *                             CPU list (-a, repeated; pair i takes list i mod n),
 *                             running for a duration (-d milliseconds)
 * A pair is a leader and a partner: the leader writes one int to pipe 1 and
 * reads it back from pipe 2; the partner reads pipe 1 and writes pipe 2.
 * -T makes leaders and partners threads of one process (the _threads builds
 * and perf's -T); otherwise each is a process (fork).
 * Prints "round_trips N" on stdout when done.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PAIRS 4096
#define MAX_SETS 256

struct shared {
	volatile int stop;
	volatile long long trips[MAX_PAIRS];
};

static struct shared *sh;
static long long loops = -1; /* -1: run until sh->stop */
static int threads;
static int nsets;
static cpu_set_t sets[MAX_SETS];

struct pair {
	int idx;
	int p1[2], p2[2];
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void bind_pair(int idx)
{
	if (nsets == 0)
		return;
	if (sched_setaffinity(0, sizeof(cpu_set_t), &sets[idx % nsets]) != 0)
		die("sched_setaffinity");
}

static void partner_loop(struct pair *p)
{
	int v;
	for (;;) {
		ssize_t r = read(p->p1[0], &v, sizeof v);
		if (r <= 0)
			return; /* leader closed its end: done */
		if (write(p->p2[1], &v, sizeof v) != sizeof v)
			return;
	}
}

static void leader_loop(struct pair *p)
{
	int v = 0;
	long long n = 0;
	while (loops < 0 ? !sh->stop : n < loops) {
		if (write(p->p1[1], &v, sizeof v) != sizeof v)
			die("write");
		if (read(p->p2[0], &v, sizeof v) != sizeof v)
			die("read");
		n++;
	}
	sh->trips[p->idx] = n;
}

static void *partner_thread(void *arg)
{
	struct pair *p = arg;
	bind_pair(p->idx);
	partner_loop(p);
	return NULL;
}

static void *leader_thread(void *arg)
{
	struct pair *p = arg;
	pthread_t t;
	bind_pair(p->idx);
	if (pthread_create(&t, NULL, partner_thread, p) != 0)
		die("pthread_create");
	leader_loop(p);
	close(p->p1[1]);
	pthread_join(t, NULL);
	return NULL;
}

static void leader_process(struct pair *p)
{
	pid_t c;
	bind_pair(p->idx);
	c = fork();
	if (c < 0)
		die("fork");
	if (c == 0) {
		close(p->p1[1]);
		close(p->p2[0]);
		partner_loop(p);
		_exit(0);
	}
	close(p->p1[0]);
	close(p->p2[1]);
	leader_loop(p);
	close(p->p1[1]);
	waitpid(c, NULL, 0);
}

static int parse_cpus(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	while (*s) {
		char *end;
		long a = strtol(s, &end, 10), b;
		if (end == s || a < 0 || a >= CPU_SETSIZE)
			return -1;
		b = a;
		if (*end == '-') {
			s = end + 1;
			b = strtol(s, &end, 10);
			if (end == s || b < a || b >= CPU_SETSIZE)
				return -1;
		}
		for (long c = a; c <= b; c++)
			CPU_SET(c, set);
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: sl-pingpong [-l LOOPS | -d MS] [-p PAIRS] [-T] [-a CPULIST]...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int pairs = 1, opt;
	long ms = 0;
	long long total = 0;
	struct pair *ps;

	while ((opt = getopt(argc, argv, "l:d:p:Ta:")) != -1) {
		switch (opt) {
		case 'l': loops = atoll(optarg); if (loops < 1) usage(); break;
		case 'd': ms = atol(optarg); if (ms < 1) usage(); break;
		case 'p': pairs = atoi(optarg); if (pairs < 1 || pairs > MAX_PAIRS) usage(); break;
		case 'T': threads = 1; break;
		case 'a':
			if (nsets == MAX_SETS || parse_cpus(optarg, &sets[nsets]) != 0)
				usage();
			nsets++;
			break;
		default: usage();
		}
	}
	if ((loops < 0) == (ms == 0))
		usage(); /* exactly one of -l and -d */

	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap");
	ps = calloc(pairs, sizeof *ps);
	pthread_t *tids = calloc(pairs, sizeof *tids);
	pid_t *pids = calloc(pairs, sizeof *pids);
	if (!ps || !tids || !pids)
		die("calloc");
	for (int i = 0; i < pairs; i++) {
		ps[i].idx = i;
		if (pipe(ps[i].p1) || pipe(ps[i].p2))
			die("pipe");
		if (threads) {
			if (pthread_create(&tids[i], NULL, leader_thread, &ps[i]) != 0)
				die("pthread_create");
		} else {
			pids[i] = fork();
			if (pids[i] < 0)
				die("fork");
			if (pids[i] == 0) {
				leader_process(&ps[i]);
				_exit(0);
			}
			close(ps[i].p1[0]); close(ps[i].p1[1]);
			close(ps[i].p2[0]); close(ps[i].p2[1]);
		}
	}
	if (ms) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		sh->stop = 1;
	}
	for (int i = 0; i < pairs; i++) {
		if (threads)
			pthread_join(tids[i], NULL);
		else
			waitpid(pids[i], NULL, 0);
		total += sh->trips[i];
	}
	printf("round_trips %lld\n", total);
	return 0;
}
