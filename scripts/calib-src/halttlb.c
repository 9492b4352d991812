/* Does a vCPU halt cost its TLB? (docs/CALIBRATION.md "local", "What a halt costs the TLB").
 *
 * Two dependent pointer chases of N lines each: "spread" puts one line in each
 * of N pages (4 KiB pages asked for), "packed" puts the N lines in N/64 pages.
 * Each is warmed, the program sleeps (the vCPU halts when the other is idle),
 * then one pass is timed, then a second (warm). The spread chase pays a page
 * walk per line where the halt cost the TLB entry; the difference of the first
 * passes is that cost per page. Run pinned:  taskset -c 1 ./halttlb N REPS
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <sys/mman.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
/* chase over n lines: stride PAGE (one line per page, offset varied) or packed */
static void* build(size_t n, int spread){
  size_t bytes = spread ? n*4096 : n*64;
  char*buf=mmap(0,bytes,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
  madvise(buf,bytes,MADV_NOHUGEPAGE);
  for(size_t i=0;i<bytes;i+=4096)buf[i]=1;
  size_t*perm=malloc(n*sizeof(size_t));for(size_t i=0;i<n;i++)perm[i]=i;
  srand(3);for(size_t i=n-1;i>0;i--){size_t j=rand()%(i+1);size_t t=perm[i];perm[i]=perm[j];perm[j]=t;}
  #define ADDR(k) (buf + (spread ? (k)*4096 + ((k)*64)%4096 : (k)*64))
  for(size_t i=0;i<n;i++)*(void**)ADDR(perm[i])=ADDR(perm[(i+1)%n]);
  return ADDR(perm[0]);
}
int main(int argc,char**argv){
  size_t n=atoi(argv[1]); int reps=atoi(argv[2]);
  void*pa=build(n,1),*pb=build(n,0);
  long sleeps[]={0,50,200,1000,3000,10000};
  for(int s=0;s<6;s++){
    double ta=0,tb=0,ta2=0,tb2=0;
    for(int r=0;r<reps;r++){
      for(int k=0;k<2;k++){
        void**p = k? &pb:&pa;
        for(size_t i=0;i<2*n;i++)*p=*(void**)*p;   /* warm */
        if(sleeps[s]){struct timespec d={0,sleeps[s]*1000};nanosleep(&d,0);}
        double t0=now();
        for(size_t i=0;i<n;i++)*p=*(void**)*p;
        double t1=now();
        for(size_t i=0;i<n;i++)*p=*(void**)*p;
        double t2=now();
        if(k){tb+=t1-t0;tb2+=t2-t1;}else{ta+=t1-t0;ta2+=t2-t1;}
      }
    }
    printf("n=%zu sleep %5ld us: spread first %.0f ns/line (warm %.0f)  packed first %.0f (warm %.0f)  diff %.0f ns/page\n",
      n,sleeps[s],ta/reps/n,ta2/reps/n,tb/reps/n,tb2/reps/n,(ta-tb)/reps/n);
  }
  if(!pa||!pb)puts("");
}
