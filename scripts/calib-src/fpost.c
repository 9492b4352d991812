// Serial futex wakes as schbench's xlist_wake_all() does them: one waker
// posts N waiting workers one after another; time each fpost() (the futex
// FUTEX_WAKE syscall that finds a waiter) and each worker's latency from the
// batch timestamp. Usage: fpost N ROUNDS WORKER_CPU (-1 = unpinned)
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <stdatomic.h>
#define MAXW 256
static int N, ROUNDS, WCPU;
static _Atomic int fut[MAXW];
static _Atomic int waiting;
static double lat[MAXW];          // per-worker latency sum (us)
static long latn[MAXW];
static _Atomic long stamp_ns;
static long now_ns(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000L+t.tv_nsec;}
static void pin(int c){if(c<0)return;cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
static void *worker(void *a){long i=(long)a;pin(WCPU);
  for(int r=0;r<ROUNDS;r++){atomic_store(&fut[i],1);atomic_fetch_add(&waiting,1);
    while(atomic_load(&fut[i])==1) syscall(SYS_futex,&fut[i],FUTEX_WAIT_PRIVATE,1,NULL,NULL,0);
    long d=now_ns()-atomic_load(&stamp_ns);lat[i]+=d/1000.0;latn[i]++;}
  return NULL;}
int main(int argc,char**argv){N=atoi(argv[1]);ROUNDS=atoi(argv[2]);WCPU=atoi(argv[3]);pin(0);
  pthread_t th[MAXW];for(long i=0;i<N;i++)pthread_create(&th[i],0,worker,(void*)i);
  double *cost=calloc(N,sizeof(double));long *costn=calloc(N,sizeof(long));
  for(int r=0;r<ROUNDS;r++){
    while(atomic_load(&waiting)<N) usleep(50);
    usleep(2000); // let the workers' CPU go idle, as schbench's 30 ms gap does
    atomic_store(&waiting,0);
    atomic_store(&stamp_ns,now_ns());
    for(int i=N-1;i>=0;i--){long t0=now_ns();
      if(atomic_exchange(&fut[i],0)==1) syscall(SYS_futex,&fut[i],FUTEX_WAKE_PRIVATE,1,NULL,NULL,0);
      long t1=now_ns();int k=N-1-i;cost[k]+=(t1-t0)/1000.0;costn[k]++;}
  }
  for(long i=0;i<N;i++)pthread_join(th[i],0);
  double s=0;for(int k=1;k<N;k++)s+=cost[k]/costn[k];
  printf("N=%d first fpost %.2f us, later fposts mean %.2f us; worker latency: first-woken %.1f us, last-woken %.1f us\n",
    N,cost[0]/costn[0],N>1?s/(N-1):0,lat[N-1]/latn[N-1],lat[0]/latn[0]);
  return 0;}
