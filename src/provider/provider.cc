// The provider's entry point, its own parameters and the operations it offers; load_builtin for
// the server.

#include "accelgate/provider/provider.h"

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backend.h"

#ifndef AG_PROVIDER_VERSION
#define AG_PROVIDER_VERSION "0.0.0"
#endif

namespace accelgate::provider {
namespace {

// ProviderContext is one instance of our provider (one per library context that loads it).
struct ProviderContext {
  const OSSL_CORE_HANDLE* handle;
};

const OSSL_PARAM kGettableParams[] = {
    OSSL_PARAM_DEFN(OSSL_PROV_PARAM_NAME, OSSL_PARAM_UTF8_PTR, nullptr, 0),
    OSSL_PARAM_DEFN(OSSL_PROV_PARAM_VERSION, OSSL_PARAM_UTF8_PTR, nullptr, 0),
    OSSL_PARAM_DEFN(OSSL_PROV_PARAM_BUILDINFO, OSSL_PARAM_UTF8_PTR, nullptr, 0),
    OSSL_PARAM_DEFN(OSSL_PROV_PARAM_STATUS, OSSL_PARAM_INTEGER, nullptr, 0),
    OSSL_PARAM_END,
};

const OSSL_PARAM* gettable_params(void*) { return kGettableParams; }

int get_params(void*, OSSL_PARAM params[]) {
  OSSL_PARAM* p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_NAME);
  if (p != nullptr &&
      OSSL_PARAM_set_utf8_ptr(p, "accelgate: offloaded RSA, EC and X25519; TLS 1.3 key schedule") !=
          1) {
    return 0;
  }
  p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_VERSION);
  if (p != nullptr && OSSL_PARAM_set_utf8_ptr(p, AG_PROVIDER_VERSION) != 1) return 0;
  p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_BUILDINFO);
  if (p != nullptr && OSSL_PARAM_set_utf8_ptr(p, "accelgate " AG_PROVIDER_VERSION
                                                 " over OpenSSL " OPENSSL_VERSION_STR) != 1) {
    return 0;
  }
  p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_STATUS);
  if (p != nullptr && OSSL_PARAM_set_int(p, 1) != 1) return 0;
  return 1;
}

const OSSL_ALGORITHM* query_operation(void*, int operation_id, int* no_cache) {
  *no_cache = 0;
  return Backend::get().algorithms(operation_id);
}

// get_capabilities passes on the default provider's TLS-GROUP capabilities for the groups whose
// key manager is ours (EC curves and X25519). libssl uses a group only when the key manager it
// fetches for the group comes from the provider that announced the group; ours win the fetch, so
// without this every ECDHE group would be dropped from handshakes.
struct GroupFilter {
  OSSL_CALLBACK* cb;
  void* arg;
};

int filter_group(const OSSL_PARAM params[], void* arg) {
  auto* filter = static_cast<GroupFilter*>(arg);
  const OSSL_PARAM* alg = OSSL_PARAM_locate_const(params, OSSL_CAPABILITY_TLS_GROUP_ALG);
  const char* name = nullptr;
  if (alg == nullptr || OSSL_PARAM_get_utf8_string_ptr(alg, &name) != 1) return 1;
  if (std::strcmp(name, "EC") != 0 && std::strcmp(name, "X25519") != 0) return 1;
  return filter->cb(params, filter->arg);
}

int get_capabilities(void*, const char* capability, OSSL_CALLBACK* cb, void* arg) {
  if (std::strcmp(capability, "TLS-GROUP") != 0) return 1;
  GroupFilter filter{cb, arg};
  return OSSL_PROVIDER_get_capabilities(Backend::get().default_provider(), capability, filter_group,
                                        &filter);
}

void teardown(void* provctx) {
  delete static_cast<ProviderContext*>(provctx);
  Backend::release();
}

const OSSL_DISPATCH kProviderFunctions[] = {
    {OSSL_FUNC_PROVIDER_TEARDOWN, reinterpret_cast<void (*)()>(teardown)},
    {OSSL_FUNC_PROVIDER_GETTABLE_PARAMS, reinterpret_cast<void (*)()>(gettable_params)},
    {OSSL_FUNC_PROVIDER_GET_PARAMS, reinterpret_cast<void (*)()>(get_params)},
    {OSSL_FUNC_PROVIDER_QUERY_OPERATION, reinterpret_cast<void (*)()>(query_operation)},
    {OSSL_FUNC_PROVIDER_GET_CAPABILITIES, reinterpret_cast<void (*)()>(get_capabilities)},
    {0, nullptr},
};

// crypto_parameter reads the `crypto` parameter of our section of openssl.cnf ("" if none).
std::string crypto_parameter(const OSSL_CORE_HANDLE* handle, const OSSL_DISPATCH* in) {
  OSSL_FUNC_core_get_params_fn* core_get_params = nullptr;
  for (; in != nullptr && in->function_id != 0; ++in) {
    if (in->function_id == OSSL_FUNC_CORE_GET_PARAMS) {
      core_get_params = OSSL_FUNC_core_get_params(in);
    }
  }
  if (core_get_params == nullptr) return {};
  char* crypto = nullptr;
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_ptr("crypto", &crypto, 0),
                         OSSL_PARAM_construct_end()};
  if (core_get_params(handle, params) != 1 || crypto == nullptr) return {};
  return crypto;
}

}  // namespace

int init(const OSSL_CORE_HANDLE* handle, const OSSL_DISPATCH* in, const OSSL_DISPATCH** out,
         void** provctx) {
  auto backend = Backend::acquire(crypto_parameter(handle, in));
  if (!backend) {
    std::fprintf(stderr, "%s\n", backend.error().message.c_str());
    return 0;
  }
  *provctx = new ProviderContext{handle};
  *out = kProviderFunctions;
  return 1;
}

namespace {

// g_loaded holds what load_builtin loaded, per library context, for unload_builtin.
std::mutex g_loaded_mutex;
std::map<OSSL_LIB_CTX*, std::vector<OSSL_PROVIDER*>> g_loaded;

}  // namespace

Status load_builtin(OSSL_LIB_CTX* ctx) {
  if (OSSL_PROVIDER_add_builtin(ctx, kProviderName, init) != 1) {
    return Error{"cannot register the accelgate provider"};
  }
  std::vector<OSSL_PROVIDER*> loaded;
  for (const char* name : {kProviderName, "default"}) {
    OSSL_PROVIDER* p = OSSL_PROVIDER_load(ctx, name);
    if (p == nullptr) {
      for (OSSL_PROVIDER* l : loaded) OSSL_PROVIDER_unload(l);
      return Error{std::string("cannot load the ") + name + " provider"};
    }
    loaded.push_back(p);
  }
  if (EVP_set_default_properties(ctx, "?provider=accelgate") != 1) {
    for (OSSL_PROVIDER* l : loaded) OSSL_PROVIDER_unload(l);
    return Error{"cannot set the default properties"};
  }
  std::lock_guard lock(g_loaded_mutex);
  auto& list = g_loaded[ctx];
  list.insert(list.end(), loaded.begin(), loaded.end());
  return {};
}

void unload_builtin(OSSL_LIB_CTX* ctx) {
  std::vector<OSSL_PROVIDER*> loaded;
  {
    std::lock_guard lock(g_loaded_mutex);
    auto it = g_loaded.find(ctx);
    if (it == g_loaded.end()) return;
    loaded = std::move(it->second);
    g_loaded.erase(it);
  }
  std::reverse(loaded.begin(), loaded.end());  // ours last: it was loaded first
  for (OSSL_PROVIDER* p : loaded) OSSL_PROVIDER_unload(p);
}

}  // namespace accelgate::provider
