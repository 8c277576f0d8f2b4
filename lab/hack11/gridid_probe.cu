// Hacker round 11: what %gridid holds in a fresh CUDA context (run on the H200, 2026-11-29;
// output in lab/hack11/README.md). Build: nvcc -arch=sm_90a -o g gridid_probe.cu
#include <cstdio>
#include <cuda_runtime.h>
__global__ void probe(unsigned long long* o){unsigned long long g;asm volatile("mov.u64 %0, %%gridid;":"=l"(g));if(!threadIdx.x)*o=g;}
__global__ void other(int* x){if(x)x[threadIdx.x]+=1;}
unsigned long long rd(unsigned long long*d){unsigned long long h;cudaMemcpy(&h,d,8,cudaMemcpyDeviceToHost);return h;}
int main(){unsigned long long*d;int*w;cudaMalloc(&d,8);cudaMalloc(&w,4096);cudaStream_t s;cudaStreamCreate(&s);
for(int i=0;i<3;++i){probe<<<1,32>>>(d);printf("launch %d: %llu\n",i,rd(d));}
for(int i=0;i<3;++i)other<<<1,32>>>(w);cudaMemsetAsync(w,0,4096);probe<<<1,32>>>(d);printf("after 3 kernels+memset: %llu\n",rd(d));
probe<<<1,32,0,s>>>(d);printf("stream2: %llu\n",rd(d));
for(int i=0;i<100000;++i)other<<<1,32>>>(w);probe<<<1,32>>>(d);printf("after 1e5: %llu\n",rd(d));
cudaGraph_t g;cudaGraphExec_t ge;cudaStreamBeginCapture(s,cudaStreamCaptureModeGlobal);probe<<<1,32,0,s>>>(d);cudaStreamEndCapture(s,&g);cudaGraphInstantiate(&ge,g,0);
for(int i=0;i<2;++i){cudaGraphLaunch(ge,s);printf("graph %d: %llu\n",i,rd(d));}
printf("%s\n",cudaGetErrorString(cudaGetLastError()));}
