// SHA-256 (OpenSSL) for provenance stamps.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

namespace fsq {

std::string sha256_hex(std::span<const std::byte> data);
std::string sha256_hex(std::string_view text);
// Hashes a file through a memory map; throws fsq::Error naming the file when unreadable.
std::string sha256_file(const std::filesystem::path& path);

}  // namespace fsq
