#include "calib/dataset.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <sstream>

#include "common/error.h"
#include "common/sha256.h"
#include "common/text_file.h"
#include "formats/tokenizer.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

bool has_extension(const fs::path& p, const char* ext) { return p.extension() == ext; }

void read_jsonl(const fs::path& path, const std::string& content, CalibrationText& out) {
  std::istringstream lines(content);
  std::string line;
  int64_t line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path.string() + ":" + std::to_string(line_no);
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      throw Error(where, "not a JSON object (each line of a .jsonl must be one object with a \"text\" field)");
    }
    if (!record.is_object() || !record.contains("text") || !record["text"].is_string())
      throw Error(where, "needs a string field \"text\"");
    std::string text = record["text"].get<std::string>();
    if (!text.empty()) out.documents.push_back(std::move(text));
  }
}

}  // namespace

CalibrationText read_calibration_text(const fs::path& source) {
  CalibrationText out;
  out.source = source;
  std::error_code ec;
  if (fs::is_directory(source, ec)) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(source))
      if (entry.is_regular_file() && has_extension(entry.path(), ".txt")) files.push_back(entry.path());
    if (files.empty()) throw Error(source.string(), "folder holds no .txt files to calibrate on");
    std::sort(files.begin(), files.end());
    std::string listing;
    for (const auto& f : files) {
      std::string text = read_text_file(f, EmptyText::Allow);
      out.bytes += static_cast<int64_t>(text.size());
      listing += f.filename().string() + " " + sha256_hex(text) + "\n";
      if (!text.empty()) out.documents.push_back(std::move(text));
    }
    out.sha256 = sha256_hex(listing);
  } else {
    if (!fs::exists(source, ec)) throw Error(source.string(), "calibration data not found");
    std::string content = read_text_file(source, EmptyText::Allow);
    out.bytes = static_cast<int64_t>(content.size());
    out.sha256 = sha256_hex(content);
    if (has_extension(source, ".jsonl")) {
      read_jsonl(source, content, out);
    } else if (!content.empty()) {
      out.documents.push_back(std::move(content));
    }
  }
  if (out.documents.empty()) throw Error(source.string(), "no calibration text (the data is empty)");
  return out;
}

std::vector<int64_t> draw_window_starts(int64_t count, int64_t max_start, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const uint64_t range = static_cast<uint64_t>(max_start) + 1;
  // Largest multiple of `range` that fits: values at or above it are redrawn (no modulo bias).
  const uint64_t limit = range == 0 ? 0 : (UINT64_MAX / range) * range;
  std::vector<int64_t> starts;
  starts.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    uint64_t r = rng();
    while (r >= limit) r = rng();
    starts.push_back(static_cast<int64_t>(r % range));
  }
  return starts;
}

CalibrationSet make_calibration_set(const Tokenizer& tokenizer, const CalibrationText& text, const WindowDraw& draw) {
  const std::string where = text.source.string();
  if (draw.samples < 1) throw Error("--samples", "must be at least 1");
  if (draw.seq_len < 2) throw Error("--seq-len", "must be at least 2");
  CalibrationSet set;
  set.seq_len = draw.seq_len;
  set.seed = draw.seed;
  set.bos = tokenizer.add_bos() && tokenizer.bos_id() >= 0;

  std::vector<int32_t> stream;
  for (const auto& doc : text.documents) {
    std::vector<int32_t> ids = tokenizer.encode(doc);
    stream.insert(stream.end(), ids.begin(), ids.end());
  }
  set.stream_tokens = static_cast<int64_t>(stream.size());
  const int64_t span = set.bos ? draw.seq_len - 1 : draw.seq_len;  // stream tokens per window
  if (set.stream_tokens < span)
    throw Error(where, "too little text for one calibration window",
                ">= " + std::to_string(span) + " tokens (--seq-len " + std::to_string(draw.seq_len) + ")",
                std::to_string(set.stream_tokens) + " tokens");

  // samples x span > stream_tokens, without the product (it may overflow for a library caller).
  if (draw.samples > set.stream_tokens / span) {
    const std::string needed = draw.samples > INT64_MAX / span ? "more than 2^63"
                                                               : std::to_string(draw.samples * span);
    const std::string counts = "the text has " + std::to_string(set.stream_tokens) + " tokens but " +
                               std::to_string(draw.samples) + " windows of " + std::to_string(span) +
                               " text tokens need " + needed;
    if (!draw.allow_overlap)
      throw Error(where, "too little text for the calibration windows without overlap: " + counts +
                             "; use a shorter --seq-len, fewer --samples, more text, or --allow-overlap");
    set.overlap_note = where + ": " + counts + "; windows overlap (--allow-overlap)";
  }

  set.starts = draw_window_starts(draw.samples, set.stream_tokens - span, draw.seed);
  set.windows.reserve(set.starts.size());
  for (int64_t start : set.starts) {
    std::vector<int32_t> w;
    w.reserve(static_cast<size_t>(draw.seq_len));
    if (set.bos) w.push_back(tokenizer.bos_id());
    w.insert(w.end(), stream.begin() + start, stream.begin() + start + span);
    set.windows.push_back(std::move(w));
  }
  return set;
}

}  // namespace fsq
