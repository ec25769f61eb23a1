#pragma once

// The OpenSSL 3 provider `accelgate` (DESIGN.md, "TLS and the provider"): RSA, EC and X25519
// keys whose private operations (RSA sign and decrypt, ECDSA sign, ECDH and X25519 derive,
// X25519 key generation) become offload ops. Everything else about those keys (import, export,
// verification, encryption, parameters) is OpenSSL's default provider, reached through a
// private library context; see src/provider/README.md.
//
// The same code is built twice: into the server (registered with load_builtin) and as the module
// build/accelgate.so that any OpenSSL 3 application can load.

#include <openssl/core.h>
#include <openssl/types.h>

#include "accelgate/common/result.h"

namespace accelgate::provider {

// kProviderName is the name the provider is registered and loaded under.
inline constexpr const char* kProviderName = "accelgate";

// load_builtin registers the provider in |ctx| (OSSL_PROVIDER_add_builtin), loads it and the
// default provider, and sets |ctx|'s default properties to "?provider=accelgate": our RSA, EC
// and X25519 implementations win, and the default provider still serves everything else
// (RSA-PSS keys, Ed25519, ciphers, digests). Call it once per context, before the context is
// used from other threads, and unload_builtin before freeing the context.
Status load_builtin(OSSL_LIB_CTX* ctx);

// unload_builtin unloads the providers load_builtin loaded into |ctx| (OpenSSL frees a loaded
// provider only once it is unloaded: without this, freeing |ctx| leaks them and our teardown
// never runs). Call it when nothing uses |ctx| any more, just before OSSL_LIB_CTX_free.
void unload_builtin(OSSL_LIB_CTX* ctx);

// init is the provider's OSSL_provider_init_fn (exported as OSSL_provider_init by the module).
int init(const OSSL_CORE_HANDLE* handle, const OSSL_DISPATCH* in, const OSSL_DISPATCH** out,
         void** provctx);

}  // namespace accelgate::provider
