#include "quantize/layer_store.h"

#include <cstdio>
#include <cstring>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/json_file.h"
#include "formats/safetensors.h"
#include "common/byte_view.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

std::string first_difference(const nlohmann::json& old_fp, const nlohmann::json& new_fp) {
  for (const auto& [key, value] : new_fp.items())
    if (!old_fp.contains(key) || old_fp[key] != value) return key;
  for (const auto& [key, value] : old_fp.items())
    if (!new_fp.contains(key)) return key;
  return "";
}

template <typename T>
std::vector<T> copy_out(const TensorView& v) {
  std::vector<T> out(v.nbytes / sizeof(T));
  std::memcpy(out.data(), v.data, v.nbytes);
  return out;
}

}  // namespace

LayerStore::LayerStore(const fs::path& out, const nlohmann::json& fingerprint, bool resume, std::string& message) {
  fs::path clean = out;
  if (!clean.has_filename()) clean = clean.parent_path();  // "out/" names the folder "out"
  dir_ = clean.parent_path() / (clean.filename().string() + ".partial");
  const fs::path fp_file = dir_ / "fingerprint.json";
  std::error_code ec;
  if (fs::exists(dir_, ec)) {
    std::string why;
    if (!resume) {
      why = "--no-resume";
    } else if (!fs::exists(fp_file, ec)) {
      why = "it has no fingerprint";
    } else {
      nlohmann::json old_fp;
      try {
        old_fp = read_json_file(fp_file);
      } catch (const Error&) {
        why = "its fingerprint is unreadable";
      }
      if (why.empty()) {
        const std::string diff = first_difference(old_fp, fingerprint);
        if (diff.empty()) {
          message = "resuming from " + dir_.string();
          return;
        }
        why = "the " + diff + " differs from the interrupted run's";
      }
    }
    message = "starting over: removing " + dir_.string() + " (" + why + ")";
    fs::remove_all(dir_);
  }
  fs::create_directories(dir_);
  write_file_atomic(fp_file, fingerprint.dump(2) + "\n");
}

fs::path LayerStore::file(int64_t layer) const {
  char name[64];
  std::snprintf(name, sizeof name, "layer_%05lld.safetensors", static_cast<long long>(layer));
  return dir_ / name;
}

bool LayerStore::has(int64_t layer) const {
  std::error_code ec;
  return fs::exists(file(layer), ec);
}

void LayerStore::save(int64_t layer, const StoredLayer& stored) const {
  std::vector<TensorToWrite> tensors;
  nlohmann::json linears = nlohmann::json::object();
  for (const auto& [role, m] : stored.linears) {
    linears[role] = {{"bits", m.quant.bits}, {"group_size", m.quant.group_size}, {"symmetric", m.quant.symmetric},
                     {"rows", m.rows}, {"cols", m.cols}};
    tensors.push_back({role + ".codes", DType::U8, {m.rows, m.cols}, bytes_of(m.codes)});
    tensors.push_back({role + ".scales", DType::F16, {m.rows, m.groups()}, bytes_of(m.scales)});
    if (!m.quant.symmetric) tensors.push_back({role + ".zeros", DType::U8, {m.rows, m.groups()}, bytes_of(m.zeros)});
  }
  nlohmann::json lut_linears = nlohmann::json::object();
  for (const auto& [role, m] : stored.lut_linears) {
    lut_linears[role] = {{"bits", m.bits}, {"rows", m.rows}, {"cols", m.cols}, {"sparse", m.has_sparse()}};
    tensors.push_back({role + ".codes", DType::U8, {m.rows, m.cols}, bytes_of(m.codes)});
    tensors.push_back({role + ".lut", DType::F16, {m.rows, m.levels()}, bytes_of(m.lut)});
    if (!m.has_sparse()) continue;
    tensors.push_back({role + ".row_ptr", DType::I32, {m.rows + 1}, bytes_of(m.row_ptr)});
    tensors.push_back({role + ".col", DType::I32, {m.nnz()}, bytes_of(m.col)});
    tensors.push_back({role + ".val", DType::F16, {m.nnz()}, bytes_of(m.val)});
  }
  for (const auto& [name, v] : stored.vectors)
    tensors.push_back({name, DType::F32, {static_cast<int64_t>(v.size())}, bytes_of(v)});
  write_safetensors(file(layer), tensors,
                    {{"linears", linears.dump()}, {"lut_linears", lut_linears.dump()}, {"report", stored.report.dump()}});
}

StoredLayer LayerStore::load(int64_t layer) const {
  auto f = SafetensorsFile::open(file(layer));
  const std::string where = file(layer).string();
  StoredLayer out;
  try {
    out.report = nlohmann::json::parse(f->metadata().at("report"));
    auto need = [&](const std::string& name) -> const TensorView& {
      const TensorView* v = f->find(name);
      if (v == nullptr) throw Error(where, "saved layer lacks tensor " + quote_name(name) + "; rerun with --no-resume");
      return *v;
    };
    const nlohmann::json lut_linears = nlohmann::json::parse(f->metadata().at("lut_linears"));
    for (const auto& [role, info] : lut_linears.items()) {
      LutMatrix m;
      m.bits = info.at("bits").get<int>();
      m.rows = info.at("rows").get<int64_t>();
      m.cols = info.at("cols").get<int64_t>();
      m.codes = copy_out<uint8_t>(need(role + ".codes"));
      m.lut = copy_out<uint16_t>(need(role + ".lut"));
      if (info.at("sparse").get<bool>()) {
        m.row_ptr = copy_out<int32_t>(need(role + ".row_ptr"));
        m.col = copy_out<int32_t>(need(role + ".col"));
        m.val = copy_out<uint16_t>(need(role + ".val"));
      }
      validate_lut_matrix(m, where);
      out.lut_linears.emplace(role, std::move(m));
    }
    const nlohmann::json linears = nlohmann::json::parse(f->metadata().at("linears"));
    for (const auto& [role, info] : linears.items()) {
      QuantizedMatrix m;
      m.quant = UniformQuant{info.at("bits").get<int>(), info.at("group_size").get<int64_t>(),
                             info.at("symmetric").get<bool>()};
      m.rows = info.at("rows").get<int64_t>();
      m.cols = info.at("cols").get<int64_t>();
      m.codes = copy_out<uint8_t>(need(role + ".codes"));
      m.scales = copy_out<uint16_t>(need(role + ".scales"));
      if (!m.quant.symmetric) m.zeros = copy_out<uint8_t>(need(role + ".zeros"));
      validate_quantized_matrix(m, where);
      out.linears.emplace(role, std::move(m));
    }
  } catch (const nlohmann::json::exception&) {
    throw Error(where, "saved layer metadata is malformed; rerun with --no-resume");
  } catch (const std::out_of_range&) {
    throw Error(where, "saved layer metadata is incomplete; rerun with --no-resume");
  }
  for (const TensorView& v : f->tensors())
    if (v.dtype == DType::F32) out.vectors[v.name] = copy_out<float>(v);
  return out;
}

void LayerStore::remove() const { fs::remove_all(dir_); }

}  // namespace fsq
