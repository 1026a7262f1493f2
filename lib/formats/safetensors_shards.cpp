#include "formats/safetensors_shards.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"
#include "formats/json_duplicate_keys.h"

namespace fsq {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// The index, refusing a key given twice: nlohmann would keep the last, so the index could
// map a tensor to one shard for fsq and to another for a different reader.
json read_index(const fs::path& index) {
  const std::string where = index.string();
  std::ifstream in(index, std::ios::binary);
  if (!in) throw Error(where, "cannot read file");
  std::ostringstream text;
  text << in.rdbuf();
  json j;
  try {
    j = json::parse(text.str());
  } catch (const json::exception& e) {
    throw Error(where, "not valid JSON: " + json_error_text(e));
  }
  if (auto duplicate = first_duplicate_key(text.str()))
    throw Error(where, "names " + json_quoted_ascii(*duplicate) + " twice");
  return j;
}

// weight_map of the index: tensor name -> shard file name (a plain name inside dir).
std::map<std::string, std::string> read_weight_map(const fs::path& index) {
  const std::string where = index.string();
  const json j = read_index(index);
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw Error(where, "expected an object with a \"weight_map\" object");
  std::map<std::string, std::string> map;
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string())
      throw Error(where, "weight_map entry " + json_quoted_ascii(name) + " must be a file name string");
    const auto& f = file.get_ref<const std::string&>();
    // Shards must sit beside the index; a path could point anywhere on the machine.
    if (f.empty() || f == "." || f == ".." || f.find('/') != std::string::npos)
      throw Error(where, "weight_map entry " + json_quoted_ascii(name) + " names " + json_quoted_ascii(f) +
                             ", which is not a plain file name");
    map[name] = f;
  }
  if (map.empty()) throw Error(where, "weight_map is empty");
  return map;
}

}  // namespace

SafetensorsShards SafetensorsShards::open(const fs::path& dir) {
  std::error_code ec;
  SafetensorsShards s;
  const fs::path single = dir / kSingleWeightsFile;
  const fs::path index = dir / kWeightsIndexFile;
  const std::string index_where = index.string();
  std::map<std::string, std::string> weight_map;
  if (fs::exists(single, ec)) {
    s.path_ = single;
    s.files_.push_back(SafetensorsFile::open(single));
  } else {
    if (!fs::exists(index, ec))
      throw Error(dir.string(), std::string("no weights: neither ") + kSingleWeightsFile + " nor " + kWeightsIndexFile);
    s.path_ = index;
    weight_map = read_weight_map(index);
    std::map<std::string, size_t> position;  // file name -> position in files_ (name order)
    for (const auto& [name, file] : weight_map) position.emplace(file, 0);
    for (auto& [file, pos] : position) {
      const fs::path p = dir / file;
      if (!fs::exists(p, ec))
        throw Error(index_where, "shard " + json_quoted_ascii(file) + " named in weight_map does not exist");
      pos = s.files_.size();
      s.files_.push_back(SafetensorsFile::open(p));
    }
  }

  for (size_t i = 0; i < s.files_.size(); ++i) {
    const SafetensorsFile& shard = *s.files_[i];
    const std::string file = shard.path().filename().string();
    for (const TensorView& t : shard.tensors()) {
      auto [it, fresh] = s.file_index_.emplace(t.name, i);
      if (!fresh)
        throw Error(index_where, "tensor " + json_quoted_ascii(t.name) + " is in two shards, " +
                                     json_quoted_ascii(s.files_[it->second]->path().filename().string()) + " and " +
                                     json_quoted_ascii(file));
      if (!weight_map.empty() && !weight_map.count(t.name))
        throw Error(index_where, "tensor " + json_quoted_ascii(t.name) + " in shard " + json_quoted_ascii(file) +
                                     " is not listed in weight_map");
      s.tensors_.push_back(&t);
    }
  }
  for (const auto& [name, file] : weight_map) {
    auto it = s.file_index_.find(name);
    if (it == s.file_index_.end() || s.files_[it->second]->path().filename() != file)
      throw Error(index_where, "tensor " + json_quoted_ascii(name) + " is mapped to shard " + json_quoted_ascii(file) +
                                   ", which does not contain it");
  }
  std::sort(s.tensors_.begin(), s.tensors_.end(),
            [](const TensorView* a, const TensorView* b) { return a->name < b->name; });
  return s;
}

const TensorView* SafetensorsShards::find(const std::string& name) const {
  auto it = file_index_.find(name);
  return it == file_index_.end() ? nullptr : files_[it->second]->find(name);
}

const fs::path& SafetensorsShards::file_of(const std::string& name) const {
  auto it = file_index_.find(name);
  return it == file_index_.end() ? path_ : files_[it->second]->path();
}

void SafetensorsShards::drop_resident_pages() const {
  for (const auto& f : files_) f->drop_resident_pages();
}

}  // namespace fsq
