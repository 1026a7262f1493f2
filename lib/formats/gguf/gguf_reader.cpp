// GGUF parser. Layout (all little-endian):
//   "GGUF" u32 version, u64 tensor_count, u64 kv_count,
//   kv_count x {string key, u32 value type, value},
//   tensor_count x {string name, u32 n_dims, u64 dims[n_dims], u32 ggml type, u64 offset},
//   padding to `general.alignment` (default 32), then the data section.
// A string is u64 length + bytes; an array is u32 element type, u64 count, elements.
// Every count is checked against the bytes left before anything is allocated from it.
#include "formats/gguf/gguf_reader.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "common/error.h"

namespace fsq {
namespace {

constexpr uint32_t kMinVersion = 2;  // v1 used 32-bit counts; llama.cpp no longer reads it
constexpr uint32_t kMaxVersion = 3;
constexpr int kMaxArrayDepth = 8;    // real files nest at most once; bounds the recursion
constexpr size_t kMinKvBytes = 8 + 4 + 1;          // empty key, type, 1-byte value
constexpr size_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // empty name, n_dims 0, type, offset
constexpr size_t kMinArrayBytes = 4 + 8;           // element type + count
// In-memory entries are several times their smallest encoding, so reserve no more than
// this up front; a hostile count then costs memory only as entries actually parse.
constexpr uint64_t kMaxReserve = 4096;


// Bounds-checked little-endian reads over the file bytes.
class Cursor {
 public:
  Cursor(const std::string& name, std::span<const std::byte> bytes) : name_(name), bytes_(bytes) {}

  size_t pos() const { return pos_; }
  size_t left() const { return bytes_.size() - pos_; }

  const std::byte* take(size_t n, const char* what) {
    if (n > left())
      throw Error(name_, std::string("truncated while reading ") + what + " at offset " + std::to_string(pos_) +
                             " (" + std::to_string(n) + " bytes needed, " + std::to_string(left()) + " left)");
    const std::byte* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }

  template <typename T>
  T read(const char* what) {
    T x;
    std::memcpy(&x, take(sizeof x, what), sizeof x);
    return x;
  }

  std::string string(const char* what) {
    size_t at = pos_;
    auto len = read<uint64_t>(what);
    if (len > left())
      throw Error(name_, std::string(what) + " length " + std::to_string(len) + " at offset " + std::to_string(at) +
                             " exceeds the file (" + std::to_string(left()) + " bytes left)");
    const std::byte* p = take(static_cast<size_t>(len), what);
    return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
  }

 private:
  const std::string& name_;
  std::span<const std::byte> bytes_;
  size_t pos_ = 0;
};

template <typename T>
GgufValue val(T x) {
  GgufValue g;
  g.v.emplace<T>(std::move(x));
  return g;
}

class Parser {
 public:
  Parser(const std::string& name, std::span<const std::byte> bytes) : name_(name), in_(name, bytes) {}

  GgufValue value(GgufType t, const std::string& key, int depth) {
    switch (t) {
      case GgufType::UINT8: return val<uint8_t>(in_.read<uint8_t>("a value"));
      case GgufType::INT8: return val<int8_t>(in_.read<int8_t>("a value"));
      case GgufType::UINT16: return val<uint16_t>(in_.read<uint16_t>("a value"));
      case GgufType::INT16: return val<int16_t>(in_.read<int16_t>("a value"));
      case GgufType::UINT32: return val<uint32_t>(in_.read<uint32_t>("a value"));
      case GgufType::INT32: return val<int32_t>(in_.read<int32_t>("a value"));
      case GgufType::FLOAT32: return val<float>(in_.read<float>("a value"));
      case GgufType::BOOL: return val<bool>(boolean(in_.read<uint8_t>("a value"), key));
      case GgufType::STRING: return val<std::string>(in_.string("string"));
      case GgufType::ARRAY: return val<GgufArray>(array(key, depth + 1));
      case GgufType::UINT64: return val<uint64_t>(in_.read<uint64_t>("a value"));
      case GgufType::INT64: return val<int64_t>(in_.read<int64_t>("a value"));
      case GgufType::FLOAT64: return val<double>(in_.read<double>("a value"));
    }
    throw Error(name_, "key " + quote_name(key) + ": unknown value type " + std::to_string(static_cast<uint32_t>(t)));
  }

  // `unknown` starts the message when the id is not a GgufType.
  GgufType value_type(const std::string& key, const char* unknown) {
    auto t = in_.read<uint32_t>("a value type");
    if (t > static_cast<uint32_t>(GgufType::FLOAT64))
      throw Error(name_, "key " + quote_name(key) + ": " + unknown + " " + std::to_string(t));
    return static_cast<GgufType>(t);
  }

  Cursor& in() { return in_; }

 private:
  bool boolean(uint8_t b, const std::string& key) {
    if (b > 1) throw Error(name_, "key " + quote_name(key) + ": BOOL value " + std::to_string(b) + " is not 0 or 1");
    return b == 1;
  }

  GgufArray array(const std::string& key, int depth) {
    if (depth > kMaxArrayDepth)
      throw Error(name_, "key " + quote_name(key) + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth));
    GgufType t = value_type(key, "array of unknown element type");
    auto count = in_.read<uint64_t>("an array length");
    size_t elem = gguf_scalar_size(t);
    size_t min_elem = elem ? elem : (t == GgufType::STRING ? 8 : kMinArrayBytes);
    if (count > in_.left() / min_elem)
      throw Error(name_, "key " + quote_name(key) + ": array length " + std::to_string(count) + " exceeds the file (" +
                             std::to_string(in_.left()) + " bytes left)");
    auto n = static_cast<size_t>(count);
    std::vector<std::byte> raw;
    std::vector<std::string> strings;
    std::vector<GgufArray> arrays;
    if (elem != 0) {
      const std::byte* p = in_.take(n * elem, "array elements");
      raw.assign(p, p + n * elem);
      if (t == GgufType::BOOL)
        for (std::byte b : raw) boolean(static_cast<uint8_t>(b), key);
    } else if (t == GgufType::STRING) {
      strings.reserve(std::min<size_t>(n, kMaxReserve));
      for (size_t i = 0; i < n; ++i) strings.push_back(in_.string("string"));
    } else {
      arrays.reserve(std::min<size_t>(n, kMaxReserve));
      for (size_t i = 0; i < n; ++i) arrays.push_back(array(key, depth + 1));
    }
    return GgufArray(t, n, std::move(raw), std::move(strings), std::move(arrays));
  }

  const std::string& name_;
  Cursor in_;
};

}  // namespace

GgufFile::GgufFile(std::string name, std::variant<MappedFile, std::vector<std::byte>> storage)
    : name_(std::move(name)), storage_(std::move(storage)) {
  if (const auto* m = std::get_if<MappedFile>(&storage_))
    bytes_ = m->bytes();
  else
    bytes_ = std::get<std::vector<std::byte>>(storage_);
  parse();
}

std::shared_ptr<const GgufFile> GgufFile::open(const std::filesystem::path& path) {
  return std::make_shared<const GgufFile>(path.string(), MappedFile(path));
}

std::shared_ptr<const GgufFile> GgufFile::open_bytes(const std::string& name, std::span<const std::byte> bytes) {
  return std::make_shared<const GgufFile>(name, std::vector<std::byte>(bytes.begin(), bytes.end()));
}

void GgufFile::parse() {
  Parser p(name_, bytes_);
  Cursor& in = p.in();
  if (bytes_.size() < 4 || std::memcmp(bytes_.data(), "GGUF", 4) != 0)
    throw Error(name_, "not a GGUF file (the first 4 bytes are not \"GGUF\")");
  in.take(4, "the magic");
  version_ = in.read<uint32_t>("the version");
  if (version_ < kMinVersion || version_ > kMaxVersion) {
    std::string hint = (version_ & 0xffff) == 0 && version_ != 0 ? "; a big-endian file?" : "";
    throw Error(name_, "unsupported GGUF version " + std::to_string(version_) + " (supported: 2, 3" + hint + ")");
  }
  auto n_tensors = in.read<uint64_t>("the tensor count");
  auto n_kv = in.read<uint64_t>("the metadata count");
  if (n_tensors > in.left() / kMinTensorInfoBytes)
    throw Error(name_, "tensor count " + std::to_string(n_tensors) + " exceeds what the file can hold (" +
                           std::to_string(in.left()) + " bytes left)");
  if (n_kv > in.left() / kMinKvBytes)
    throw Error(name_, "metadata count " + std::to_string(n_kv) + " exceeds what the file can hold (" +
                           std::to_string(in.left()) + " bytes left)");

  metadata_.reserve(static_cast<size_t>(std::min(n_kv, kMaxReserve)));
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = in.string("metadata key");
    GgufType t = p.value_type(key, "unknown value type");
    GgufValue v = p.value(t, key, 0);
    if (!key_index_.emplace(key, metadata_.size()).second)
      throw Error(name_, "duplicate metadata key " + quote_name(key));
    metadata_.emplace_back(std::move(key), std::move(v));
  }

  if (const GgufValue* a = find("general.alignment")) {
    const auto* v = std::get_if<uint32_t>(&a->v);
    if (v == nullptr) wrong_type("general.alignment", *a, "UINT32");
    if (*v == 0 || (*v & (*v - 1)) != 0)
      throw Error(name_, "general.alignment " + std::to_string(*v) + " is not a power of two");
    alignment_ = *v;
  }

  if (n_tensors > in.left() / kMinTensorInfoBytes)
    throw Error(name_, "tensor count " + std::to_string(n_tensors) + " exceeds what the file can hold (" +
                           std::to_string(in.left()) + " bytes left after the metadata)");
  tensors_.reserve(static_cast<size_t>(std::min(n_tensors, kMaxReserve)));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    t.name = in.string("tensor name");
    const std::string where = "tensor " + quote_name(t.name);
    auto n_dims = in.read<uint32_t>("n_dims");
    if (n_dims > kMaxDims)
      throw Error(name_, where + ": " + std::to_string(n_dims) + " dimensions (at most " + std::to_string(kMaxDims) + ")");
    t.n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      auto ne = in.read<uint64_t>("a dimension");
      if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw Error(name_, where + ": dimension " + std::to_string(d) + " is " + std::to_string(ne) + ", out of range");
      t.dims.push_back(static_cast<int64_t>(ne));
      if (ne != 0 && t.n_elements > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(ne))
        throw Error(name_, where + ": element count overflows int64 (dimension overflow)");
      t.n_elements *= static_cast<int64_t>(ne);
    }
    auto type_id = in.read<uint32_t>("a tensor type");
    const GgmlTypeInfo* info = find_ggml_type(type_id);
    if (info == nullptr) throw Error(name_, where + ": unknown ggml type " + std::to_string(type_id));
    t.type = info->type;
    if (info->block_size > 1 && (t.dims.empty() || t.dims[0] % info->block_size != 0))
      throw Error(name_, where + ": shape not matching the block size: first dimension " +
                             (t.dims.empty() ? std::string("(none)") : std::to_string(t.dims[0])) +
                             " is not a multiple of " + std::to_string(info->block_size) + " (" +
                             std::string(info->name) + ")");
    auto nbytes = ggml_nbytes(t.type, t.n_elements);
    if (!nbytes || *nbytes > std::numeric_limits<size_t>::max())
      throw Error(name_, where + ": byte size overflows");
    t.nbytes = static_cast<size_t>(*nbytes);
    t.offset = in.read<uint64_t>("a tensor offset");
    if (t.offset % alignment_ != 0)
      throw Error(name_, where + ": misaligned offset " + std::to_string(t.offset) + " (alignment " +
                             std::to_string(alignment_) + ")");
    if (!tensor_index_.emplace(t.name, tensors_.size()).second)
      throw Error(name_, "duplicate tensor name " + quote_name(t.name));
    tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment after the infos.
  uint64_t pos = in.pos();
  data_offset_ = (pos + alignment_ - 1) / alignment_ * alignment_;
  const uint64_t size = bytes_.size();
  const uint64_t data_size = data_offset_ <= size ? size - data_offset_ : 0;
  for (auto& t : tensors_) {
    const std::string where = "tensor " + quote_name(t.name);
    if (data_offset_ > size)
      throw Error(name_, "truncated: the data section starts at " + std::to_string(data_offset_) +
                             ", past the end of the file (" + std::to_string(size) + " bytes)");
    if (t.offset > data_size)
      throw Error(name_, where + ": offset " + std::to_string(t.offset) + " is beyond the end of the file (data section of " +
                             std::to_string(data_size) + " bytes)");
    if (t.nbytes > data_size - t.offset)
      throw Error(name_, where + ": truncated data (" + std::to_string(t.nbytes) + " bytes at offset " +
                             std::to_string(t.offset) + ", data section holds " + std::to_string(data_size) + ")");
    t.data = bytes_.data() + data_offset_ + t.offset;
  }

  // Tensors may leave gaps (padding) but never share bytes.
  std::vector<const GgufTensorInfo*> by_offset;
  by_offset.reserve(tensors_.size());
  for (const auto& t : tensors_) by_offset.push_back(&t);
  std::stable_sort(by_offset.begin(), by_offset.end(),
            [](const auto* a, const auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const auto* a = by_offset[i - 1];
    const auto* b = by_offset[i];
    if (a->offset + a->nbytes > b->offset)
      throw Error(name_, "tensors " + quote_name(a->name) + " and " + quote_name(b->name) + " overlap");
  }
}

}  // namespace fsq
