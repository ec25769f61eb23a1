// The ENGINE half of the openssl engine (vendor.h) for an OpenSSL without the ENGINE API (built
// with no-engine, or OpenSSL 4.0, which removed it): `crypto openssl:ID` loads providers only.

#include <openssl/crypto.h>

#include "engines/openssl/vendor.h"

namespace accelgate::offload {

Result<std::unique_ptr<Vendor>> open_engine_vendor(const VendorOptions& options, bool* loaded) {
  *loaded = false;
  return Error{"\"" + options.id +
               "\" cannot be an OpenSSL ENGINE: this OpenSSL has no ENGINE API (use the "
               "vendor's provider: qatprovider, uadk_provider)"};
}

std::string engine_api_status() {
  return std::string("not compiled in (") + OpenSSL_version(OPENSSL_VERSION) +
         " has no ENGINE API; providers only)";
}

}  // namespace accelgate::offload
