// build/accelgate.so: the provider as a module any OpenSSL 3 application can load
// (`-provider-path build -provider accelgate`). Only OSSL_provider_init is exported (module.map).

#include <openssl/core.h>

#include "accelgate/provider/provider.h"

extern "C" __attribute__((visibility("default"))) int OSSL_provider_init(
    const OSSL_CORE_HANDLE* handle, const OSSL_DISPATCH* in, const OSSL_DISPATCH** out,
    void** provctx) {
  return accelgate::provider::init(handle, in, out, provctx);
}
