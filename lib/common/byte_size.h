// Sizes given on the command line ("5GB", "16G", "512MiB", "4096"): one parser for every
// option that takes one (--max-memory, --max-shard-size).
#pragma once

#include <cstdint>
#include <string>

namespace fsq {

// Bytes of `text`: a number (decimals allowed) and an optional unit, case-insensitive.
// KB/MB/GB/TB are powers of 10, as Hugging Face counts shard sizes; K/M/G/T and
// KiB/MiB/GiB/TiB powers of 2, as memory is counted. Throws fsq::Error naming `option` on
// anything else, or on a size below 1 byte or above 1e18.
int64_t parse_byte_size(const std::string& text, const std::string& option);

}  // namespace fsq
