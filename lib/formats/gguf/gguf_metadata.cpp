// GGUF metadata access: value-type table, array element conversions, and the typed
// getters of GgufFile (missing key / wrong type errors name the file and the key).
#include <bit>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "common/error.h"
#include "formats/gguf/gguf_reader.h"

namespace fsq {

static_assert(std::endian::native == std::endian::little, "GGUF numbers are read as host-endian");

namespace {

// A number reduced to the kind that decides which conversions are allowed.
struct Num {
  enum Kind { Signed, Unsigned, Float, Bool, None } kind = None;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
};

template <typename T>
Num num_from(T x) {
  Num n;
  if constexpr (std::is_same_v<T, bool>) {
    n.kind = Num::Bool;
    n.u = x ? 1 : 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    n.kind = Num::Float;
    n.f = x;
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    n.kind = Num::Signed;
    n.i = x;
  } else if constexpr (std::is_integral_v<T>) {
    n.kind = Num::Unsigned;
    n.u = x;
  }
  return n;
}

Num num_of(const GgufValue& v) {
  return std::visit([](const auto& x) -> Num { return num_from(x); }, v.v);
}

template <typename T>
Num load(const std::byte* p) {
  T x;
  std::memcpy(&x, p, sizeof x);
  return num_from(x);
}

Num num_of_raw(GgufType t, const std::byte* p) {
  switch (t) {
    case GgufType::UINT8: return load<uint8_t>(p);
    case GgufType::INT8: return load<int8_t>(p);
    case GgufType::UINT16: return load<uint16_t>(p);
    case GgufType::INT16: return load<int16_t>(p);
    case GgufType::UINT32: return load<uint32_t>(p);
    case GgufType::INT32: return load<int32_t>(p);
    case GgufType::FLOAT32: return load<float>(p);
    case GgufType::BOOL: return num_from(static_cast<uint8_t>(*p) != 0);
    case GgufType::UINT64: return load<uint64_t>(p);
    case GgufType::INT64: return load<int64_t>(p);
    case GgufType::FLOAT64: return load<double>(p);
    default: return {};
  }
}

std::optional<int64_t> num_i64(const Num& n) {
  if (n.kind == Num::Signed) return n.i;
  if (n.kind == Num::Unsigned && n.u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return static_cast<int64_t>(n.u);
  return std::nullopt;
}

std::optional<uint64_t> num_u64(const Num& n) {
  if (n.kind == Num::Unsigned) return n.u;
  if (n.kind == Num::Signed && n.i >= 0) return static_cast<uint64_t>(n.i);
  return std::nullopt;
}

std::optional<double> num_f64(const Num& n) {
  switch (n.kind) {
    case Num::Signed: return static_cast<double>(n.i);
    case Num::Unsigned: return static_cast<double>(n.u);
    case Num::Float: return n.f;
    default: return std::nullopt;
  }
}

std::string num_text(const Num& n) {
  switch (n.kind) {
    case Num::Signed: return std::to_string(n.i);
    case Num::Unsigned: return std::to_string(n.u);
    case Num::Float: return std::to_string(n.f);
    case Num::Bool: return n.u ? "true" : "false";
    default: return "?";
  }
}

// The conversion failed: either the type is not numeric at all or the value is out of range.
[[noreturn]] void bad_number(const std::string& where, GgufType t, const Num& n, const char* want) {
  if (n.kind == Num::None || n.kind == Num::Bool || n.kind == Num::Float)
    throw Error(where, std::string("has type ") + std::string(gguf_type_name(t)) + ", expected " + want);
  throw Error(where, "value " + num_text(n) + " does not fit " + want);
}

const char* kTypeNames[] = {"UINT8", "INT8",  "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
                            "BOOL",  "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64"};

std::string quote(const std::string& key) {
  std::string out = "'";
  for (size_t i = 0; i < key.size() && i < 200; ++i) {
    auto c = static_cast<unsigned char>(key[i]);
    out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
  }
  return out + (key.size() > 200 ? "...'" : "'");
}

}  // namespace

std::string_view gguf_type_name(GgufType t) {
  auto i = static_cast<uint32_t>(t);
  return i < std::size(kTypeNames) ? kTypeNames[i] : "unknown";
}

size_t gguf_scalar_size(GgufType t) {
  switch (t) {
    case GgufType::UINT8: case GgufType::INT8: case GgufType::BOOL: return 1;
    case GgufType::UINT16: case GgufType::INT16: return 2;
    case GgufType::UINT32: case GgufType::INT32: case GgufType::FLOAT32: return 4;
    case GgufType::UINT64: case GgufType::INT64: case GgufType::FLOAT64: return 8;
    default: return 0;
  }
}

// --- GgufArray ----------------------------------------------------------------------

void GgufArray::check(size_t i) const {
  if (i >= size_)
    throw Error("GGUF array", "index " + std::to_string(i) + " out of range (size " + std::to_string(size_) + ")");
}

namespace {
std::string element_where(size_t i) { return "GGUF array element " + std::to_string(i); }
}  // namespace

int64_t GgufArray::get_i64(size_t i) const {
  check(i);
  Num n = num_of_raw(type_, raw_.data() + i * gguf_scalar_size(type_));
  if (auto v = num_i64(n)) return *v;
  bad_number(element_where(i), type_, n, "i64");
}

uint64_t GgufArray::get_u64(size_t i) const {
  check(i);
  Num n = num_of_raw(type_, raw_.data() + i * gguf_scalar_size(type_));
  if (auto v = num_u64(n)) return *v;
  bad_number(element_where(i), type_, n, "u64");
}

double GgufArray::get_f64(size_t i) const {
  check(i);
  Num n = num_of_raw(type_, raw_.data() + i * gguf_scalar_size(type_));
  if (auto v = num_f64(n)) return *v;
  bad_number(element_where(i), type_, n, "f64");
}

bool GgufArray::get_bool(size_t i) const {
  check(i);
  if (type_ != GgufType::BOOL) bad_number(element_where(i), type_, Num{}, "BOOL");
  return static_cast<uint8_t>(raw_[i]) != 0;
}

const std::string& GgufArray::get_string(size_t i) const {
  check(i);
  if (type_ != GgufType::STRING) bad_number(element_where(i), type_, Num{}, "STRING");
  return strings_[i];
}

const GgufArray& GgufArray::get_array(size_t i) const {
  check(i);
  if (type_ != GgufType::ARRAY) bad_number(element_where(i), type_, Num{}, "ARRAY");
  return arrays_[i];
}

const std::vector<std::string>& GgufArray::strings() const {
  if (type_ != GgufType::STRING) bad_number("GGUF array", type_, Num{}, "STRING elements");
  return strings_;
}

std::vector<int64_t> GgufArray::to_i64() const {
  std::vector<int64_t> out(size_);
  for (size_t i = 0; i < size_; ++i) out[i] = get_i64(i);
  return out;
}

std::vector<double> GgufArray::to_f64() const {
  std::vector<double> out(size_);
  for (size_t i = 0; i < size_; ++i) out[i] = get_f64(i);
  return out;
}

// --- GgufFile getters ---------------------------------------------------------------

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufValue& GgufFile::require(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) throw Error(name_, "missing key " + quote(key));
  return *v;
}

void GgufFile::wrong_type(const std::string& key, const GgufValue& v, const char* want) const {
  throw Error(name_, "key " + quote(key) + " has type " + std::string(gguf_type_name(v.type())) + ", expected " + want);
}

const std::string& GgufFile::get_string(const std::string& key) const {
  const GgufValue& v = require(key);
  if (const auto* s = std::get_if<std::string>(&v.v)) return *s;
  wrong_type(key, v, "STRING");
}

uint64_t GgufFile::get_u64(const std::string& key) const {
  const GgufValue& v = require(key);
  Num n = num_of(v);
  if (auto x = num_u64(n)) return *x;
  if (n.kind == Num::Signed) throw Error(name_, "key " + quote(key) + " is negative (" + num_text(n) + ")");
  wrong_type(key, v, "an unsigned integer");
}

int64_t GgufFile::get_i64(const std::string& key) const {
  const GgufValue& v = require(key);
  Num n = num_of(v);
  if (auto x = num_i64(n)) return *x;
  if (n.kind == Num::Unsigned) throw Error(name_, "key " + quote(key) + " value " + num_text(n) + " does not fit i64");
  wrong_type(key, v, "an integer");
}

double GgufFile::get_f64(const std::string& key) const {
  const GgufValue& v = require(key);
  if (auto x = num_f64(num_of(v))) return *x;
  wrong_type(key, v, "a number");
}

bool GgufFile::get_bool(const std::string& key) const {
  const GgufValue& v = require(key);
  if (const auto* b = std::get_if<bool>(&v.v)) return *b;
  wrong_type(key, v, "BOOL");
}

const GgufArray& GgufFile::get_array(const std::string& key) const {
  const GgufValue& v = require(key);
  if (const auto* a = std::get_if<GgufArray>(&v.v)) return *a;
  wrong_type(key, v, "ARRAY");
}

const std::vector<std::string>& GgufFile::get_strings(const std::string& key) const {
  const GgufArray& a = get_array(key);
  if (a.type() != GgufType::STRING)
    throw Error(name_, "key " + quote(key) + " is an array of " + std::string(gguf_type_name(a.type())) +
                           ", expected an array of STRING");
  return a.strings();
}

std::vector<int64_t> GgufFile::get_i64s(const std::string& key) const {
  const GgufArray& a = get_array(key);
  try {
    return a.to_i64();
  } catch (const Error& e) {
    throw Error(name_, "key " + quote(key) + ": " + e.what());
  }
}

std::vector<double> GgufFile::get_f64s(const std::string& key) const {
  const GgufArray& a = get_array(key);
  try {
    return a.to_f64();
  } catch (const Error& e) {
    throw Error(name_, "key " + quote(key) + ": " + e.what());
  }
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace fsq
