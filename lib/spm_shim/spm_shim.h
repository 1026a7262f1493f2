/* C interface to libsentencepiece, built as its own shared library.
 *
 * Why: Debian's libsentencepiece embeds a private copy of protobuf-lite and exports its
 * symbols, which clash with the libprotobuf that LibTorch loads (the process crashes in
 * protobuf's static initialisers). fsq therefore never links libsentencepiece into a
 * LibTorch binary: it dlopen()s this shim with RTLD_LOCAL | RTLD_DEEPBIND, so the shim and
 * libsentencepiece resolve protobuf symbols inside their own group. Binaries without LibTorch
 * (the sanitizer test build) link the shim's code directly. */
#ifndef FSQ_SPM_SHIM_H
#define FSQ_SPM_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fsq_spm fsq_spm;

/* Loads a tokenizer.model; NULL on failure with the reason in err (NUL-terminated). */
fsq_spm* fsq_spm_load(const char* path, char* err, size_t err_len);
/* The same from a serialized ModelProto in memory (a GGUF tokenizer rebuilt as one). */
fsq_spm* fsq_spm_load_bytes(const char* data, size_t len, char* err, size_t err_len);
void fsq_spm_free(fsq_spm* spm);

/* Encode/decode into malloc'ed buffers released with fsq_spm_release(). 0 on success. */
int fsq_spm_encode(const fsq_spm* spm, const char* text, size_t len, int32_t** ids, size_t* n_ids, char* err,
                   size_t err_len);
int fsq_spm_decode(const fsq_spm* spm, const int32_t* ids, size_t n_ids, char** text, size_t* len, char* err,
                   size_t err_len);
void fsq_spm_release(void* buffer);

int32_t fsq_spm_piece_size(const fsq_spm* spm);
int32_t fsq_spm_bos_id(const fsq_spm* spm);
int32_t fsq_spm_eos_id(const fsq_spm* spm);
/* Id of the piece with exactly this text, or -1. */
int32_t fsq_spm_piece_to_id(const fsq_spm* spm, const char* piece, size_t len);

#ifdef __cplusplus
}
#endif

#endif
