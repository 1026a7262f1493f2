#include "formats/tokenizer/spm_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"

namespace fsq::tok {
namespace {

#ifdef FSQ_SPM_LINKED
SpmApi linked_api() {
  return {fsq_spm_load,     fsq_spm_free,   fsq_spm_encode, fsq_spm_decode,     fsq_spm_release,
          fsq_spm_piece_size, fsq_spm_bos_id, fsq_spm_eos_id, fsq_spm_piece_to_id,
          fsq_spm_load_bytes};
}
#else
// Candidates: $FSQ_SPM_SHIM, the build tree's copy, then beside the running executable.
std::vector<std::string> shim_candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("FSQ_SPM_SHIM")) out.emplace_back(env);
#ifdef FSQ_SPM_SHIM_PATH
  out.emplace_back(FSQ_SPM_SHIM_PATH);
#endif
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back((exe.parent_path() / "libfsq_spm_shim.so").string());
    out.push_back((exe.parent_path() / "../lib/libfsq_spm_shim.so").string());
  }
  return out;
}

template <typename F>
void bind(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (fn == nullptr) throw Error("libfsq_spm_shim.so", std::string("missing symbol ") + name);
}

SpmApi dlopened_api() {
  std::string tried;
  void* lib = nullptr;
  for (const auto& path : shim_candidates()) {
    // DEEPBIND: the shim and libsentencepiece resolve protobuf inside their own group.
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (lib != nullptr) break;
    tried += (tried.empty() ? "" : ", ") + path;
  }
  if (lib == nullptr)
    throw Error("libfsq_spm_shim.so", "cannot load the SentencePiece shim (tried " + tried +
                                          "); set FSQ_SPM_SHIM to its path or rebuild fsq");
  SpmApi api{};
  bind(lib, "fsq_spm_load", api.load);
  bind(lib, "fsq_spm_free", api.free);
  bind(lib, "fsq_spm_encode", api.encode);
  bind(lib, "fsq_spm_decode", api.decode);
  bind(lib, "fsq_spm_release", api.release);
  bind(lib, "fsq_spm_piece_size", api.piece_size);
  bind(lib, "fsq_spm_bos_id", api.bos_id);
  bind(lib, "fsq_spm_eos_id", api.eos_id);
  bind(lib, "fsq_spm_piece_to_id", api.piece_to_id);
  bind(lib, "fsq_spm_load_bytes", api.load_bytes);
  return api;  // the library stays loaded for the life of the process
}
#endif

}  // namespace

const SpmApi& spm_api() {
#ifdef FSQ_SPM_LINKED
  static const SpmApi api = linked_api();
#else
  static const SpmApi api = dlopened_api();
#endif
  return api;
}

}  // namespace fsq::tok
