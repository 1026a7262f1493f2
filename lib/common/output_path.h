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
//  - has a parent folder that does not exist.
void check_output_path(const OutputRequest& out, const std::vector<std::filesystem::path>& inputs);

}  // namespace fsq
