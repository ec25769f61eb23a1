// An OpenSSL ENGINE (QAT_Engine, KAE, or any other) as a Vendor: loaded by id or path, given
// the operator's control commands, initialised once, and asked which private-key operations it
// implements. Ops reach it through LibraryTarget::engine (src/provider/engine_op.cc).
//
// OPENSSL_SUPPRESS_DEPRECATED, before any OpenSSL header: the ENGINE API is deprecated in
// OpenSSL 3.0 (and gone in 4.0) and is the only way to drive an ENGINE. CMake builds this file
// only where OpenSSL has it (AG_OPENSSL_ENGINE; vendor_engine_none.cc elsewhere), and it and
// src/provider/engine_op.cc are the only users; everywhere else deprecations stay errors.
#define OPENSSL_SUPPRESS_DEPRECATED

#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/engine.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/rsa.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

#include "accelgate/common/log.h"
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

// command_number is the number of |engine|'s control command |name|, or 0 when it has none.
int command_number(ENGINE* engine, const char* name) {
  int n = ENGINE_ctrl(engine, ENGINE_CTRL_GET_CMD_FROM_NAME, 0, const_cast<char*>(name), nullptr);
  ERR_clear_error();  // "no such command" is an answer here, not an error
  return n > 0 ? n : 0;
}

// Capabilities are the private-key operations an engine implements: the functions of its
// RSA_METHOD and EC_KEY_METHOD that are not OpenSSL's own (an engine copies OpenSSL's method
// and replaces what its device does), or an EVP_PKEY_METHOD for the key type.
struct Capabilities {
  bool rsa_sign = false;
  bool rsa_decrypt = false;
  bool ecdsa_sign = false;
  bool ecdh_derive = false;

  bool any() const { return rsa_sign || rsa_decrypt || ecdsa_sign || ecdh_derive; }
  std::string list() const {
    std::string out;
    auto add = [&out](bool on, const char* name) {
      if (!on) return;
      if (!out.empty()) out += ", ";
      out += name;
    };
    add(rsa_sign, "RSA sign");
    add(rsa_decrypt, "RSA decrypt");
    add(ecdsa_sign, "ECDSA sign");
    add(ecdh_derive, "ECDH derive");
    return out.empty() ? "nothing" : out;
  }
};

bool has_pkey_method(ENGINE* engine, int nid) {
  ENGINE_PKEY_METHS_PTR methods = ENGINE_get_pkey_meths(engine);
  if (methods == nullptr) return false;
  const int* nids = nullptr;
  int n = methods(engine, nullptr, &nids, 0);
  for (int i = 0; i < n && nids != nullptr; ++i) {
    if (nids[i] == nid) return true;
  }
  return false;
}

Capabilities capabilities_of(ENGINE* engine) {
  Capabilities caps;
  if (const RSA_METHOD* rsa = ENGINE_get_RSA(engine); rsa != nullptr) {
    const RSA_METHOD* own = RSA_PKCS1_OpenSSL();
    // A device that does the modular exponentiation serves both operations.
    bool mod_exp = RSA_meth_get_mod_exp(rsa) != RSA_meth_get_mod_exp(own);
    caps.rsa_sign = mod_exp || RSA_meth_get_sign(rsa) != nullptr ||
                    RSA_meth_get_priv_enc(rsa) != RSA_meth_get_priv_enc(own);
    caps.rsa_decrypt = mod_exp || RSA_meth_get_priv_dec(rsa) != RSA_meth_get_priv_dec(own);
  }
  if (const EC_KEY_METHOD* ec = ENGINE_get_EC(engine); ec != nullptr) {
    using Sign = int (*)(int, const unsigned char*, int, unsigned char*, unsigned int*,
                         const BIGNUM*, const BIGNUM*, EC_KEY*);
    using SignSetup = int (*)(EC_KEY*, BN_CTX*, BIGNUM**, BIGNUM**);
    using SignSig =
        ECDSA_SIG* (*)(const unsigned char*, int, const BIGNUM*, const BIGNUM*, EC_KEY*);
    using ComputeKey = int (*)(unsigned char**, size_t*, const EC_POINT*, const EC_KEY*);
    Sign sign = nullptr, own_sign = nullptr;
    SignSetup setup = nullptr, own_setup = nullptr;
    SignSig sign_sig = nullptr, own_sign_sig = nullptr;
    ComputeKey compute = nullptr, own_compute = nullptr;
    EC_KEY_METHOD_get_sign(ec, &sign, &setup, &sign_sig);
    EC_KEY_METHOD_get_sign(EC_KEY_OpenSSL(), &own_sign, &own_setup, &own_sign_sig);
    EC_KEY_METHOD_get_compute_key(ec, &compute);
    EC_KEY_METHOD_get_compute_key(EC_KEY_OpenSSL(), &own_compute);
    caps.ecdsa_sign =
        (sign != nullptr && sign != own_sign) || (sign_sig != nullptr && sign_sig != own_sign_sig);
    caps.ecdh_derive = compute != nullptr && compute != own_compute;
  }
  if (has_pkey_method(engine, EVP_PKEY_RSA)) caps.rsa_sign = caps.rsa_decrypt = true;
  if (has_pkey_method(engine, EVP_PKEY_EC)) caps.ecdsa_sign = caps.ecdh_derive = true;
  return caps;
}

// setup_of spells out the settings an ENGINE takes before ENGINE_init.
std::string setup_of(const VendorOptions& o) {
  std::string out = o.external_polling ? "notify poll" : "notify event";
  if (o.ctrls.empty()) return out + ", no openssl_engine_ctrl";
  for (const auto& c : o.ctrls) {
    out += ", openssl_engine_ctrl " + c.name + (c.has_value ? " " + c.value : "");
  }
  return out;
}

// LoadedEngine is one ENGINE as this process loaded it: once per configured id, for the whole
// life of the process. OpenSSL 3.0 refuses to load an ENGINE's shared object a second time while
// its first instance lives (and the failed load frees memory twice in 3.0.19), and the keys bound
// to an engine hold references of their own, so the instance is never unloaded: a structural
// reference stays here. Functional references come and go with the Vendors that use it
// (ENGINE_init, ENGINE_finish; the engine's own init and finish run on the first and the last).
// The control commands and the external polling it was set up with stay for the process's life.
struct LoadedEngine {
  ENGINE* engine = nullptr;
  std::string id;         // as configured: an id or a path
  std::string engine_id;  // the engine's own id
  std::string setup;      // setup_of() of the settings it was set up with
  Capabilities caps;
  int poll_command = 0;
  bool external_polling = false;  // it gets POLL commands (set up for `notify poll`)
  std::mutex warn_mutex;
  std::vector<std::string> warned;  // other setups already warned about
};

// shared_object_of is the file an ENGINE id stands for, resolved (realpath), so that the two
// ways of naming one engine (a path, or an id that OpenSSL finds as ID.so in OPENSSL_ENGINES or
// its ENGINESDIR) find the same LoadedEngine and its shared object is never loaded twice. An id
// with no such file (an engine built into OpenSSL) stands for itself.
std::string shared_object_of(const std::string& id) {
  std::string path = id;
  if (id.find('/') == std::string::npos) {
    std::string dir;
    if (const char* env = std::getenv("OPENSSL_ENGINES"); env != nullptr) {
      dir = env;
    } else {
      // "ENGINESDIR: \"/usr/lib/x86_64-linux-gnu/engines-3\""
      std::string_view text = OpenSSL_version(OPENSSL_ENGINES_DIR);
      size_t open = text.find('"');
      size_t close = text.rfind('"');
      if (open != std::string_view::npos && close > open) {
        dir = std::string(text.substr(open + 1, close - open - 1));
      }
    }
    if (dir.empty()) return id;
    path = dir + "/" + id + ".so";
  }
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : id;
}

class EngineRegistry {
 public:
  static EngineRegistry& get() {
    static auto* registry = new EngineRegistry();  // never destroyed: see LoadedEngine
    return *registry;
  }

  // acquire returns |options.id|'s engine with one more functional reference, loading and
  // setting it up on first use. *loaded: the ENGINE itself loaded (a later failure is its own).
  Result<LoadedEngine*> acquire(const VendorOptions& options, bool* loaded) {
    std::lock_guard lock(mutex_);
    *loaded = false;
    std::string key = shared_object_of(options.id);
    auto it = engines_.find(key);
    if (it != engines_.end()) {
      *loaded = true;
      LoadedEngine* e = it->second.get();
      if (ENGINE_init(e->engine) != 1) {
        return Error{"ENGINE_init of the OpenSSL ENGINE \"" + options.id + "\" failed (" +
                     openssl_errors() + ")"};
      }
      warn_if_set_up_otherwise(e, options);
      return e;
    }
    ERR_clear_error();
    auto e = std::make_unique<LoadedEngine>();
    e->id = options.id;
    e->setup = setup_of(options);
    if (Status st = load(e.get()); !st) return st.error();
    *loaded = true;
    Status st = configure(e.get(), options);
    if (st && ENGINE_init(e->engine) != 1) {
      st = Error{"ENGINE_init of the OpenSSL ENGINE \"" + options.id + "\" failed (" +
                 openssl_errors() + ")"};
    }
    if (!st) {
      // Never initialised: free it, so that a corrected configuration can load it again.
      ENGINE_free(e->engine);
      return st.error();
    }
    e->caps = capabilities_of(e->engine);
    if (!e->caps.any()) {
      ENGINE_finish(e->engine);
      ENGINE_free(e->engine);
      return Error{"the OpenSSL ENGINE \"" + options.id +
                   "\" implements none of RSA sign, RSA decrypt, ECDSA sign, ECDH derive"};
    }
    LoadedEngine* raw = e.get();
    engines_.emplace(key, std::move(e));
    return raw;
  }

 private:
  static Status load(LoadedEngine* e) {
    const std::string& id = e->id;
    if (id.find('/') != std::string::npos) {
      // A path: the `dynamic` engine loads the shared object (as `openssl -engine PATH` does)
      // without adding it to OpenSSL's engine list.
      e->engine = ENGINE_by_id("dynamic");
      if (e->engine != nullptr &&
          ENGINE_ctrl_cmd_string(e->engine, "SO_PATH", id.c_str(), 0) == 1 &&
          ENGINE_ctrl_cmd_string(e->engine, "LOAD", nullptr, 0) == 1) {
        e->engine_id = ENGINE_get_id(e->engine);
        return {};
      }
      if (e->engine != nullptr) ENGINE_free(e->engine);
      e->engine = nullptr;
    } else {
      e->engine = ENGINE_by_id(id.c_str());
      if (e->engine != nullptr) {
        e->engine_id = ENGINE_get_id(e->engine);
        return {};
      }
    }
    return Error{"cannot load the OpenSSL ENGINE \"" + id + "\" (" + openssl_errors() + ")"};
  }

  // configure sends what must precede ENGINE_init: external polling for `notify poll` (as
  // asynch_mode_nginx does for QAT_Engine's `qat_poll_mode external|heuristic`), then the
  // operator's openssl_engine_ctrl commands in order (so one of them may depend on it, as
  // QAT_Engine's ENABLE_HEURISTIC_POLLING does).
  static Status configure(LoadedEngine* e, const VendorOptions& options) {
    e->poll_command = command_number(e->engine, "POLL");
    if (options.external_polling && e->poll_command != 0) {
      if (command_number(e->engine, "ENABLE_EXTERNAL_POLLING") != 0 &&
          ENGINE_ctrl_cmd(e->engine, "ENABLE_EXTERNAL_POLLING", 0, nullptr, nullptr, 0) != 1) {
        return Error{"the OpenSSL ENGINE \"" + options.id + "\" refused ENABLE_EXTERNAL_POLLING (" +
                     openssl_errors() + ")"};
      }
      e->external_polling = true;
    }
    for (const auto& ctrl : options.ctrls) {
      if (ENGINE_ctrl_cmd_string(e->engine, ctrl.name.c_str(),
                                 ctrl.has_value ? ctrl.value.c_str() : nullptr, 0) != 1) {
        std::string where = ctrl.where.file.empty()
                                ? std::string()
                                : ctrl.where.file + ":" + std::to_string(ctrl.where.line) + ": ";
        return Error{where + "openssl_engine_ctrl " + ctrl.name +
                     (ctrl.has_value ? " " + ctrl.value : std::string()) +
                     ": refused by the OpenSSL ENGINE \"" + options.id + "\" (" + openssl_errors() +
                     ")"};
      }
    }
    return {};
  }

  // An initialised ENGINE takes no more set-up commands: a configuration (a reload) that sets
  // it up otherwise gets the engine as it is, and a warning.
  static void warn_if_set_up_otherwise(LoadedEngine* e, const VendorOptions& options) {
    std::string setup = setup_of(options);
    if (setup == e->setup) return;
    std::lock_guard lock(e->warn_mutex);
    if (std::find(e->warned.begin(), e->warned.end(), setup) != e->warned.end()) return;
    e->warned.push_back(setup);
    AG_LOG_WARN(
        "openssl engine: ENGINE \"%s\" keeps the set-up it was initialised with (%s); the new "
        "one (%s) applies after a restart",
        e->id.c_str(), e->setup.c_str(), setup.c_str());
  }

  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<LoadedEngine>> engines_;  // by shared_object_of(id)
};

class EngineVendor final : public Vendor {
 public:
  explicit EngineVendor(LoadedEngine* loaded) : loaded_(loaded) {}
  // The last Vendor's ENGINE_finish runs the engine's finish, unless keys bound to it
  // (KeyExport::engine_key) still hold references: then it runs when they are gone.
  ~EngineVendor() override { ENGINE_finish(loaded_->engine); }

  LibraryTarget target() const override { return {nullptr, nullptr, loaded_->engine}; }

  bool accelerates(OpKind kind) const override {
    const Capabilities& caps = loaded_->caps;
    switch (kind) {
      case OpKind::kRsaSign:
        return caps.rsa_sign;
      case OpKind::kRsaDecrypt:
        return caps.rsa_decrypt;
      case OpKind::kEcdsaSign:
        return caps.ecdsa_sign;
      case OpKind::kEcdhDerive:
        return caps.ecdh_derive;
      case OpKind::kX25519Derive:
      case OpKind::kX25519Keygen:
      case OpKind::kGzip:
        // X25519 reaches an engine only through an EVP_PKEY_METHOD (QAT_Engine's), which
        // would need a legacy X25519 key of that engine per handshake; not used. Compression
        // has its own chain.
        return false;
    }
    return false;
  }

  bool has_poll_command() const override {
    return loaded_->poll_command != 0 && loaded_->external_polling;
  }

  void poll_device() override {
    int status = 0;
    // QAT_Engine's POLL: |p| receives the poll status; the engine signals the jobs it completed
    // (their wait fds or callbacks). ENGINE_ctrl by number, not by name, on this hot path.
    if (ENGINE_ctrl(loaded_->engine, loaded_->poll_command, 0, &status, nullptr) != 1) {
      ERR_clear_error();
      if (!poll_failure_logged_.exchange(true)) {
        AG_LOG_WARN("openssl engine: the POLL command of ENGINE \"%s\" failed (logged once)",
                    loaded_->engine_id.c_str());
      }
    }
  }

  std::string description() const override {
    const LoadedEngine& e = *loaded_;
    const char* name = ENGINE_get_name(e.engine);
    std::string out = "ENGINE \"" + e.engine_id + "\"";
    if (name != nullptr && *name != '\0') out += std::string(" (") + name + ")";
    if (e.id != e.engine_id) out += " from " + e.id;
    out += ": accelerates " + e.caps.list();
    if (e.poll_command != 0) {
      out += e.external_polling ? "; polled with POLL (external polling)"
                                : "; has POLL, not used (notify event)";
    }
    return out;
  }

 private:
  LoadedEngine* loaded_;  // never freed (EngineRegistry)
  std::atomic<bool> poll_failure_logged_{false};
};

}  // namespace

Result<std::unique_ptr<Vendor>> open_engine_vendor(const VendorOptions& options, bool* loaded) {
  auto e = EngineRegistry::get().acquire(options, loaded);
  if (!e) return e.error();
  auto vendor = std::make_unique<EngineVendor>(*e);
  AG_LOG_NOTICE("openssl engine: %s", vendor->description().c_str());
  return std::unique_ptr<Vendor>(std::move(vendor));
}

std::string engine_api_status() {
  return std::string("compiled in (") + OpenSSL_version(OPENSSL_VERSION) + "; " +
         OpenSSL_version(OPENSSL_ENGINES_DIR) + ")";
}

}  // namespace accelgate::offload
