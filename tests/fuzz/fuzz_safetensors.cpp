// libFuzzer target: fsq::SafetensorsFile::open on arbitrary bytes. The reader only
// opens paths, so each input is written to a per-process file in /dev/shm (tmpfs, no
// disk I/O). fsq::Error is the only allowed failure and must be one line; every tensor
// view it returns must lie inside the input.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "common/error.h"
#include "formats/safetensors.h"

namespace {

std::filesystem::path scratch_path() {
  std::filesystem::path dir = std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
  return dir / ("fsq-fuzz-" + std::to_string(::getpid()) + ".safetensors");
}

void remove_scratch();
const std::filesystem::path& scratch() {
  static const std::filesystem::path path = [] {
    std::atexit(remove_scratch);
    return scratch_path();
  }();
  return path;
}
void remove_scratch() {
  std::error_code ec;
  std::filesystem::remove(scratch(), ec);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path& path = scratch();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  try {
    auto st = fsq::SafetensorsFile::open(path);
    for (const auto& t : st->tensors()) {
      if (st->find(t.name) != &t) std::abort();
      if (t.nbytes > 0) {
        // Reads the first and last byte: ASan flags a view outside the mapping.
        volatile std::byte first = t.data[0], last = t.data[t.nbytes - 1];
        (void)first;
        (void)last;
      }
    }
  } catch (const fsq::Error& e) {
    if (std::strchr(e.what(), '\n') != nullptr) std::abort();  // messages must stay one line
  }
  return 0;
}
