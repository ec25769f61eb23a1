#pragma once

// Vendor: the process-wide part of `crypto openssl:ID`, what the openssl engine's ops compute
// through: a vendor's OpenSSL provider in a library context of its own (vendor_provider.cc), or
// an OpenSSL ENGINE (vendor_engine.cc). One instance per set of settings, shared by every worker
// loop and by the configuration snapshots before and after a reload (DeviceStore), so a card is
// opened, and an ENGINE initialised, once per process.

#include <memory>
#include <string>
#include <vector>

#include "accelgate/common/result.h"
#include "accelgate/config/config.h"
#include "accelgate/offload/op.h"

namespace accelgate::offload {

class Vendor {
 public:
  virtual ~Vendor() = default;

  // target is what an op's LibraryFn computes through (valid while this Vendor lives).
  virtual LibraryTarget target() const = 0;
  // accelerates says whether ops of |kind| may be sent here; the dispatcher passes the others
  // to the next engine without counting a failure.
  virtual bool accelerates(OpKind kind) const = 0;
  // has_poll_command says whether `notify poll` should ask the device for completions (an
  // ENGINE's "POLL" command, QAT_Engine's external polling); poll_device does it. Any thread.
  virtual bool has_poll_command() const { return false; }
  virtual void poll_device() {}
  // description says what was loaded, for the error log and `accelgate --engines`.
  virtual std::string description() const = 0;
};

// VendorOptions are the settings a Vendor is opened with.
struct VendorOptions {
  std::string id;  // `crypto openssl:ID`: a provider or ENGINE name, or a path to either
  std::vector<config::OffloadSettings::EngineCtrl> ctrls;  // for an ENGINE, before ENGINE_init
  bool external_polling = false;  // `notify poll`: an ENGINE that can be polled is told so
};

// open_provider_vendor loads |id| as an OpenSSL provider (vendor_provider.cc).
Result<std::unique_ptr<Vendor>> open_provider_vendor(const std::string& id);

// open_engine_vendor loads, configures and initialises |options.id| as an OpenSSL ENGINE: an
// engine id known to OpenSSL (ENGINE_by_id, which also tries the `dynamic` engine in
// OPENSSL_ENGINES or OpenSSL's ENGINESDIR) or, for an id with a '/', the engine shared object at
// that path (through the `dynamic` engine). *loaded says whether the ENGINE itself loaded (so
// that a later failure, a refused control command or ENGINE_init, is the engine's own). Where
// OpenSSL has no ENGINE API it fails (vendor_engine_none.cc).
Result<std::unique_ptr<Vendor>> open_engine_vendor(const VendorOptions& options, bool* loaded);

// engine_api_status says whether this build can load ENGINEs, for `accelgate --engines`:
// "compiled in (OpenSSL 3.0.19; ENGINESDIR ...)" or "not compiled in (...)".
std::string engine_api_status();

}  // namespace accelgate::offload
