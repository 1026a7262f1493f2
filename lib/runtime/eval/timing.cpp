#include "runtime/eval/timing.h"

#include <ATen/ATen.h>

namespace fsq::timing {

at::Tensor synthetic_ids(int64_t batch, int64_t len, int64_t vocab, c10::Device device) {
  at::Tensor ids = at::empty({batch, len}, at::kLong);
  int64_t* p = ids.data_ptr<int64_t>();
  const int64_t lo = std::min<int64_t>(vocab - 1, 3);
  const int64_t span = std::max<int64_t>(1, vocab - lo);
  for (int64_t i = 0; i < batch * len; ++i) p[i] = lo + (i * 7919 + 17) % span;
  return ids.to(device);
}

}  // namespace fsq::timing
