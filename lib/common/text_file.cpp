#include "common/text_file.h"

#include <fstream>
#include <sstream>
#include <system_error>

#include "common/error.h"
#include "common/utf8.h"

namespace fsq {

void check_text_file(const std::filesystem::path& path, EmptyText empty) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(path.string(), "data file does not exist or is not a regular file");
  if (empty == EmptyText::Refuse && std::filesystem::file_size(path, ec) == 0 && !ec)
    throw Error(path.string(), "data file is empty");
}

std::string read_text_file(const std::filesystem::path& path, EmptyText empty) {
  check_text_file(path, empty);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string(), "cannot open data file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(path.string(), "read error");
  std::string text = ss.str();
  // Checked again on the bytes read: the file may have been truncated since.
  if (text.empty() && empty == EmptyText::Refuse) throw Error(path.string(), "data file is empty");
  check_text(text, path.string());
  return text;
}

}  // namespace fsq
