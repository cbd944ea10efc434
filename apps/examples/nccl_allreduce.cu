// A CUDA program that bootstraps NCCL through pltrun's store (no MPI) and all-reduces a
// buffer:  pltrun --nproc-per-node gpu build/apps/examples/nccl_allreduce

#include <pltrun/nccl.h>

#include <cstdio>
#include <vector>

#define CHECK_CUDA(call)                                                    \
  do {                                                                      \
    cudaError_t status_ = (call);                                           \
    if (status_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(status_)); \
      return 1;                                                             \
    }                                                                       \
  } while (0)

int main() {
  auto group = pltrun::Group::join();
  const int rank = group->rank(), world = group->worldSize();
  int device = pltrun::selectCudaDevice(group->context());
  ncclComm_t comm = pltrun::initNcclComm(*group, "world");

  constexpr size_t kCount = 1 << 20;
  std::vector<float> host(kCount, static_cast<float>(rank + 1));
  float* buffer = nullptr;
  CHECK_CUDA(cudaMalloc(&buffer, kCount * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(buffer, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice));
  ncclResult_t result = ncclAllReduce(buffer, buffer, kCount, ncclFloat, ncclSum, comm, cudaStreamDefault);
  if (result != ncclSuccess) {
    std::fprintf(stderr, "ncclAllReduce: %s\n", ncclGetErrorString(result));
    return 1;
  }
  CHECK_CUDA(cudaStreamSynchronize(cudaStreamDefault));
  CHECK_CUDA(cudaMemcpy(host.data(), buffer, kCount * sizeof(float), cudaMemcpyDeviceToHost));
  const float expected = world * (world + 1) / 2.0f;
  size_t wrong = 0;
  for (float value : host) wrong += value != expected;
  std::printf("rank %d of %d on GPU %d: all-reduce of %zu floats gave %g (expected %g), %zu wrong\n", rank, world,
              device, kCount, host[0], expected, wrong);
  cudaFree(buffer);
  ncclCommDestroy(comm);
  return wrong == 0 ? 0 : 1;
}
