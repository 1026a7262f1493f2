// Reading JSON files and turning nlohmann's exceptions into one-line fsq::Error messages.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace fsq {

// nlohmann's message without its "[json.exception...] " prefix, on one line, at most
// 300 characters (it may quote the input it read).
std::string json_error_text(const nlohmann::json::exception& e);

// Parses a whole file. Throws fsq::Error("<path>", ...) when it is missing, unreadable or
// not valid JSON (any nlohmann exception, number overflow included).
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace fsq
