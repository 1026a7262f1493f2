// Outputs never destroy inputs: one check every command runs on each path it will write,
// before any work starts.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace fsq {

enum class OutputKind { File, Folder };

struct OutputRequest {
  std::filesystem::path path;
  std::string option;                          // e.g. "--json", named in errors
  OutputKind kind = OutputKind::File;
  bool replace_existing = false;               // --force (files only; folders are never replaced)
};

// Throws fsq::Error naming the option and path when the output
//  - is one of `inputs` (the same path, or the same file through another name or a link;
//    a command passes its other outputs here too),
//  - lies inside an input folder, or would contain an input (an output folder around it),
//  - is an existing file and replace_existing is false, or an existing non-empty folder,
//  - (a file output) exists and is not a regular file or a folder: a character or block
//    device, a FIFO, a socket, or a symbolic link to one. Such a path is refused even with
//    --force: every output is written as a new file renamed over the path, which would
//    replace the device itself (never written to in place; "-" is stdout where an option
//    takes it),
//  - has a parent folder that does not exist.
// "character device", "block device", "FIFO (named pipe)", "socket" or "special file" when
// `p` exists (through links) and is one; "" for a regular file, a folder or a missing path.
std::string special_file_kind(const std::filesystem::path& p);

void check_output_path(const OutputRequest& out, const std::vector<std::filesystem::path>& inputs);

}  // namespace fsq
