/*
 * sl-rr: request/response client-server pairs for the schedlab oracle
 * (docs/oracle.md), the guest side of the netperf built-in (TCP_RR / UDP_RR
 * over loopback) with a third transport for comparison, AF_UNIX stream.
 *
 * Part of schedlab (MIT OR Apache-2.0). -n instances, each a client process
 * and a server process (forked, as netserver forks per connection); one
 * transaction in flight per pair: the client sends -r request bytes and
 * waits for -R response bytes. Runs for -d milliseconds (or -t transactions
 * per client). Prints "transactions N" on stdout when done.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_INST 4096
enum mode { TCP, UDP, UNIX };

struct shared {
	volatile int stop;
	volatile int ready[MAX_INST];
	volatile long long done[MAX_INST];
};

static struct shared *sh;
static enum mode mode = TCP;
static size_t req = 1, rsp = 1;
static long long count = -1;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* Read exactly n bytes from a stream socket; 0 on EOF. */
static int read_full(int fd, char *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);
		if (r == 0)
			return 0;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			die("read");
		}
		got += r;
	}
	return 1;
}

static void write_full(int fd, const char *buf, size_t n)
{
	size_t put = 0;
	while (put < n) {
		ssize_t w = write(fd, buf + put, n - put);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			die("write");
		}
		put += w;
	}
}

static struct sockaddr_in addr_of(int i)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons(20000 + i);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* The server side of instance i on a connected (or bound, for UDP) socket. */
static void serve(int fd)
{
	char *in = malloc(req), *out = calloc(1, rsp);
	struct sockaddr_in peer;
	socklen_t plen;
	if (!in || !out)
		die("malloc");
	for (;;) {
		if (mode == UDP) {
			plen = sizeof peer;
			ssize_t r = recvfrom(fd, in, req, 0, (struct sockaddr *)&peer, &plen);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				die("recvfrom");
			}
			if (r >= 1 && in[0] == 'Q')
				return;
			if (sendto(fd, out, rsp, 0, (struct sockaddr *)&peer, plen) < 0)
				die("sendto");
		} else {
			if (!read_full(fd, in, req))
				return;
			write_full(fd, out, rsp);
		}
	}
}

static void client(int fd, int i)
{
	char *out = calloc(1, req), *in = malloc(rsp);
	long long n = 0;
	if (!in || !out)
		die("malloc");
	out[0] = 'R';
	while (count < 0 ? !sh->stop : n < count) {
		if (mode == UDP) {
			if (send(fd, out, req, 0) < 0)
				die("send");
			if (recv(fd, in, rsp, 0) < 0)
				die("recv");
		} else {
			write_full(fd, out, req);
			if (!read_full(fd, in, rsp))
				die("server closed");
		}
		n++;
	}
	sh->done[i] = n;
	if (mode == UDP) {
		out[0] = 'Q';
		send(fd, out, req, 0);
	}
	close(fd);
}

static void one_instance(int i)
{
	int one = 1;
	if (mode == UNIX) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
			die("socketpair");
		pid_t s = fork();
		if (s < 0)
			die("fork");
		if (s == 0) {
			close(sv[0]);
			serve(sv[1]);
			_exit(0);
		}
		close(sv[1]);
		client(sv[0], i);
		waitpid(s, NULL, 0);
		return;
	}
	struct sockaddr_in a = addr_of(i);
	int type = mode == UDP ? SOCK_DGRAM : SOCK_STREAM;
	int ls = socket(AF_INET, type, 0);
	if (ls < 0)
		die("socket");
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(ls, (struct sockaddr *)&a, sizeof a))
		die("bind");
	if (mode == TCP && listen(ls, 1))
		die("listen");
	pid_t s = fork();
	if (s < 0)
		die("fork");
	if (s == 0) {
		if (mode == TCP) {
			int c = accept(ls, NULL, NULL);
			if (c < 0)
				die("accept");
			setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
			close(ls);
			serve(c);
		} else {
			serve(ls);
		}
		_exit(0);
	}
	close(ls);
	int fd = socket(AF_INET, type, 0);
	if (fd < 0)
		die("socket");
	if (connect(fd, (struct sockaddr *)&a, sizeof a))
		die("connect");
	if (mode == TCP)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	client(fd, i);
	waitpid(s, NULL, 0);
}

static void usage(void)
{
	fprintf(stderr, "usage: sl-rr [-m tcp|udp|unix] [-n INSTANCES] [-r REQ] [-R RSP] (-d MS | -t TRANSACTIONS)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int n = 1, opt;
	long ms = 0;
	long long total = 0;
	while ((opt = getopt(argc, argv, "m:n:r:R:d:t:")) != -1) {
		switch (opt) {
		case 'm':
			if (!strcmp(optarg, "tcp")) mode = TCP;
			else if (!strcmp(optarg, "udp")) mode = UDP;
			else if (!strcmp(optarg, "unix")) mode = UNIX;
			else usage();
			break;
		case 'n': n = atoi(optarg); if (n < 1 || n > MAX_INST) usage(); break;
		case 'r': req = strtoul(optarg, NULL, 10); if (req < 1) usage(); break;
		case 'R': rsp = strtoul(optarg, NULL, 10); if (rsp < 1) usage(); break;
		case 'd': ms = atol(optarg); if (ms < 1) usage(); break;
		case 't': count = atoll(optarg); if (count < 1) usage(); break;
		default: usage();
		}
	}
	if ((count < 0) == (ms == 0))
		usage();
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap");
	pid_t *pids = calloc(n, sizeof *pids);
	if (!pids)
		die("calloc");
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork");
		if (pids[i] == 0) {
			one_instance(i);
			_exit(0);
		}
	}
	if (ms) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		sh->stop = 1;
	}
	for (int i = 0; i < n; i++) {
		waitpid(pids[i], NULL, 0);
		total += sh->done[i];
	}
	printf("transactions %lld\n", total);
	return 0;
}
