#pragma once

// offload_to_buffer: the common path of our private operations that produce bytes (sign,
// decrypt, derive). It copies the caller's default context into a prototype the op owns, makes
// an op whose software function computes on a fresh copy of the prototype (so two threads may
// run it at once, see SoftwareFn), waits for it with run_op, and copies the output to the
// caller's buffer. Call it inside an async job only.
//
// |library|, when not empty, becomes the op's LibraryFn (library_op.h): the same operation in
// another library context, for the `openssl` engine. |prepare|, when not empty, is called on
// the op before it is submitted (to give it a private key and raw input, for the mb engine).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "accelgate/offload/op.h"

namespace accelgate::provider {

using DupCtxFn = void*(void* ctx);
using FreeCtxFn = void(void* ctx);

// ComputeFn computes the operation on |ctx| (a fresh default context) into |bytes|.
using ComputeFn = std::function<bool(void* ctx, std::vector<uint8_t>* bytes)>;

// offload_to_buffer returns 1 with the output in |out| (|*outlen| bytes), or 0 on failure (an
// op that failed, or an output longer than |outsize|).
int offload_to_buffer(offload::OpKind kind, int key_bits, void* caller_ctx, DupCtxFn* dup,
                      FreeCtxFn* free, ComputeFn compute, offload::LibraryFn library,
                      unsigned char* out, size_t* outlen, size_t outsize,
                      const std::function<void(offload::Op*)>& prepare = {});

}  // namespace accelgate::provider
