// A vector's elements as raw bytes, for writers and hashes that take byte spans.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace fsq {

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

}  // namespace fsq
