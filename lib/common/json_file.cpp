#include "common/json_file.h"

#include <fstream>
#include <sstream>

#include "common/error.h"

namespace fsq {

std::string json_error_text(const nlohmann::json::exception& e) {
  std::string msg = e.what();
  if (auto p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
  for (char& ch : msg)
    if (static_cast<unsigned char>(ch) < 0x20) ch = ' ';
  constexpr size_t kMaxMessage = 300;
  if (msg.size() > kMaxMessage) msg = msg.substr(0, kMaxMessage) + "...";
  return msg;
}

std::string json_quoted_ascii(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(path.string(), std::filesystem::exists(path, ec) ? "not a regular file" : "file not found");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string(), "cannot open file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(path.string(), "cannot read file");
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(path.string(), "not valid JSON: " + json_error_text(e));
  }
}

void check_known_keys(const nlohmann::json& object, std::initializer_list<std::string_view> known,
                      const std::string& where) {
  if (!object.is_object()) return;
  for (const auto& item : object.items()) {
    bool found = false;
    for (std::string_view k : known) found = found || k == item.key();
    if (found) continue;
    std::string names;
    for (std::string_view k : known) names += (names.empty() ? "" : ", ") + std::string(k);
    throw Error(where, "unknown key " + quote_name(item.key()) + " (known: " + names + ")");
  }
}

}  // namespace fsq
