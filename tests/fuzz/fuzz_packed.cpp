// libFuzzer target: fsq::PackedCheckpoint::open on an arbitrary model.safetensors. Each
// input is the bytes of a packed checkpoint's model.safetensors; the harness writes it into
// a per-process folder in /dev/shm next to the fixed config.json and fsq.json of
// tests/fuzz/packed (a tiny model: a lut4 linear with a CSR part, a lut3 dense-only linear,
// a uniform w4g32a linear with a bias; seeds in tests/fuzz/corpus/packed, written by
// make_corpus.py), opens it with verify_sha256 = false, and then uses every value the
// reader accepted: unpack_lut_linear + dequantize_lut for each LUT linear, dequantize_linear
// for the uniform one, a read of every dense tensor. fsq::Error from open is the only
// allowed failure and must be one line; once open succeeded, unpacking and dequantizing
// must not throw and must give finite weights (abort otherwise).
//
// What the fuzzer can and cannot reach. fsq.json fixes each linear's quant type and
// [rows, cols], so the tensor shapes the reader accepts are fixed too, except nnz, the
// length of the sparse part, which is free. fsq.json's tensor_sha256 must name exactly the
// tensors of model.safetensors; with a fixed list every input that adds, drops or renames a
// tensor (e.g. drops a sparse part, or adds one to the lut3 linear) would fail there, after
// the linears were read but before anything is dequantized. So the harness rewrites
// tensor_sha256 per input to the tensor names the input holds (placeholder hashes, which
// verify_sha256 = false never compares): the format allows any hash values when
// verification is off, and only the name-set check itself (covered by unit tests) and the
// sha256 comparison become unreachable. Everything else is reached: the safetensors
// header and offsets, every linear's tensor presence/dtype/shape checks, foreign tensors,
// the LUT value checks (centroids, CSR row pointers, columns, values) and the scale/zero
// point checks, then unpacking and dequantization of whatever passed. config.json and the
// rest of fsq.json (fixed, valid) are not fuzzed here.
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"
#include "formats/packed_checkpoint.h"
#include "formats/quant/lut_quant.h"
#include "formats/safetensors.h"

#ifndef FSQ_FUZZ_PACKED_DIR
#error "FSQ_FUZZ_PACKED_DIR (tests/fuzz/packed) must be defined"
#endif

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "fuzz_packed: %s\n", why.c_str());
  std::fflush(stderr);
  std::abort();
}

void write_file(const fs::path& path, const void* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) fail("cannot write " + path.string());
  if (size > 0 && std::fwrite(data, 1, size, f) != size) fail("short write to " + path.string());
  std::fclose(f);
}

void remove_scratch();

struct Scratch {
  fs::path dir;
  nlohmann::json manifest;  // tests/fuzz/packed/fsq.json; tensor_sha256 replaced per input
  std::string last_manifest;
};

constexpr const char* kScratchPrefix = "fsq-fuzz-packed-";

// libFuzzer ends a fuzzing run with _Exit, so the atexit cleanup only runs when inputs are
// replayed; folders of earlier runs whose process is gone are removed here instead.
void remove_stale(const fs::path& base) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(base, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with(kScratchPrefix)) continue;
    const std::string pid = name.substr(std::strlen(kScratchPrefix));
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos || pid.size() > 9) continue;
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) == -1 && errno == ESRCH) fs::remove_all(e.path(), ec);
  }
}

Scratch& scratch() {
  static Scratch s = [] {
    Scratch s;
    const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    remove_stale(base);
    s.dir = base / (kScratchPrefix + std::to_string(::getpid()));
    std::error_code ec;
    fs::create_directories(s.dir, ec);
    if (ec) fail("cannot create " + s.dir.string());
    std::atexit(remove_scratch);
    const fs::path fixed = FSQ_FUZZ_PACKED_DIR;
    fs::copy_file(fixed / fsq::kPackedConfigFile, s.dir / fsq::kPackedConfigFile,
                  fs::copy_options::overwrite_existing, ec);
    if (ec) fail("cannot copy " + (fixed / fsq::kPackedConfigFile).string());
    try {
      s.manifest = fsq::read_json_file(fixed / fsq::kPackedManifestFile);
    } catch (const fsq::Error& e) {
      fail(e.what());
    }
    return s;
  }();
  return s;
}

void remove_scratch() {
  std::error_code ec;
  fs::remove_all(scratch().dir, ec);
}

bool one_line(const fsq::Error& e) { return std::strchr(e.what(), '\n') == nullptr; }

// fsq.json with tensor_sha256 naming exactly the tensors of the input (see the top).
void write_manifest(Scratch& s, const fsq::SafetensorsFile& weights) {
  nlohmann::json hashes = nlohmann::json::object();
  for (const auto& t : weights.tensors()) hashes[t.name] = std::string(64, '0');
  s.manifest["tensor_sha256"] = std::move(hashes);
  std::string text = s.manifest.dump();
  if (text == s.last_manifest) return;
  write_file(s.dir / fsq::kPackedManifestFile, text.data(), text.size());
  s.last_manifest = std::move(text);
}

void check_finite(const std::vector<float>& w, const fsq::PackedLinear& l) {
  if (w.size() != static_cast<size_t>(l.rows * l.cols)) fail(l.name + ": dequantized size is wrong");
  for (float v : w)
    if (!std::isfinite(v)) fail(l.name + ": the reader accepted a linear that dequantizes to a non-finite weight");
}

// Every value the reader accepted, used as a kernel would.
void use(const fsq::PackedCheckpoint& ckpt) {
  for (const fsq::PackedLinear& l : ckpt.linears()) {
    try {
      if (l.is_lut()) {
        const fsq::LutMatrix m = fsq::unpack_lut_linear(l);
        if (m.has_sparse() != (l.sparse_row_ptr != nullptr)) fail(l.name + ": sparse part lost in unpacking");
        std::vector<float> w(static_cast<size_t>(l.rows * l.cols));
        fsq::dequantize_lut(m, w.data());
        check_finite(w, l);
      } else {
        check_finite(fsq::dequantize_linear(l), l);
      }
    } catch (const fsq::Error& e) {
      fail("open accepted " + l.name + " but using it threw: " + e.what());
    }
  }
  for (const fsq::TensorView* t : ckpt.dense_tensors()) {
    if (t->nbytes > 0) {
      // Reads the first and last byte: ASan flags a view outside the mapping.
      volatile std::byte first = t->data[0], last = t->data[t->nbytes - 1];
      (void)first;
      (void)last;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Scratch& s = scratch();
  const fs::path weights = s.dir / fsq::kPackedWeightsFile;
  write_file(weights, data, size);
  try {
    // Only for the tensor names; open() reads the same bytes again the same way.
    write_manifest(s, *fsq::SafetensorsFile::open(weights));
    const fsq::PackedCheckpoint ckpt = fsq::PackedCheckpoint::open(s.dir, {.verify_sha256 = false});
    use(ckpt);
  } catch (const fsq::Error& e) {
    if (!one_line(e)) fail(std::string("multi-line error: ") + e.what());
  }
  return 0;
}
