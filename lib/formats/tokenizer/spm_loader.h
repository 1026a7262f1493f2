// Finds the SentencePiece C interface (lib/spm_shim): linked in (FSQ_SPM_LINKED) or
// dlopen()ed in its own symbol scope. See lib/spm_shim/spm_shim.h for why.
#pragma once

#include "spm_shim.h"

namespace fsq::tok {

struct SpmApi {
  decltype(&fsq_spm_load) load;
  decltype(&fsq_spm_free) free;
  decltype(&fsq_spm_encode) encode;
  decltype(&fsq_spm_decode) decode;
  decltype(&fsq_spm_release) release;
  decltype(&fsq_spm_piece_size) piece_size;
  decltype(&fsq_spm_bos_id) bos_id;
  decltype(&fsq_spm_eos_id) eos_id;
  decltype(&fsq_spm_piece_to_id) piece_to_id;
  decltype(&fsq_spm_load_bytes) load_bytes;
};

// Throws fsq::Error saying where it looked when the shim cannot be loaded.
const SpmApi& spm_api();

}  // namespace fsq::tok
