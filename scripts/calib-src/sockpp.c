// What a switch with its sleep costs on an AF_UNIX stream socket against a pipe (100-byte messages).
// Run under `taskset -c CPU` so that both processes share one CPU:
//   sockpp 0|1 N     (0: pipe, 1: socketpair; N round trips)
// self_us: one write plus one read by the same thread, no sleep; rt_us: a ping-pong round trip between
// two processes, where every read blocks; vol / invol: the parent's switches per round trip.
// (rt - 2 x self) / 2 is what each switch with its sleep costs beyond the two syscalls.
// docs/CALIBRATION.md "Hackbench sockets pinned: what this rules out".
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/resource.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void mk(int sock,int f[2]){ if(sock){ if(socketpair(AF_UNIX,SOCK_STREAM,0,f)) exit(1);} else { if(pipe(f)) exit(1);} }
int main(int argc,char**argv){
  if(argc<3){fprintf(stderr,"usage: sockpp 0|1 N (0: pipe, 1: AF_UNIX socketpair; N round trips)\n");return 2;}
  int sock=atoi(argv[1]); long n=atol(argv[2]);
  if((sock!=0&&sock!=1)||n<=0){fprintf(stderr,"sockpp: the first argument must be 0 or 1 and N above 0\n");return 2;} char buf[100]; memset(buf,1,100);
  // self loop: write one message then read it back (no sleep, no switch)
  int a[2]; mk(sock,a); int wfd=sock?a[0]:a[1], rfd=sock?a[1]:a[0];
  double t0=now(); for(long i=0;i<n;i++){ if(write(wfd,buf,100)!=100) exit(3); if(read(rfd,buf,100)!=100) exit(4);} double self=(now()-t0)/n*1e6;
  // ping-pong between two processes: every read blocks
  int x[2],y[2]; mk(sock,x); mk(sock,y);
  int xw=sock?x[0]:x[1], xr=sock?x[1]:x[0], yw=sock?y[0]:y[1], yr=sock?y[1]:y[0];
  pid_t p=fork();
  if(p==0){ for(long i=0;i<n;i++){ if(read(xr,buf,100)!=100) exit(5); if(write(yw,buf,100)!=100) exit(6);} exit(0);}
  struct rusage r0,r1; getrusage(RUSAGE_SELF,&r0);
  t0=now(); for(long i=0;i<n;i++){ if(write(xw,buf,100)!=100) exit(7); if(read(yr,buf,100)!=100) exit(8);} double rt=(now()-t0)/n*1e6;
  getrusage(RUSAGE_SELF,&r1); waitpid(p,0,0);
  printf("kind=%s self_us=%.3f rt_us=%.3f vol=%.3f invol=%.3f\n",sock?"unix":"pipe",self,rt,(double)(r1.ru_nvcsw-r0.ru_nvcsw)/n,(double)(r1.ru_nivcsw-r0.ru_nivcsw)/n);
  return 0;}
