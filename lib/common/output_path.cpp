#include "common/output_path.h"

#include "common/error.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

// Absolute, with symlinks of the existing part resolved, so two spellings of one place compare equal.
fs::path resolved(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::absolute(p).lexically_normal() : r;
}

// True when `inner` is `outer` or lies below it (both resolved).
bool is_within(const fs::path& inner, const fs::path& outer) {
  auto o = outer.begin(), i = inner.begin();
  for (; o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

}  // namespace

std::string special_file_kind(const fs::path& p) {
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);  // follows links: a link to a FIFO is a FIFO
  if (ec) return "";
  switch (st.type()) {
    case fs::file_type::character: return "character device";
    case fs::file_type::block: return "block device";
    case fs::file_type::fifo: return "FIFO (named pipe)";
    case fs::file_type::socket: return "socket";
    case fs::file_type::unknown: return "special file";
    default: return "";
  }
}

void check_output_path(const OutputRequest& out, const std::vector<fs::path>& inputs) {
  const std::string where = out.option + " " + out.path.string();
  const fs::path target = resolved(out.path);
  std::error_code ec;
  const bool exists = fs::exists(out.path, ec);
  for (const fs::path& input : inputs) {
    if (input.empty()) continue;
    const fs::path source = resolved(input);
    if (target == source || (exists && fs::equivalent(out.path, input, ec)))
      throw Error(where, "is the same file as " + input.string() + ", which this command uses; choose another path");
    if (fs::is_directory(input, ec) && is_within(target, source))
      throw Error(where, "lies inside the input folder " + input.string() + "; choose a path outside it");
    if (out.kind == OutputKind::Folder && is_within(source, target))
      throw Error(where, "would contain the input " + input.string() + "; choose another output folder");
  }
  if (exists) {
    if (out.kind == OutputKind::Folder) {
      if (!fs::is_directory(out.path, ec)) throw Error(where, "exists and is not a folder; choose a new folder");
      if (!fs::is_empty(out.path, ec)) throw Error(where, "exists and is not empty; choose a new folder or remove it");
    } else if (fs::is_directory(out.path, ec)) {
      throw Error(where, "is a folder; give a file path");
    } else if (const std::string special = special_file_kind(out.path); !special.empty()) {
      // Outputs appear by renaming a finished file over the path, which would turn the device
      // or pipe into a regular file (/dev/null for the whole machine, run as root): refused,
      // with or without --force.
      throw Error(where, "is a " + special + ", not a regular file; fsq writes only regular files (--force "
                         "never replaces anything else): give a new file path");
    } else if (!out.replace_existing) {
      throw Error(where, "already exists; pass --force to replace it");
    }
  }
  const fs::path parent = target.parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw Error(where, "its folder does not exist: " + parent.string());
}

}  // namespace fsq
