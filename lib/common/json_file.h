// Reading JSON files and turning nlohmann's exceptions into one-line fsq::Error messages.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace fsq {

// nlohmann's message without its "[json.exception...] " prefix, on one line, at most
// 300 characters (it may quote the input it read).
std::string json_error_text(const nlohmann::json::exception& e);

// `s` as a JSON string literal for an error message: one line, non-ASCII as \u escapes,
// invalid UTF-8 replaced.
std::string json_quoted_ascii(const std::string& s);

// Parses a whole file. Throws fsq::Error("<path>", ...) when it is missing, unreadable or
// not valid JSON (any nlohmann exception, number overflow included).
nlohmann::json read_json_file(const std::filesystem::path& path);

// Refuses a key of `object` (a JSON object) that is not in `known`, naming it and the keys
// allowed: Error(where, "unknown key 'cout' (known: type, count, node)"). A misspelt key
// ("Count", "inter_nodes_gbs") would otherwise be ignored and its default used silently.
void check_known_keys(const nlohmann::json& object, std::initializer_list<std::string_view> known,
                      const std::string& where);

}  // namespace fsq
