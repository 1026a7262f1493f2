// Layout (GGUF v3, little-endian; this writer assumes a little-endian host, as x86-64 and
// arm64 are): magic, version, tensor count, key count, the keys, the tensor infos, padding
// to the alignment, then each tensor's data at an aligned offset.
#include "formats/gguf/gguf_writer.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "common/atomic_file.h"
#include "common/error.h"

namespace fsq {
namespace {

template <typename T>
void put(std::string& out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

void put_array_body(std::string& out, const GgufArray& a) {
  put<uint32_t>(out, static_cast<uint32_t>(a.type()));
  put<uint64_t>(out, a.size());
  if (a.type() == GgufType::STRING) {
    for (const std::string& s : a.strings()) put_string(out, s);
  } else if (a.type() == GgufType::ARRAY) {
    for (const GgufArray& inner : a.arrays()) put_array_body(out, inner);
  } else {
    auto raw = a.raw();
    out.append(reinterpret_cast<const char*>(raw.data()), raw.size());
  }
}

void put_value(std::string& out, const GgufValue& v) {
  put<uint32_t>(out, static_cast<uint32_t>(v.type()));
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          put_string(out, x);
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          put_array_body(out, x);
        } else if constexpr (std::is_same_v<T, bool>) {
          put<uint8_t>(out, x ? 1 : 0);
        } else {
          put<T>(out, x);
        }
      },
      v.v);
}

void pad_to(std::string& out, uint64_t alignment) {
  out.append((alignment - out.size() % alignment) % alignment, '\0');
}

}  // namespace

void GgufWriter::set(const std::string& key, GgufValue value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

void GgufWriter::erase(const std::string& key) {
  std::erase_if(metadata_, [&](const auto& kv) { return kv.first == key; });
}

const GgufValue* GgufWriter::find(const std::string& key) const {
  for (const auto& [k, v] : metadata_)
    if (k == key) return &v;
  return nullptr;
}

void GgufWriter::add_tensor(GgufTensorDecl decl) {
  for (const auto& t : tensors_)
    if (t.name == decl.name) throw Error("gguf writer", "tensor '" + decl.name + "' is added twice");
  if (decl.dims.empty() || decl.dims.size() > GgufFile::kMaxDims)
    throw Error("gguf writer", "tensor '" + decl.name + "' needs 1 to 4 dimensions");
  int64_t n = 1;
  for (int64_t d : decl.dims) {
    if (d <= 0) throw Error("gguf writer", "tensor '" + decl.name + "' has a non-positive dimension");
    n *= d;
  }
  if (!ggml_nbytes(decl.type, n) || decl.dims[0] % ggml_type_info(decl.type).block_size != 0)
    throw Error("gguf writer", "tensor '" + decl.name + "': rows of " + std::to_string(decl.dims[0]) +
                                   " elements are not whole " + std::string(ggml_type_name(decl.type)) + " blocks");
  tensors_.push_back(std::move(decl));
}

size_t GgufWriter::tensor_bytes(size_t i) const {
  const auto& t = tensors_.at(i);
  int64_t n = 1;
  for (int64_t d : t.dims) n *= d;
  return static_cast<size_t>(*ggml_nbytes(t.type, n));
}

uint64_t GgufWriter::alignment() const {
  const GgufValue* a = find("general.alignment");
  if (a == nullptr) return GgufFile::kDefaultAlignment;
  const auto* v = std::get_if<uint32_t>(&a->v);
  if (v == nullptr || *v == 0 || (*v & (*v - 1)) != 0)
    throw Error("gguf writer", "general.alignment must be a UINT32 power of two");
  return *v;
}

void GgufWriter::write(const std::filesystem::path& path, const FillTensor& fill) const {
  const uint64_t align = alignment();
  std::string header = "GGUF";
  put<uint32_t>(header, 3);
  put<uint64_t>(header, tensors_.size());
  put<uint64_t>(header, metadata_.size());
  for (const auto& [key, value] : metadata_) {
    put_string(header, key);
    put_value(header, value);
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    put_string(header, t.name);
    put<uint32_t>(header, static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) put<uint64_t>(header, static_cast<uint64_t>(d));
    put<uint32_t>(header, static_cast<uint32_t>(t.type));
    put<uint64_t>(header, offset);
    offset += tensor_bytes(i);
    offset += (align - offset % align) % align;
  }
  pad_to(header, align);

  AtomicFile out(path);
  out.write(header);
  std::vector<std::byte> buffer;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const size_t n = tensor_bytes(i);
    buffer.assign(n + (align - n % align) % align, std::byte{0});
    fill(i, std::span<std::byte>(buffer.data(), n));
    out.write(std::span<const std::byte>(buffer));
  }
  out.commit();
}

}  // namespace fsq
