// safetensors writer. Output follows what the reference implementation writes (tensors
// sorted by name, header padded with spaces so the data section starts 8-byte aligned),
// and the input is checked first so we never write a file our own reader would reject.
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/safetensors.h"

namespace fsq {
namespace {

using json = nlohmann::json;

// A name for an error message: JSON-escaped (one line, invalid UTF-8 replaced).
std::string json_quoted(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

bool valid_utf8(const std::string& s) {
  try {
    (void)json(s).dump();
    return true;
  } catch (const json::type_error&) {
    return false;
  }
}

// shape x dtype in bytes; throws when a dimension is negative or the size overflows.
uint64_t needed_bytes(const TensorLayout& t, const std::string& where) {
  const std::string what = "tensor " + json_quoted(t.name);
  for (int64_t d : t.shape)
    if (d < 0) throw Error(where, what + ": shape " + shape_text(t.shape) + " has a negative dimension");
  if (std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end()) return 0;
  uint64_t n = 1;
  constexpr auto kMaxNumel = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (int64_t d : t.shape) {
    if (n > kMaxNumel / static_cast<uint64_t>(d))
      throw Error(where, what + ": shape " + shape_text(t.shape) + " overflows 64 bits");
    n *= static_cast<uint64_t>(d);
  }
  const size_t elem = dtype_size(t.dtype);
  if (n > std::numeric_limits<uint64_t>::max() / elem)
    throw Error(where, what + ": shape " + shape_text(t.shape) + " overflows 64 bits");
  return n * elem;
}

}  // namespace

std::string safetensors_header(const std::vector<TensorLayout>& sorted,
                               const std::map<std::string, std::string>& metadata, const std::string& where,
                               size_t header_bytes) {
  json header = json::object();
  if (!metadata.empty()) {
    json meta = json::object();
    for (const auto& [k, v] : metadata) {
      if (!valid_utf8(k) || !valid_utf8(v))
        throw Error(where, "metadata entry " + json_quoted(k) + " is not valid UTF-8");
      meta[k] = v;
    }
    header["__metadata__"] = std::move(meta);
  }

  uint64_t offset = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const TensorLayout& t = sorted[i];
    const std::string what = "tensor " + json_quoted(t.name);
    if (t.name.empty()) throw Error(where, "a tensor has an empty name");
    if (t.name == "__metadata__") throw Error(where, "\"__metadata__\" is reserved, not a tensor name");
    if (!valid_utf8(t.name)) throw Error(where, what + ": name is not valid UTF-8");
    if (i > 0 && sorted[i - 1].name == t.name) throw Error(where, what + " is given twice");
    if (i > 0 && sorted[i - 1].name > t.name) throw Error(where, what + " is out of name order");
    const uint64_t need = needed_bytes(t, where);
    if (t.nbytes != need)
      throw Error(where, what + ": data is " + std::to_string(t.nbytes) + " bytes but shape " +
                             shape_text(t.shape) + " x " + std::string(dtype_name(t.dtype)) +
                             " needs " + std::to_string(need));
    if (need > std::numeric_limits<uint64_t>::max() - offset)
      throw Error(where, "total tensor data overflows 64 bits");
    header[t.name] = {{"dtype", std::string(dtype_name(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + need}}};
    offset += need;
  }

  std::string text = header.dump();
  // Pad so 8 + header length is a multiple of 8: the data section is then 8-byte aligned
  // in the file (and in any page-aligned mapping of it).
  text.append((8 - text.size() % 8) % 8, ' ');
  if (header_bytes > 0) {
    if (header_bytes % 8 != 0 || text.size() + 8 > header_bytes)
      throw Error(where, "the header needs " + std::to_string(text.size() + 8) + " bytes, " +
                             std::to_string(header_bytes) + " were reserved for it");
    text.append(header_bytes - 8 - text.size(), ' ');
  }

  std::string out(8, '\0');
  for (size_t i = 0; i < 8; ++i) out[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  return out + text;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<const TensorToWrite*> sorted;
  sorted.reserve(tensors.size());
  for (const auto& t : tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(),
            [](const TensorToWrite* a, const TensorToWrite* b) { return a->name < b->name; });
  std::vector<TensorLayout> layout;
  layout.reserve(sorted.size());
  for (const TensorToWrite* t : sorted) layout.push_back({t->name, t->dtype, t->shape, t->data.size()});
  const std::string header = safetensors_header(layout, metadata, path.string());

  AtomicFile out(path);
  out.write(header);
  for (const TensorToWrite* t : sorted) out.write(t->data);
  out.commit();
}

}  // namespace fsq
