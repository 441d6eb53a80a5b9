#include "transient/train/token_proof.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>
#include <vector>

namespace transient::train {
namespace {

std::string hex(const unsigned char* bytes, std::size_t size) {
  static const char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * size);
  for (std::size_t i = 0; i < size; ++i) {
    text += kDigits[bytes[i] >> 4];
    text += kDigits[bytes[i] & 0xf];
  }
  return text;
}

std::string random_hex(std::size_t bytes) {
  std::vector<unsigned char> buffer(bytes);
  if (RAND_bytes(buffer.data(), static_cast<int>(buffer.size())) != 1) {
    throw std::runtime_error("OpenSSL's RAND_bytes failed: no randomness for a nonce");
  }
  return hex(buffer.data(), buffer.size());
}

}  // namespace

std::string new_nonce() { return random_hex(16); }

std::string new_job_token() { return random_hex(32); }

std::string token_proof(const std::string& token, const std::string& role, const std::string& first,
                        const std::string& second) {
  const std::string message = role + ":" + first + ":" + second;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest,
           &size) == nullptr) {
    throw std::runtime_error("OpenSSL's HMAC-SHA256 failed");
  }
  return hex(digest, size);
}

bool proofs_equal(const std::string& given, const std::string& expected) {
  return given.size() == expected.size() &&
         CRYPTO_memcmp(given.data(), expected.data(), expected.size()) == 0;
}

bool is_nonce(const std::string& text) {
  return text.size() == 32 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace transient::train
