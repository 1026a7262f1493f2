#include "common/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "common/error.h"

namespace fsq {

namespace {

constexpr size_t kReadChunk = 1 << 20;

using DigestContext = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

DigestContext start_digest() {
  DigestContext ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) throw Error("sha256", "OpenSSL digest failed");
  return ctx;
}

void add_to_digest(EVP_MD_CTX* ctx, const void* data, size_t size) {
  if (EVP_DigestUpdate(ctx, data, size) != 1) throw Error("sha256", "OpenSSL digest failed");
}

std::string finish_digest(EVP_MD_CTX* ctx) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx, digest, &len) != 1) throw Error("sha256", "OpenSSL digest failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 15]);
  }
  return out;
}

}  // namespace

std::string sha256_hex(std::span<const std::byte> data) {
  DigestContext ctx = start_digest();
  add_to_digest(ctx.get(), data.data(), data.size());
  return finish_digest(ctx.get());
}

std::string sha256_hex(std::string_view text) {
  return sha256_hex(std::span<const std::byte>(reinterpret_cast<const std::byte*>(text.data()), text.size()));
}

std::string sha256_file(const std::filesystem::path& path) {
  // Read through a buffer rather than a mapping: mapped pages would count in this process's
  // resident memory (a checkpoint's whole size at once), read pages stay in the page cache.
  std::unique_ptr<std::FILE, decltype(&std::fclose)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) throw Error(path.string(), std::string("cannot open: ") + std::strerror(errno));
  DigestContext ctx = start_digest();
  std::vector<unsigned char> buffer(kReadChunk);
  size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), f.get())) > 0) add_to_digest(ctx.get(), buffer.data(), got);
  if (std::ferror(f.get())) throw Error(path.string(), std::string("read error: ") + std::strerror(errno));
  return finish_digest(ctx.get());
}

}  // namespace fsq
