#include "runtime/weight_memory.h"

#include <sys/mman.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <mutex>
#include <new>

namespace fsq {
namespace {

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

struct Chunk {
  size_t size = 0;  // mapped bytes
  size_t used = 0;  // bump offset of the next allocation
  int64_t live = 0; // allocations not yet released
};

// A 2 MiB-aligned anonymous mapping of `size` bytes (a multiple of kHugePageBytes): over-map
// by one huge page and trim both ends, since mmap only promises page alignment.
std::byte* map_aligned(size_t size) {
  const size_t span = size + kHugePageBytes;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = round_up(begin, kHugePageBytes);
  if (aligned > begin) ::munmap(raw, aligned - begin);
  const uintptr_t tail = aligned + size, end = begin + span;
  if (end > tail) ::munmap(reinterpret_cast<void*>(tail), end - tail);
  auto* p = reinterpret_cast<std::byte*>(aligned);
  // Advice only: fails harmlessly where huge pages are not available.
  (void)::madvise(p, size, MADV_HUGEPAGE);
  return p;
}

class ChunkPool {
 public:
  void* allocate(size_t size) {
    size = round_up(size == 0 ? 1 : size, kWeightAlignment);
    std::lock_guard<std::mutex> lock(mutex_);
    if (size > kWeightChunkBytes / 4) return new_chunk(round_up(size, kHugePageBytes), size, /*current=*/false);
    if (current_ != nullptr) {
      Chunk& c = chunks_.at(reinterpret_cast<uintptr_t>(current_));
      if (c.used + size <= c.size) {
        std::byte* p = current_ + c.used;
        c.used += size;
        ++c.live;
        return p;
      }
    }
    return new_chunk(kWeightChunkBytes, size, /*current=*/true);
  }

  void release(void* p) noexcept {
    if (p == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    const auto at = reinterpret_cast<uintptr_t>(p);
    auto it = chunks_.upper_bound(at);
    if (it == chunks_.begin()) return;  // not ours: nothing to do (cannot happen through the API)
    --it;
    Chunk& c = it->second;
    if (at >= it->first + c.size) return;  // past the chunk below it: not ours either
    if (--c.live > 0) return;
    auto* base = reinterpret_cast<std::byte*>(it->first);
    if (base == current_) current_ = nullptr;
    ::munmap(base, c.size);
    mapped_ -= static_cast<int64_t>(c.size);
    chunks_.erase(it);
  }

  int64_t mapped() {
    std::lock_guard<std::mutex> lock(mutex_);
    return mapped_;
  }

 private:
  std::byte* new_chunk(size_t chunk_size, size_t first, bool current) {
    std::byte* base = map_aligned(chunk_size);
    chunks_.emplace(reinterpret_cast<uintptr_t>(base), Chunk{chunk_size, first, 1});
    mapped_ += static_cast<int64_t>(chunk_size);
    if (current) current_ = base;
    return base;
  }

  std::mutex mutex_;
  std::map<uintptr_t, Chunk> chunks_;  // by base address
  std::byte* current_ = nullptr;       // the chunk small allocations are carved from
  int64_t mapped_ = 0;
};

// Never destroyed: weights held by static objects may be released after main returns.
ChunkPool& pool() {
  static auto* p = new ChunkPool();
  return *p;
}

}  // namespace

void* allocate_weight_memory(size_t size) { return pool().allocate(size); }

void release_weight_memory(void* p) noexcept { pool().release(p); }

int64_t weight_memory_mapped_bytes() { return pool().mapped(); }

std::string transparent_huge_pages_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(in, line)) return "unavailable";
  const size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "unavailable";
  return line.substr(open + 1, close - open - 1);
}

}  // namespace fsq
