#include "common/sha256.h"

#include <openssl/evp.h>

#include <memory>

#include "common/error.h"
#include "common/mapped_file.h"

namespace fsq {

std::string sha256_hex(std::span<const std::byte> data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), digest, &len) != 1) {
    throw Error("sha256", "OpenSSL digest failed");
  }
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 15]);
  }
  return out;
}

std::string sha256_hex(std::string_view text) {
  return sha256_hex(std::span<const std::byte>(reinterpret_cast<const std::byte*>(text.data()), text.size()));
}

std::string sha256_file(const std::filesystem::path& path) {
  MappedFile f(path);
  return sha256_hex(f.bytes());
}

}  // namespace fsq
