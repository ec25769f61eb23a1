// sw: OpenSSL's default implementation, computed inline on the loop's thread. Always available,
// and the last engine of every chain when `fallback on` (DESIGN.md, "The async contract").

#include "engines/engines.h"

namespace accelgate::offload {
namespace {

class SwEngine final : public Engine {
 public:
  std::string_view name() const override { return "sw"; }
  bool accelerates(const Op&) const override { return true; }
  SubmitResult submit(const OpRef& op, uint64_t, OpOutput* out) override {
    return op->compute_in_software(out) ? SubmitResult::kDone : SubmitResult::kFailed;
  }
};

}  // namespace

std::string probe_sw(const config::OffloadSettings&) { return {}; }

Result<std::unique_ptr<Engine>> create_sw(const config::OffloadSettings&, const EngineContext&) {
  return std::unique_ptr<Engine>(new SwEngine());
}

}  // namespace accelgate::offload
