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

}  // namespace fsq
