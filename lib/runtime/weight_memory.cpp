#include "runtime/weight_memory.h"

#include <sys/mman.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace fsq {
namespace {

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

struct Chunk {
  size_t size = 0;  // mapped bytes
  size_t used = 0;  // bump offset of the next allocation
  int64_t live = 0; // allocations not yet released
  // Live allocations touching each huge page of the chunk: a page whose count drops to zero
  // behind the bump offset is handed back to the kernel (MADV_DONTNEED), so a weight that
  // quantize replaces stops being resident even while its neighbours keep the chunk mapped.
  std::vector<int32_t> live_per_page;
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
        add_piece(reinterpret_cast<uintptr_t>(current_), c, c.used, size);
        return p;
      }
      give_back_tail(c, current_);  // no more pieces will land in it
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
    auto* base = reinterpret_cast<std::byte*>(it->first);
    const auto piece = sizes_.find(at);
    if (piece != sizes_.end()) {
      drop_piece(c, base, at - it->first, piece->second);
      sizes_.erase(piece);
    }
    if (c.live > 0) return;
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
    Chunk& c = chunks_[reinterpret_cast<uintptr_t>(base)];
    c.size = chunk_size;
    c.live_per_page.assign(chunk_size / kHugePageBytes, 0);
    add_piece(reinterpret_cast<uintptr_t>(base), c, 0, first);
    mapped_ += static_cast<int64_t>(chunk_size);
    if (current) current_ = base;
    return base;
  }

  // Records a piece of `size` bytes at `offset` in `c` (offset is c.used for carved pieces).
  void add_piece(uintptr_t base, Chunk& c, size_t offset, size_t size) {
    sizes_[base + offset] = size;
    c.used = offset + size;
    ++c.live;
    for (size_t page = offset / kHugePageBytes; page <= (offset + size - 1) / kHugePageBytes; ++page)
      ++c.live_per_page[page];
  }

  // Forgets a piece and gives back the huge pages it leaves empty, except one the bump
  // offset is still inside (the next pieces go there) and none once the chunk is empty
  // (it is unmapped whole).
  void drop_piece(Chunk& c, std::byte* base, size_t offset, size_t size) {
    --c.live;
    for (size_t page = offset / kHugePageBytes; page <= (offset + size - 1) / kHugePageBytes; ++page) {
      if (--c.live_per_page[page] > 0 || c.live == 0) continue;
      const size_t page_end = (page + 1) * kHugePageBytes;
      if (base == current_ && c.used < page_end) continue;
      (void)::madvise(base + page * kHugePageBytes, kHugePageBytes, MADV_DONTNEED);
    }
  }

  // The page holding the bump offset of a chunk that stops being the current one, if empty.
  void give_back_tail(const Chunk& c, std::byte* base) {
    if (c.used == 0 || c.live == 0) return;
    const size_t page = (c.used - 1) / kHugePageBytes;
    if (c.live_per_page[page] == 0) (void)::madvise(base + page * kHugePageBytes, kHugePageBytes, MADV_DONTNEED);
  }

  std::mutex mutex_;
  std::map<uintptr_t, Chunk> chunks_;  // by base address
  std::byte* current_ = nullptr;       // the chunk small allocations are carved from
  std::unordered_map<uintptr_t, size_t> sizes_;  // every live piece's size, by address
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
