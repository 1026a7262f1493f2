// Calibration samples: text from a file, a folder of .txt files or a .jsonl with a "text"
// field, tokenized once, and N windows of L tokens at positions drawn with a seeded RNG.
// The chosen positions are kept so a run can be reproduced and audited. No LibTorch here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace fsq {

class Tokenizer;

// The documents of a calibration source, in a fixed order (folder: file names sorted).
struct CalibrationText {
  std::filesystem::path source;
  std::vector<std::string> documents;
  std::string sha256;  // file: its sha256; folder: sha256 over "name sha256\n" lines
  int64_t bytes = 0;
};

// Throws fsq::Error naming the file: missing, unreadable, empty, a .jsonl line that is not
// an object with a string "text", a folder without .txt files.
CalibrationText read_calibration_text(const std::filesystem::path& source);

inline constexpr int64_t kDefaultCalibSamples = 128;  // AWQ's defaults
inline constexpr int64_t kDefaultCalibSeqLen = 512;
inline constexpr uint64_t kDefaultCalibSeed = 42;

struct WindowDraw {
  int64_t samples = kDefaultCalibSamples;
  int64_t seq_len = kDefaultCalibSeqLen;
  uint64_t seed = kDefaultCalibSeed;
  // Accept a text with fewer tokens than the windows need (--allow-overlap): see
  // make_calibration_set. Changes no byte of the result, only whether it is refused.
  bool allow_overlap = false;
};

struct CalibrationSet {
  int64_t seq_len = 0;
  uint64_t seed = 0;
  bool bos = false;                         // each window starts with BOS (tokenizer's add-BOS flag)
  int64_t stream_tokens = 0;                // tokens of the documents, concatenated
  std::vector<int64_t> starts;              // stream offset of each window's first text token
  std::vector<std::vector<int32_t>> windows;  // seq_len ids each
  // With allow_overlap and a text too short for the windows: one line saying so (the
  // callers print it on stderr); empty otherwise.
  std::string overlap_note;
};

// Tokenizes every document without special tokens, concatenates them and draws the windows.
// With the tokenizer's add-BOS flag each window is BOS + seq_len-1 stream tokens, else
// seq_len stream tokens. Throws fsq::Error naming `text.source` when the stream is shorter
// than one window, and, unless draw.allow_overlap, when it is shorter than the windows
// together (samples x stream tokens per window): such windows must repeat text, so the
// "N samples" would not be N samples' worth of data. The message gives both counts and the
// ways out (a shorter --seq-len, fewer --samples, more text, or --allow-overlap). The
// positions themselves are drawn at random either way, so windows over a long enough text
// may still overlap by chance.
CalibrationSet make_calibration_set(const Tokenizer& tokenizer, const CalibrationText& text, const WindowDraw& draw);

// The window starts alone (the RNG part): `count` offsets uniform in [0, max_start], from a
// 64-bit Mersenne Twister seeded with `seed`, mapped without modulo bias so every platform
// draws the same positions.
std::vector<int64_t> draw_window_starts(int64_t count, int64_t max_start, uint64_t seed);

}  // namespace fsq
