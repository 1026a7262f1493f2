#include "spm_shim.h"

#include <sentencepiece_processor.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

struct fsq_spm {
  sentencepiece::SentencePieceProcessor sp;
};

namespace {

void set_error(char* err, size_t err_len, const std::string& msg) {
  if (err == nullptr || err_len == 0) return;
  size_t n = msg.size() < err_len - 1 ? msg.size() : err_len - 1;
  std::memcpy(err, msg.data(), n);
  err[n] = '\0';
}

}  // namespace

extern "C" {

fsq_spm* fsq_spm_load(const char* path, char* err, size_t err_len) {
  auto* spm = new fsq_spm();
  const auto status = spm->sp.Load(path);
  if (!status.ok()) {
    set_error(err, err_len, status.ToString());
    delete spm;
    return nullptr;
  }
  return spm;
}

fsq_spm* fsq_spm_load_bytes(const char* data, size_t len, char* err, size_t err_len) {
  auto* spm = new fsq_spm();
  const auto status = spm->sp.LoadFromSerializedProto(std::string_view(data, len));
  if (!status.ok()) {
    set_error(err, err_len, status.ToString());
    delete spm;
    return nullptr;
  }
  return spm;
}

void fsq_spm_free(fsq_spm* spm) { delete spm; }

int fsq_spm_encode(const fsq_spm* spm, const char* text, size_t len, int32_t** ids, size_t* n_ids, char* err,
                   size_t err_len) {
  std::vector<int> out;
  const auto status = spm->sp.Encode(std::string_view(text, len), &out);
  if (!status.ok()) {
    set_error(err, err_len, status.ToString());
    return 1;
  }
  *n_ids = out.size();
  *ids = static_cast<int32_t*>(std::malloc((out.empty() ? 1 : out.size()) * sizeof(int32_t)));
  if (*ids == nullptr) {
    set_error(err, err_len, "out of memory");
    return 1;
  }
  for (size_t i = 0; i < out.size(); ++i) (*ids)[i] = out[i];
  return 0;
}

int fsq_spm_decode(const fsq_spm* spm, const int32_t* ids, size_t n_ids, char** text, size_t* len, char* err,
                   size_t err_len) {
  const std::vector<int> in(ids, ids + n_ids);
  std::string out;
  const auto status = spm->sp.Decode(in, &out);
  if (!status.ok()) {
    set_error(err, err_len, status.ToString());
    return 1;
  }
  *len = out.size();
  *text = static_cast<char*>(std::malloc(out.size() + 1));
  if (*text == nullptr) {
    set_error(err, err_len, "out of memory");
    return 1;
  }
  std::memcpy(*text, out.data(), out.size());
  (*text)[out.size()] = '\0';
  return 0;
}

void fsq_spm_release(void* buffer) { std::free(buffer); }

int32_t fsq_spm_piece_size(const fsq_spm* spm) { return spm->sp.GetPieceSize(); }
int32_t fsq_spm_bos_id(const fsq_spm* spm) { return spm->sp.bos_id(); }
int32_t fsq_spm_eos_id(const fsq_spm* spm) { return spm->sp.eos_id(); }

int32_t fsq_spm_piece_to_id(const fsq_spm* spm, const char* piece, size_t len) {
  const std::string_view p(piece, len);
  const int id = spm->sp.PieceToId(p);
  // PieceToId answers unk_id for unknown pieces; only an exact piece counts.
  return id >= 0 && id < spm->sp.GetPieceSize() && spm->sp.IdToPiece(id) == p ? id : -1;
}

}  // extern "C"
