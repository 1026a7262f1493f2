// The huge-page weight memory: alignment, chunk sharing and release, and the tensors that the
// model loader places in it. Counts are taken as differences: other tests in this binary may
// hold weight memory of their own.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/aligned_bytes.h"
#include "runtime/torch_bridge.h"
#include "runtime/weight_memory.h"

namespace fsq {
namespace {

uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(WeightMemory, AllocationsAreCacheLineAlignedDisjointAndWritable) {
  std::vector<AlignedBytes> blocks;
  const std::vector<size_t> sizes = {0, 1, 63, 64, 65, 4096, 170000, 3 << 20};
  for (size_t s : sizes) {
    blocks.push_back(allocate_aligned(s));
    ASSERT_NE(blocks.back(), nullptr);
    EXPECT_EQ(address(blocks.back().get()) % kWeightAlignment, 0u) << "size " << s;
    std::memset(blocks.back().get(), static_cast<int>(s & 0xff), std::max(s, kWeightAlignment));
  }
  // No two blocks overlap: each still holds the byte it was filled with.
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t n = std::max(sizes[i], kWeightAlignment);
    for (size_t b : {size_t{0}, n - 1}) EXPECT_EQ(static_cast<uint8_t>(blocks[i][b]), sizes[i] & 0xff) << i;
  }
}

TEST(WeightMemory, SmallAllocationsShareOneChunkThatIsUnmappedWithTheLast) {
  const int64_t before = weight_memory_mapped_bytes();
  std::vector<AlignedBytes> blocks;
  // Enough to need a chunk of their own (the current chunk may have had room for a few).
  const size_t size = kWeightChunkBytes / 8;
  for (int i = 0; i < 12; ++i) blocks.push_back(allocate_aligned(size));
  const int64_t grown = weight_memory_mapped_bytes() - before;
  // 12 eighths fill one chunk and half of another: at most two new chunks, not twelve.
  EXPECT_GT(grown, 0);
  EXPECT_LE(grown, 2 * static_cast<int64_t>(kWeightChunkBytes));
  // Blocks carved from one chunk follow each other (at most two chunk boundaries among 11 pairs).
  int adjacent = 0;
  for (size_t i = 1; i < blocks.size(); ++i) adjacent += address(blocks[i].get()) - address(blocks[i - 1].get()) == size;
  EXPECT_GE(adjacent, 9);
  blocks.clear();
  EXPECT_EQ(weight_memory_mapped_bytes(), before);
}

// 4 KiB pages of [begin, end) that are resident (mincore).
int64_t resident_pages(uintptr_t begin, uintptr_t end) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in_core((end - begin + page - 1) / page);
  if (::mincore(reinterpret_cast<void*>(begin), end - begin, in_core.data()) != 0) return -1;
  int64_t n = 0;
  for (unsigned char c : in_core) n += c & 1;
  return n;
}

TEST(WeightMemory, ReleasedPieceGivesBackItsWholeHugePagesWhileTheChunkLives) {
  const size_t size = 3 * kHugePageBytes + 4096;
  AlignedBytes replaced = allocate_aligned(size);
  AlignedBytes kept = allocate_aligned(4096);  // after it in the same chunk: keeps the chunk mapped
  std::memset(replaced.get(), 1, size);
  std::memset(kept.get(), 2, 4096);
  // The huge pages wholly inside the released piece; no other piece can touch them.
  const uintptr_t begin = (address(replaced.get()) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const uintptr_t end = (address(replaced.get()) + size) / kHugePageBytes * kHugePageBytes;
  ASSERT_GE(end - begin, 2 * kHugePageBytes);
  const int64_t pages = static_cast<int64_t>((end - begin) / static_cast<size_t>(::sysconf(_SC_PAGESIZE)));
  ASSERT_EQ(resident_pages(begin, end), pages);
  const int64_t mapped = weight_memory_mapped_bytes();
  replaced.reset();
  EXPECT_EQ(weight_memory_mapped_bytes(), mapped);  // the chunk is still there...
  EXPECT_EQ(resident_pages(begin, end), 0);         // ...but not those pages
  EXPECT_EQ(static_cast<uint8_t>(kept[4095]), 2);
}

TEST(WeightMemory, LargeAllocationGetsItsOwnHugePageAlignedChunk) {
  const int64_t before = weight_memory_mapped_bytes();
  const size_t size = kWeightChunkBytes / 4 + 1;
  {
    AlignedBytes big = allocate_aligned(size);
    EXPECT_EQ(address(big.get()) % kHugePageBytes, 0u);
    const auto rounded = static_cast<int64_t>((size + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes);
    EXPECT_EQ(weight_memory_mapped_bytes() - before, rounded);
    big[size - 1] = std::byte{7};
  }
  EXPECT_EQ(weight_memory_mapped_bytes(), before);
}

TEST(WeightMemory, ConcurrentAllocationsStayDisjoint) {
  constexpr int kPerThread = 2000;
  std::vector<std::vector<AlignedBytes>> got(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([t, &got] {
      for (int i = 0; i < kPerThread; ++i) {
        got[t].push_back(allocate_aligned(100 + i % 300));
        std::memset(got[t].back().get(), t + 1, 100);
        if (i % 3 == 0) got[t].pop_back();  // releases interleave with the other thread's allocations
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 2; ++t)
    for (const AlignedBytes& b : got[t])
      for (int k = 0; k < 100; ++k) ASSERT_EQ(static_cast<int>(b[k]), t + 1);
}

TEST(WeightMemory, TensorCopiesLiveThereAndConvertTheirValues) {
  const int64_t before = weight_memory_mapped_bytes();
  {
    const at::Tensor src = at::arange(0, 3 * 5, at::kDouble).reshape({3, 5}).div(7.0);
    const at::Tensor w = copy_to_weight_memory(src, at::kFloat);
    EXPECT_EQ(w.scalar_type(), at::kFloat);
    EXPECT_EQ(w.sizes(), src.sizes());
    EXPECT_TRUE(w.is_contiguous());
    EXPECT_EQ(address(w.data_ptr()) % kWeightAlignment, 0u);
    EXPECT_TRUE(at::equal(w, src.to(at::kFloat)));

    const float values[4] = {1.5f, -2.0f, 0.25f, 8.0f};
    TensorView v;
    v.dtype = DType::F32;
    v.shape = {2, 2};
    v.data = reinterpret_cast<const std::byte*>(values);
    v.nbytes = sizeof(values);
    const at::Tensor t = tensor_from_view(v, at::kFloat, c10::Device(c10::kCPU));
    EXPECT_NE(t.data_ptr(), static_cast<const void*>(values));  // a copy, not the view
    EXPECT_TRUE(at::equal(t, at::tensor({1.5f, -2.0f, 0.25f, 8.0f}).reshape({2, 2})));
  }
  EXPECT_EQ(weight_memory_mapped_bytes(), before);
}

}  // namespace
}  // namespace fsq
