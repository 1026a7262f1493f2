// One knob for every thread pool the runtime's math runs on.
#pragma once

namespace fsq {

// Sets LibTorch's intra-op threads, OpenMP's and OpenBLAS's to `threads` (<= 0 means the
// hardware concurrency); returns the count in effect.
int set_threads(int threads);

}  // namespace fsq
