// A vendor's OpenSSL 3 provider (qatprovider, uadk_provider, or any other) as a Vendor: a
// library context with the vendor's provider and the default one (for everything the vendor
// does not implement).

#include <openssl/core_dispatch.h>
#include <openssl/err.h>
#include <openssl/provider.h>

#include <algorithm>
#include <string_view>

#include "engines/openssl/vendor.h"

namespace accelgate::offload {
namespace {

std::string openssl_errors() {
  std::string out;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no OpenSSL error recorded" : out;
}

// provider_property returns the value of the `provider` property that |prov|'s algorithms
// declare (qatprovider's say "provider=qatprovider"), or its name when none does. The two differ
// for a provider loaded by path (the name is then the path), and a query for a value that no
// algorithm declares picks any implementation: the default provider's as well as the vendor's.
std::string provider_property(OSSL_PROVIDER* prov) {
  constexpr std::string_view kKey = "provider=";
  for (int operation : {OSSL_OP_SIGNATURE, OSSL_OP_KEYEXCH, OSSL_OP_ASYM_CIPHER, OSSL_OP_KEYMGMT}) {
    int no_cache = 0;
    const OSSL_ALGORITHM* algs = OSSL_PROVIDER_query_operation(prov, operation, &no_cache);
    std::string value;
    for (const OSSL_ALGORITHM* a = algs; a != nullptr && a->algorithm_names != nullptr; ++a) {
      std::string_view props = a->property_definition != nullptr ? a->property_definition : "";
      // A definition is a comma-separated list of name=value (OpenSSL's property(7)).
      for (size_t pos = 0; pos < props.size() && value.empty();) {
        size_t end = std::min(props.find(',', pos), props.size());
        std::string_view item = props.substr(pos, end - pos);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        if (item.starts_with(kKey)) value = std::string(item.substr(kKey.size()));
        pos = end + 1;
      }
      if (!value.empty()) break;
    }
    if (algs != nullptr) OSSL_PROVIDER_unquery_operation(prov, operation, algs);
    if (!value.empty()) return value;
  }
  return OSSL_PROVIDER_get0_name(prov);
}

class ProviderVendor final : public Vendor {
 public:
  static Result<std::unique_ptr<Vendor>> open(const std::string& id) {
    std::unique_ptr<ProviderVendor> v(new ProviderVendor(id));
    v->ctx_ = OSSL_LIB_CTX_new();
    if (v->ctx_ == nullptr) return Error{"OSSL_LIB_CTX_new() failed"};
    v->vendor_ = OSSL_PROVIDER_load(v->ctx_, id.c_str());
    if (v->vendor_ == nullptr) {
      return Error{"cannot load the OpenSSL provider \"" + id + "\" (" + openssl_errors() + ")"};
    }
    v->default_ = OSSL_PROVIDER_load(v->ctx_, "default");
    if (v->default_ == nullptr) return Error{"cannot load the default provider"};
    v->property_ = provider_property(v->vendor_);
    v->propq_ = "?provider=" + v->property_;
    return std::unique_ptr<Vendor>(std::move(v));
  }

  ~ProviderVendor() override {
    if (vendor_ != nullptr) OSSL_PROVIDER_unload(vendor_);
    if (default_ != nullptr) OSSL_PROVIDER_unload(default_);
    OSSL_LIB_CTX_free(ctx_);
  }

  LibraryTarget target() const override { return {ctx_, propq_.c_str(), nullptr}; }
  // X25519 keygen is not offered: its output must be a key of the caller's default provider,
  // which cannot come out of another library context (the provider makes no LibraryFn for it).
  // Algorithms the vendor lacks are served by the default provider of the same context.
  bool accelerates(OpKind kind) const override { return kind != OpKind::kX25519Keygen; }
  std::string description() const override {
    return "provider \"" + property_ + "\" (" + id_ + ")";
  }

 private:
  explicit ProviderVendor(std::string id) : id_(std::move(id)) {}
  std::string id_;
  OSSL_LIB_CTX* ctx_ = nullptr;
  OSSL_PROVIDER* vendor_ = nullptr;
  OSSL_PROVIDER* default_ = nullptr;
  std::string property_;
  std::string propq_;
};

}  // namespace

Result<std::unique_ptr<Vendor>> open_provider_vendor(const std::string& id) {
  return ProviderVendor::open(id);
}

}  // namespace accelgate::offload
