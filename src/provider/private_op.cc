#include "private_op.h"

#include <cstring>
#include <memory>

#include "run_op.h"

namespace accelgate::provider {

int offload_to_buffer(offload::OpKind kind, int key_bits, void* caller_ctx, DupCtxFn* dup,
                      FreeCtxFn* free, ComputeFn compute, offload::LibraryFn library,
                      unsigned char* out, size_t* outlen, size_t outsize,
                      const std::function<void(offload::Op*)>& prepare) {
  if (dup == nullptr || free == nullptr) return 0;
  void* copy = dup(caller_ctx);
  if (copy == nullptr) return 0;
  std::shared_ptr<void> prototype(copy, free);
  auto software = [prototype, dup, free, compute = std::move(compute)](offload::OpOutput* o) {
    void* ctx = dup(prototype.get());
    if (ctx == nullptr) return false;
    bool ok = compute(ctx, &o->bytes);
    free(ctx);
    return ok;
  };
  auto op = std::make_shared<offload::Op>(kind, key_bits, std::move(software));
  if (library) op->set_library_fn(std::move(library));
  if (prepare) prepare(op.get());
  OpResult r = run_op(op);
  if (!r.ok || r.output.bytes.size() > outsize) return 0;
  if (!r.output.bytes.empty()) std::memcpy(out, r.output.bytes.data(), r.output.bytes.size());
  *outlen = r.output.bytes.size();
  return 1;
}

}  // namespace accelgate::provider
