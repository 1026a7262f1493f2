#include "runtime/threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <thread>

namespace fsq {

int set_threads(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  omp_set_num_threads(threads);
  // LibTorch does not tell OpenBLAS (Debian's libopenblas0-pthread keeps its own pool, one
  // thread per core); without this, --threads 1 still runs busy-yielding BLAS workers.
  using SetBlasThreads = void (*)(int);
  if (auto set_blas = reinterpret_cast<SetBlasThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set_blas(threads);
  return threads;
}

}  // namespace fsq
