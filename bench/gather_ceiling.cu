// gather_ceiling.cu - how fast can a GPU gather 256-byte rows at random ids?
//
// The block_sparse score kernel at B = 64 reads one 256-byte centroid per
// scored block, at a random block id, and writes one f32 score. This
// microbenchmark times the same access pattern without the compiler: 512
// rows of 2048 blocks, each block's centroid dotted with its row's mean
// query, in three schedules (docs/benchmarks.md, "Round 9"):
//
//   reg     a persistent grid, one 8-lane group per block, U blocks a
//           group loads into registers per iteration, ids an iteration
//           ahead (the schedule of our score kernels);
//   async   the same with the centroids staged in shared memory by
//           cp.async, S iterations in flight, so the loads in flight no
//           longer cost registers;
//   inter   groups walk chunks of C positions interleaved over the whole
//           grid, so the blocks in flight at any time belong to a few rows;
//   reg ... sectors  the reg schedule storing the scores a 32-byte sector
//           at a time (8 lanes together) instead of one f32 per block.
//   reg ... <hint>   the reg schedule with a cache hint on the gathers
//           (round 14): ld.global.nc, L1::no_allocate, L2::256B (the L2
//           fetches the whole 256-byte row on the first miss),
//           L2::evict_first, or an L2 prefetch of the next iteration's
//           rows; "no_allocate halves" puts a lane's two 16-byte loads
//           128 bytes apart, so each load of a group covers whole sectors.
//
// Each at every CTAs-per-SM count that fits, L2 flushed before every run.
// The floor is the bytes (256 + 4 + 4 per block) over the measured copy
// bandwidth. Ids: a random permutation of a pool twice the rows' size, or
// (REGION=1) of each row's own 2048-block region, as bench_indexer lays
// them out.
//
//   nvcc -O3 -arch=sm_90 -std=c++17 bench/gather_ceiling.cu -o gather_ceiling
//   ./gather_ceiling; REGION=1 ./gather_ceiling

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CHECK(x)                                                             \
  do {                                                                       \
    cudaError_t e = (x);                                                     \
    if (e != cudaSuccess) {                                                  \
      std::printf("CUDA error %s at line %d\n", cudaGetErrorString(e),       \
                  __LINE__);                                                 \
      std::exit(1);                                                          \
    }                                                                        \
  } while (0)

constexpr int kD = 128, kLanes = 8, kPerLane = 16; // 16 bf16 = 32 B a lane

__device__ __forceinline__ float dot16(uint4 a, uint4 b, const float *q) {
  const auto *x = reinterpret_cast<const __nv_bfloat162 *>(&a);
  const auto *y = reinterpret_cast<const __nv_bfloat162 *>(&b);
  float s = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 f = __bfloat1622float2(x[i]);
    s += f.x * q[2 * i] + f.y * q[2 * i + 1];
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 f = __bfloat1622float2(y[i]);
    s += f.x * q[8 + 2 * i] + f.y * q[8 + 2 * i + 1];
  }
  return s;
}

__device__ __forceinline__ float sumGroup(float s) {
  s += __shfl_xor_sync(~0u, s, 4);
  s += __shfl_xor_sync(~0u, s, 2);
  return s + __shfl_xor_sync(~0u, s, 1);
}

__device__ __forceinline__ void loadQ(float *q, const float *qm, long row,
                                      int lane) {
  for (int i = 0; i < kPerLane; ++i)
    q[i] = qm[row * kD + lane * kPerLane + i];
}

/// q for a lane whose columns are [8 lane, 8 lane + 8) and 64 more.
__device__ __forceinline__ void loadQHalves(float *q, const float *qm,
                                            long row, int lane) {
  for (int i = 0; i < 8; ++i) {
    q[i] = qm[row * kD + lane * 8 + i];
    q[8 + i] = qm[row * kD + 64 + lane * 8 + i];
  }
}

/// This thread's 8-lane group in a persistent grid of 256-thread CTAs: its
/// lane, its index and the group count, and its contiguous chunk [s0, s1)
/// of the P positions.
struct Group {
  int lane;
  long index, count, s0, s1;
  __device__ explicit Group(long P) {
    lane = threadIdx.x % kLanes;
    index = (blockIdx.x * 256L + threadIdx.x) / kLanes;
    count = static_cast<long>(gridDim.x) * 256 / kLanes;
    long chunk = (P + count - 1) / count;
    s0 = index * chunk;
    s1 = s0 + chunk < P ? s0 + chunk : P;
  }
};

/// How a register schedule loads a lane's 16 bytes of a gathered row.
enum Hint {
  Plain, NC, NoL1, L2_256, NC_256, NoL1_256, EvictFirst, Prefetch,
  // L1::no_allocate with a lane's two 16-byte loads 128 bytes apart, so
  // each load of the 8 lanes covers whole 32-byte sectors.
  NoL1Halves
};

template <int H> __device__ __forceinline__ uint4 loadRow(const uint4 *p) {
  uint4 v;
#define LD(OP)                                                               \
  asm volatile(OP " {%0, %1, %2, %3}, [%4];\n"                               \
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)                  \
               : "l"(p))
  if constexpr (H == NC)
    LD("ld.global.nc.v4.u32");
  else if constexpr (H == NoL1 || H == NoL1Halves)
    LD("ld.global.L1::no_allocate.v4.u32");
  else if constexpr (H == L2_256)
    LD("ld.global.L2::256B.v4.u32");
  else if constexpr (H == NC_256)
    LD("ld.global.nc.L2::256B.v4.u32");
  else if constexpr (H == NoL1_256)
    LD("ld.global.L1::no_allocate.L2::256B.v4.u32");
  else if constexpr (H == EvictFirst)
    asm volatile("{\n .reg .b64 pol;\n"
                 " createpolicy.fractional.L2::evict_first.b64 pol, 1.0;\n"
                 " ld.global.L1::no_allocate.L2::cache_hint.v4.u32"
                 " {%0, %1, %2, %3}, [%4], pol;\n}\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  else
    v = *p;
#undef LD
  return v;
}

/// One iteration of a register schedule: U blocks gathered at `next`
/// (their ids loaded an iteration before), the ids of the next iteration,
/// then each block's score stored at its position (below `end`).
template <int U, bool Sectors = false, int H = Plain>
__device__ __forceinline__ void
gatherStep(const int *ids, const __nv_bfloat16 *cent, const float *qm,
           float *out, long P, int n, long s, long end, int lane, int *next,
           float *q, long &row, float *held = nullptr, long begin = 0) {
  uint4 a[U], b[U];
  for (int u = 0; u < U; ++u) {
    const uint4 *base =
        reinterpret_cast<const uint4 *>(cent + static_cast<long>(next[u]) * kD);
    if constexpr (H == NoL1Halves) {
      a[u] = loadRow<H>(base + lane);
      b[u] = loadRow<H>(base + 8 + lane);
    } else {
      a[u] = loadRow<H>(base + lane * 2);
      b[u] = loadRow<H>(base + lane * 2 + 1);
    }
  }
  for (int u = 0; u < U; ++u)
    next[u] = ids[min(s + U + u, P - 1)];
  if constexpr (H == Prefetch) {
    // The next iteration's rows, one 128-byte line per lane pair.
    for (int u = 0; u < U; ++u)
      if (lane % 4 == 0)
        asm volatile("prefetch.global.L2::evict_last [%0];\n" ::"l"(
            cent + static_cast<long>(next[u]) * kD + lane * 16));
  }
  for (int u = 0; u < U; ++u) {
    long pos = s + u, r = min(pos, P - 1) / n;
    if (r != row) {
      row = r;
      if constexpr (H == NoL1Halves)
        loadQHalves(q, qm, row, lane);
      else
        loadQ(q, qm, row, lane);
    }
    float v = sumGroup(dot16(a[u], b[u], q));
    if constexpr (Sectors) {
      // Lane pos % 8 holds the score until the group's 32-byte sector of
      // scores is complete (or the chunk ends), then the lanes store it
      // together.
      if (lane == (pos & 7))
        *held = v;
      if (pos < end && ((pos & 7) == 7 || pos == end - 1)) {
        long at = (pos & ~7L) + lane;
        if (at >= begin && at <= pos)
          out[at] = *held;
      }
    } else if (lane == 0 && pos < end) {
      out[pos] = v;
    }
  }
}

template <int U, bool Sectors = false, int H = Plain>
__global__ void __launch_bounds__(256)
    regGather(const int *ids, const __nv_bfloat16 *cent, const float *qm,
              float *out, long P, int n) {
  Group grp(P);
  int lane = grp.lane;
  long s0 = grp.s0, s1 = grp.s1;
  float q[kPerLane];
  long row = -1;
  int next[U];
  for (int u = 0; u < U; ++u)
    next[u] = ids[min(s0 + u, P - 1)];
  float held = 0;
  for (long s = s0; s < s1; s += U)
    gatherStep<U, Sectors, H>(ids, cent, qm, out, P, n, s, s1, lane, next,
                              q, row, &held, s0);
}

template <int S, int U>
__global__ void __launch_bounds__(256)
    asyncGather(const int *ids, const __nv_bfloat16 *cent, const float *qm,
                float *out, long P, int n) {
  extern __shared__ uint4 stage[]; // [S][U][32 groups][8 lanes][2]
  Group grp(P);
  int lane = grp.lane, local = threadIdx.x / kLanes;
  long s0 = grp.s0, s1 = grp.s1;
  auto slot = [&](int st, int u) {
    return stage + (((st * U + u) * 32 + local) * kLanes + lane) * 2;
  };
  // Each lane copies the 32 bytes it later reads: no barrier, only its own
  // cp.async groups to wait for.
  auto issue = [&](long it, int st) {
    for (int u = 0; u < U; ++u) {
      int id = ids[min(s0 + it * U + u, P - 1)];
      const uint4 *p =
          reinterpret_cast<const uint4 *>(cent + static_cast<long>(id) * kD) +
          lane * 2;
      unsigned d =
          static_cast<unsigned>(__cvta_generic_to_shared(slot(st, u)));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d),
                   "l"(p));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d + 16),
                   "l"(p + 1));
    }
    asm volatile("cp.async.commit_group;\n");
  };
  long iters = s1 > s0 ? (s1 - s0 + U - 1) / U : 0;
  for (int j = 0; j < S - 1; ++j)
    issue(j, j);
  float q[kPerLane];
  long row = -1;
  for (long it = 0; it < iters; ++it) {
    issue(it + S - 1, (it + S - 1) % S);
    asm volatile("cp.async.wait_group %0;\n" ::"n"(S - 1));
    for (int u = 0; u < U; ++u) {
      long pos = s0 + it * U + u, r = min(pos, P - 1) / n;
      if (r != row)
        loadQ(q, qm, row = r, lane);
      uint4 *d = slot(it % S, u);
      float v = sumGroup(dot16(d[0], d[1], q));
      if (lane == 0 && pos < s1)
        out[pos] = v;
    }
  }
  asm volatile("cp.async.wait_group 0;\n");
}

template <int U, int C>
__global__ void __launch_bounds__(256)
    interGather(const int *ids, const __nv_bfloat16 *cent, const float *qm,
                float *out, long P, int n) {
  Group grp(P);
  int lane = grp.lane;
  float q[kPerLane];
  long row = -1;
  for (long base = grp.index * C; base < P; base += grp.count * C) {
    int next[U];
    for (int u = 0; u < U; ++u)
      next[u] = ids[min(base + u, P - 1)];
    for (long s = base; s < base + C; s += U)
      gatherStep<U>(ids, cent, qm, out, P, n, s, P, lane, next, q, row);
  }
}

__global__ void fill(__nv_bfloat16 *cent, long count) {
  for (long i = blockIdx.x * 256L + threadIdx.x; i < count;
       i += static_cast<long>(gridDim.x) * 256)
    cent[i] = __float2bfloat16(static_cast<float>((i * 2654435761L) % 1000) /
                               1000.f - 0.5f);
}

int main() {
  const int rows = 512, n = 2048;
  const long P = static_cast<long>(rows) * n, pool = 2 * P;
  std::mt19937 rng(1);
  std::vector<int> hostIds(P);
  if (std::getenv("REGION")) {
    for (int r = 0; r < rows; ++r) {
      std::vector<int> p(n);
      for (int i = 0; i < n; ++i)
        p[i] = r * n + i;
      std::shuffle(p.begin(), p.end(), rng);
      std::copy(p.begin(), p.end(), hostIds.begin() + static_cast<long>(r) * n);
    }
  } else {
    std::vector<int> perm(pool);
    for (long i = 0; i < pool; ++i)
      perm[i] = static_cast<int>(i);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::copy(perm.begin(), perm.begin() + P, hostIds.begin());
  }
  int *ids;
  __nv_bfloat16 *cent;
  float *qm, *out;
  CHECK(cudaMalloc(&ids, P * 4));
  CHECK(cudaMalloc(&cent, pool * kD * 2));
  CHECK(cudaMalloc(&qm, rows * kD * 4));
  CHECK(cudaMalloc(&out, P * 4));
  CHECK(cudaMemcpy(ids, hostIds.data(), P * 4, cudaMemcpyHostToDevice));
  fill<<<1024, 256>>>(cent, pool * kD);
  CHECK(cudaGetLastError());
  std::vector<float> hostQ(rows * kD);
  for (float &x : hostQ)
    x = static_cast<float>(rng() % 100) / 100.f;
  CHECK(cudaMemcpy(qm, hostQ.data(), rows * kD * 4, cudaMemcpyHostToDevice));
  const size_t flushBytes = 256 << 20;
  void *flush;
  CHECK(cudaMalloc(&flush, flushBytes));
  int sms;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  const double bytes = P * (256.0 + 4 + 4);
  std::vector<float> reference;

  // Median of 15 runs, L2 flushed before each; every schedule's scores are
  // compared with the first's.
  auto time = [&](const char *name, auto launch) {
    std::vector<float> us;
    for (int rep = 0; rep < 15; ++rep) {
      CHECK(cudaMemset(flush, rep, flushBytes));
      CHECK(cudaEventRecord(e0));
      launch();
      CHECK(cudaEventRecord(e1));
      CHECK(cudaEventSynchronize(e1));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      us.push_back(ms * 1000);
    }
    std::sort(us.begin(), us.end());
    std::vector<float> got(P);
    CHECK(cudaMemcpy(got.data(), out, P * 4, cudaMemcpyDeviceToHost));
    if (reference.empty())
      reference = got;
    // Equal up to the f32 rounding of another summation order (a layout
    // that gives a lane other columns).
    bool same = true;
    for (long i = 0; i < P && same; ++i)
      same = std::abs(got[i] - reference[i]) <=
             1e-5f * (1.f + std::abs(reference[i]));
    std::printf("%-30s %8.1f us  %5.2f TB/s  %s\n", name, us[7],
                bytes / us[7] / 1e6, same ? "scores equal" : "SCORES DIFFER");
  };
  auto fitting = [&](auto kernel, size_t smem) {
    int ctas = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, 256,
                                                        smem));
    return std::min(ctas, 4);
  };
  char name[64];
#define REG(U)                                                               \
  for (int c = 1; c <= fitting(regGather<U>, 0); ++c) {                      \
    std::snprintf(name, sizeof name, "reg U=%d ctas/sm=%d", U, c);           \
    time(name, [&] {                                                         \
      regGather<U><<<sms * c, 256>>>(ids, cent, qm, out, P, n);              \
    });                                                                      \
  }
#define ASYNC(S, U)                                                          \
  {                                                                          \
    size_t smem = static_cast<size_t>(S) * U * 32 * kLanes * 2 * 16;         \
    CHECK(cudaFuncSetAttribute(asyncGather<S, U>,                            \
                               cudaFuncAttributeMaxDynamicSharedMemorySize,  \
                               static_cast<int>(smem)));                     \
    for (int c = 1; c <= fitting(asyncGather<S, U>, smem); ++c) {            \
      std::snprintf(name, sizeof name, "async S=%d U=%d ctas/sm=%d", S, U,   \
                    c);                                                      \
      time(name, [&] {                                                       \
        asyncGather<S, U><<<sms * c, 256, smem>>>(ids, cent, qm, out, P, n); \
      });                                                                    \
    }                                                                        \
  }
#define INTER(U, C)                                                          \
  for (int c = 2; c <= std::min(fitting(interGather<U, C>, 0), 3); ++c) {    \
    std::snprintf(name, sizeof name, "inter U=%d C=%d ctas/sm=%d", U, C, c); \
    time(name, [&] {                                                         \
      interGather<U, C><<<sms * c, 256>>>(ids, cent, qm, out, P, n);         \
    });                                                                      \
  }
  REG(2) REG(4)
#define HINT(U, H, LABEL)                                                    \
  for (int c = 2; c <= std::min(fitting(regGather<U, false, H>, 0), 3); ++c) { \
    std::snprintf(name, sizeof name, "reg U=%d %s ctas/sm=%d", U, LABEL, c); \
    time(name, [&] {                                                         \
      regGather<U, false, H><<<sms * c, 256>>>(ids, cent, qm, out, P, n);    \
    });                                                                      \
  }
  HINT(2, NC, "nc") HINT(2, NoL1, "L1::no_allocate")
  HINT(2, L2_256, "L2::256B") HINT(2, NC_256, "nc L2::256B")
  HINT(2, NoL1_256, "no_allocate L2::256B")
  HINT(2, EvictFirst, "evict_first") HINT(2, Prefetch, "prefetch next")
  HINT(1, L2_256, "L2::256B") HINT(1, Prefetch, "prefetch next")
  HINT(2, NoL1Halves, "no_allocate halves")
  if (!std::getenv("HINTS_ONLY")) {
  for (int c = 2; c <= fitting(regGather<2, true>, 0); ++c) {
    std::snprintf(name, sizeof name, "reg U=2 sectors ctas/sm=%d", c);
    time(name, [&] {
      regGather<2, true><<<sms * c, 256>>>(ids, cent, qm, out, P, n);
    });
  }
  ASYNC(2, 1) ASYNC(3, 1) ASYNC(4, 1) ASYNC(2, 2) ASYNC(3, 2) ASYNC(4, 2)
  ASYNC(8, 1)
  INTER(2, 2) INTER(2, 8) INTER(2, 16) INTER(2, 32) INTER(2, 64)
  }

  // Copy bandwidth: read + write of a 1 GiB device-to-device copy.
  const size_t copyBytes = size_t(1) << 30;
  void *big;
  CHECK(cudaMalloc(&big, 2 * copyBytes));
  float ms = 0;
  for (int rep = 0; rep < 3; ++rep) {
    CHECK(cudaEventRecord(e0));
    CHECK(cudaMemcpy(static_cast<char *>(big) + copyBytes, big, copyBytes,
                     cudaMemcpyDeviceToDevice));
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
  }
  double bandwidth = 2.0 * copyBytes / ms / 1e6; // GB/s
  std::printf("device %s; ids %s; copy bandwidth %.0f GB/s; %.1f MB moved, "
              "floor %.1f us\n",
              prop.name, std::getenv("REGION") ? "per-row regions" : "random",
              bandwidth, bytes / 1e6, bytes / (bandwidth * 1e3));
  return 0;
}
