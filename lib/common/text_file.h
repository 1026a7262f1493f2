// Text files fsq reads as data (eval --data, calibrate --data, quantize --calib-data): one
// reader, so every command refuses the same things with the same one-line errors.
#pragma once

#include <filesystem>
#include <string>

namespace fsq {

// Whether an empty file is an error (eval data) or just no text (a calibration folder may
// hold empty .txt files; the caller refuses when nothing is left).
enum class EmptyText { Refuse, Allow };

// The cheap checks (exists, is a regular file, non-empty unless allowed), to fail before a
// long model load. Throws fsq::Error naming the file.
void check_text_file(const std::filesystem::path& path, EmptyText empty = EmptyText::Refuse);

// The whole file, after check_text_file and fsq::check_text (no NUL byte, valid UTF-8; the
// message gives the offset). Throws fsq::Error naming the file when it is missing, not a
// regular file, unreadable, empty (unless allowed) or not text.
std::string read_text_file(const std::filesystem::path& path, EmptyText empty = EmptyText::Refuse);

}  // namespace fsq
