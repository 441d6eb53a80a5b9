// Proving the job's token without sending it. Each side of a worker's connection sends a fresh
// random nonce and proves that it holds the token by an HMAC-SHA256 of both nonces under the
// token, with its role in the message so that one side's proof is never valid for the other:
//
//   worker -> coordinator   hello with nonce Nw (no token)
//   coordinator -> worker   challenge Nc, proof("coordinator", Nw, Nc)
//   worker -> coordinator   proof("worker", Nc, Nw), sent only once the coordinator's proof holds
//
// Neither side ever sends the token, a stranger that binds the coordinator's port learns
// nothing and cannot forge a reply, and proofs are compared in constant time. Torch-free;
// thread-safe (OpenSSL's HMAC and RAND_bytes).
#pragma once

#include <string>

namespace transient::train {

// 32 hex digits from OpenSSL's RAND_bytes (128 bits).
std::string new_nonce();
// 64 hex digits from OpenSSL's RAND_bytes (256 bits): a new job's token.
std::string new_job_token();

// hex(HMAC-SHA256(token, role ":" first ":" second)).
std::string token_proof(const std::string& token, const std::string& role, const std::string& first,
                        const std::string& second);

// Whether `given` equals `expected`, in time that depends only on their lengths.
bool proofs_equal(const std::string& given, const std::string& expected);

// Whether `text` looks like a nonce of new_nonce() (bounded, hex): what a hello must carry.
bool is_nonce(const std::string& text);

}  // namespace transient::train
