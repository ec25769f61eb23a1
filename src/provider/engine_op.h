#pragma once

// Engine ops: a LibraryRecipe (library_op.h) redone through an OpenSSL ENGINE, for the `openssl`
// engine when `crypto openssl:ID` names an ENGINE (QAT_Engine, KAE) instead of a provider.
//
// - The key becomes a legacy RSA or EC_KEY bound to the engine (RSA_new_method(e),
//   EC_KEY_new_method(e)) with the key parts of the KeyExport, wrapped in a legacy EVP_PKEY;
//   made once per KeyExport and engine (KeyExport::engine_key), not per handshake.
// - The operation is the legacy EVP_PKEY one (EVP_PKEY_CTX_new(pkey, e), with e only when the
//   engine has an EVP_PKEY_METHOD for the key type; otherwise the key's RSA_METHOD or
//   EC_KEY_METHOD, the engine's, does the private operation) with the recipe's parameters set
//   through the EVP_PKEY_CTX_set_* calls: digest, padding, PSS salt length and MGF1 digest, OAEP
//   digest, MGF1 digest and label. The engine may pause the calling ASYNC job.
// - TLS 1.2's RSA key exchange padding (RSA_PKCS1_WITH_TLS_PADDING) has no legacy form: the
//   engine decrypts without padding and the premaster secret is checked here, in constant time,
//   as RFC 5246 §7.4.7.1 says (a bad padding or version gives a random secret, never an error).
//
// Built from engine_op.cc when OpenSSL has the ENGINE API (AG_OPENSSL_ENGINE), else from
// engine_op_none.cc, whose functions fail.

#include <openssl/core.h>
#include <openssl/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "accelgate/offload/op.h"
#include "library_op.h"

namespace accelgate::provider {

// make_engine_key builds the key |params| (a full export of an |alg| key) as a legacy EVP_PKEY
// whose RSA or EC_KEY is bound to |engine|; it holds a functional reference on the engine while
// it lives. Null when it cannot be made (X25519, a multi-prime RSA key, no ENGINE support).
std::shared_ptr<EVP_PKEY> make_engine_key(Algorithm alg, const OSSL_PARAM* params, ENGINE* engine);

// run_engine_op runs |recipe| through |engine| into |out|. False on any failure (the dispatcher
// then falls back), with OpenSSL's errors on the calling thread's queue.
bool run_engine_op(const LibraryRecipe& recipe, ENGINE* engine, offload::OpOutput* out);

// tls_premaster_from_block is RFC 5246 §7.4.7.1 over |block|, the unpadded RSA decryption of a
// ClientKeyExchange (|size| bytes, the modulus size): the 48-byte premaster secret when the block
// is a PKCS#1 v1.5 type 2 encryption (RFC 8017 §7.2.2) of 48 bytes starting with
// |client_version| (or |alt_version|, when not 0), else 48 random bytes; constant time in the
// block's contents. Returns false only for a block too short to hold one, or when no random
// bytes could be drawn.
bool tls_premaster_from_block(const uint8_t* block, size_t size, unsigned int client_version,
                              unsigned int alt_version, uint8_t out[48]);

}  // namespace accelgate::provider
