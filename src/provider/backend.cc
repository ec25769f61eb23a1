#include "backend.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/provider.h>

#include <cstdio>
#include <cstring>

#include "standalone_driver.h"
#include "stats.h"

namespace accelgate::provider {
namespace {

std::mutex g_mutex;            // guards g_backend's creation and destruction, and g_refs
Backend* g_backend = nullptr;  // read without the lock by get(), between acquire and release
int g_refs = 0;

// first_name returns the first of the colon-separated names of an OSSL_ALGORITHM.
std::string_view first_name(const char* names) {
  std::string_view all(names);
  return all.substr(0, all.find(':'));
}

}  // namespace

Result<Backend*> Backend::acquire(const std::string& crypto) {
  std::lock_guard lock(g_mutex);
  if (g_backend == nullptr) {
    std::unique_ptr<Backend> backend(new Backend());
    backend->crypto_ = crypto;
    if (Status st = backend->init(); !st) return st.error();
    g_backend = backend.release();
  }
  ++g_refs;
  return g_backend;
}

void Backend::release() {
  Backend* dying = nullptr;
  {
    std::lock_guard lock(g_mutex);
    if (--g_refs == 0) {
      dying = g_backend;
      g_backend = nullptr;
    }
  }
  delete dying;
}

Backend& Backend::get() { return *g_backend; }

Status Backend::init() {
  libctx_ = OSSL_LIB_CTX_new();
  if (libctx_ == nullptr) return Error{"accelgate provider: cannot create a library context"};
  default_provider_ = OSSL_PROVIDER_load(libctx_, "default");
  if (default_provider_ == nullptr) {
    return Error{"accelgate provider: cannot load the default provider"};
  }
  default_provctx_ = OSSL_PROVIDER_get0_provider_ctx(default_provider_);

  static constexpr Offer kOffers[] = {
      {Operation::kKeymgmt, Algorithm::kRsa, "RSA"},
      {Operation::kKeymgmt, Algorithm::kEc, "EC"},
      {Operation::kKeymgmt, Algorithm::kX25519, "X25519"},
      {Operation::kSignature, Algorithm::kRsa, "RSA"},
      {Operation::kSignature, Algorithm::kEc, "ECDSA"},
      {Operation::kAsymCipher, Algorithm::kRsa, "RSA"},
      {Operation::kKeyexch, Algorithm::kEc, "ECDH"},
      {Operation::kKeyexch, Algorithm::kX25519, "X25519"},
  };
  static constexpr int kOperationIds[kOperationCount] = {OSSL_OP_KEYMGMT, OSSL_OP_SIGNATURE,
                                                         OSSL_OP_ASYM_CIPHER, OSSL_OP_KEYEXCH};

  // Resolve the default functions first: the dispatch builders look at them.
  struct Found {
    const Offer* offer;
    const OSSL_ALGORITHM* entry;
  };
  std::vector<Found> found;
  for (const Offer& offer : kOffers) {
    int no_cache = 0;
    const OSSL_ALGORITHM* list =
        OSSL_PROVIDER_query_operation(default_provider_, kOperationIds[index(offer.op)], &no_cache);
    const OSSL_ALGORITHM* entry = nullptr;
    for (const OSSL_ALGORITHM* a = list; a != nullptr && a->algorithm_names != nullptr; ++a) {
      if (first_name(a->algorithm_names) == offer.name) {
        entry = a;
        break;
      }
    }
    if (entry == nullptr) {
      return Error{std::string("accelgate provider: the default provider has no ") + offer.name};
    }
    for (const OSSL_DISPATCH* d = entry->implementation; d->function_id != 0; ++d) {
      if (d->function_id > 0 && d->function_id < kMaxFunctionId) {
        functions_[index(offer.op)][index(offer.alg)][d->function_id] = d->function;
      }
    }
    found.push_back({&offer, entry});
  }

  // Ours: the same names, our property, our functions. The tables must not move once
  // algorithms_ points into them, so they are all built before the arrays are.
  dispatch_tables_.reserve(found.size());
  for (const Found& f : found) {
    switch (f.offer->op) {
      case Operation::kKeymgmt:
        dispatch_tables_.push_back(keymgmt_dispatch(*this, f.offer->alg));
        break;
      case Operation::kSignature:
        dispatch_tables_.push_back(signature_dispatch(*this, f.offer->alg));
        break;
      case Operation::kAsymCipher:
        dispatch_tables_.push_back(asym_cipher_dispatch(*this, f.offer->alg));
        break;
      case Operation::kKeyexch:
        dispatch_tables_.push_back(keyexch_dispatch(*this, f.offer->alg));
        break;
    }
  }
  for (size_t i = 0; i < found.size(); ++i) {
    const OSSL_ALGORITHM* entry = found[i].entry;
    const std::string* names =
        strings_.emplace_back(std::make_unique<std::string>(entry->algorithm_names)).get();
    const char* description = nullptr;
    if (entry->algorithm_description != nullptr) {
      description =
          strings_.emplace_back(std::make_unique<std::string>(entry->algorithm_description))
              ->c_str();
    }
    algorithms_[index(found[i].offer->op)].push_back(
        {names->c_str(), "provider=accelgate", dispatch_tables_[i].data(), description});
  }
  for (auto& list : algorithms_) list.push_back({nullptr, nullptr, nullptr, nullptr});
  return {};
}

Backend::~Backend() {
  // The driver's thread computes with the default provider: stop it before the context goes.
  driver_.reset();
  write_stats_file();
  if (default_provider_ != nullptr) OSSL_PROVIDER_unload(default_provider_);
  OSSL_LIB_CTX_free(libctx_);
}

const OSSL_ALGORITHM* Backend::algorithms(int operation_id) const {
  switch (operation_id) {
    case OSSL_OP_KEYMGMT:
      return algorithms_[index(Operation::kKeymgmt)].data();
    case OSSL_OP_SIGNATURE:
      return algorithms_[index(Operation::kSignature)].data();
    case OSSL_OP_ASYM_CIPHER:
      return algorithms_[index(Operation::kAsymCipher)].data();
    case OSSL_OP_KEYEXCH:
      return algorithms_[index(Operation::kKeyexch)].data();
    case OSSL_OP_KDF:
      return kdf_algorithms();
    default:
      return nullptr;
  }
}

StandaloneDriver* Backend::driver() {
  std::lock_guard lock(driver_mutex_);
  if (!driver_tried_) {
    driver_tried_ = true;
    auto settings = standalone_settings(crypto_);
    if (!settings) {
      std::fprintf(stderr, "accelgate provider: %s; computing in software\n",
                   settings.error().message.c_str());
    } else if (auto started = StandaloneDriver::start(*settings); !started) {
      std::fprintf(stderr, "accelgate provider: %s; computing in software\n",
                   started.error().message.c_str());
    } else {
      driver_ = std::move(started.value());
    }
  }
  return driver_.get();
}

std::vector<OSSL_DISPATCH> build_dispatch(const Backend& backend, Operation op, Algorithm alg,
                                          std::initializer_list<DispatchEntry> entries) {
  std::vector<OSSL_DISPATCH> table;
  for (const DispatchEntry& e : entries) {
    if (e.always || backend.has(op, alg, e.id)) table.push_back({e.id, e.function});
  }
  table.push_back({0, nullptr});
  return table;
}

}  // namespace accelgate::provider
