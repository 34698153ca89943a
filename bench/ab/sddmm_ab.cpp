// Two builds of one SDDMM kernel (same ABI) in one process, interleaved rounds, medians; checks
// that their outputs agree. Built and run by bench/ab/sddmm_ab.sh.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>
#include <cstdint>
#include "variants.h"
struct Csr { int64_t n=0,m=0; std::vector<int32_t> pos,crd; std::vector<float> val; };
Csr read_mtx(const char* path){
  std::ifstream in(path); std::string line; bool sym=false, pat=false;
  std::getline(in,line); sym = line.find("symmetric")!=std::string::npos; pat=line.find("pattern")!=std::string::npos;
  while(std::getline(in,line)) if(line[0]!='%') break;
  std::istringstream h(line); int64_t n,m,nz; h>>n>>m>>nz;
  std::vector<std::pair<int64_t,int64_t>> e; e.reserve(nz*2);
  for(int64_t k=0;k<nz;k++){int64_t i,j; double v=1; in>>i>>j; if(!pat) in>>v; e.push_back({i-1,j-1}); if(sym&&i!=j) e.push_back({j-1,i-1});}
  std::sort(e.begin(),e.end()); e.erase(std::unique(e.begin(),e.end()),e.end());
  Csr c; c.n=n;c.m=m;c.pos.assign(n+1,0); for(auto&p:e) c.pos[p.first+1]++; for(int64_t i=0;i<n;i++) c.pos[i+1]+=c.pos[i];
  for(auto&p:e){c.crd.push_back((int32_t)p.second); c.val.push_back(1.0f+0.001f*(c.crd.size()%7));}
  return c;
}
int main(int argc,char**argv){
  const char* path=argv[1]; int K=atoi(argv[2]); int rounds=argc>3?atoi(argv[3]):15; int reps=argc>4?atoi(argv[4]):20;
  Csr X=read_mtx(path);
  std::mt19937 g(1); std::uniform_real_distribution<float> d(-1,1);
  std::vector<float> A(X.n*K),B(X.m*K); for(auto&a:A)a=d(g); for(auto&b:B)b=d(g);
  int nv=sizeof(kVariants)/sizeof(kVariants[0]);
  std::vector<std::vector<float>> Y(nv,std::vector<float>(X.crd.size()));
  std::vector<std::vector<double>> t(nv);
  for(int r=0;r<rounds;r++) for(int v=0;v<nv;v++){
    kVariants[v].fn(X.n,X.m,K,Y[v].data(),X.pos.data(),X.crd.data(),X.val.data(),A.data(),B.data());
    auto t0=std::chrono::steady_clock::now();
    for(int k=0;k<reps;k++) kVariants[v].fn(X.n,X.m,K,Y[v].data(),X.pos.data(),X.crd.data(),X.val.data(),A.data(),B.data());
    t[v].push_back(std::chrono::duration<double,std::milli>(std::chrono::steady_clock::now()-t0).count()/reps);
  }
  for(int v=1;v<nv;v++){double md=0; for(size_t p=0;p<Y[0].size();p++) md=std::max(md,(double)std::fabs(Y[v][p]-Y[0][p])); if(md>1e-3) printf("MISMATCH %s %g\n",kVariants[v].name,md);}
  printf("%-14s", strrchr(path,'/')+1);
  double base=0;
  for(int v=0;v<nv;v++){auto s=t[v]; std::sort(s.begin(),s.end()); double m=s[s.size()/2]; if(v==0) base=m; printf(" %s %.4f (%.2fx)",kVariants[v].name,m,base/m);}
  printf("\n");
}
