// Engine ops (engine_op.h) for an OpenSSL without the ENGINE API (built with no-engine, or
// OpenSSL 4.0): no key can be bound to an engine, so no op runs through one. The `openssl`
// engine never loads an ENGINE there either (vendor_engine_none.cc).

#include "engine_op.h"

namespace accelgate::provider {

std::shared_ptr<EVP_PKEY> make_engine_key(Algorithm, const OSSL_PARAM*, ENGINE*) { return nullptr; }

bool run_engine_op(const LibraryRecipe&, ENGINE*, offload::OpOutput*) { return false; }

}  // namespace accelgate::provider
