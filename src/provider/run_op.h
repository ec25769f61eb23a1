#pragma once

// run_op: how a private-key operation of ours waits for its op (DESIGN.md, "TLS and the
// provider").
//
// - Outside an async job there is nothing to wait with: the caller computes with the default
//   provider directly (in_async_job() is false; run_op is not called).
// - In the server (the calling thread has a Dispatcher::current(): a worker loop running a TLS
//   handshake's job) the op is submitted to that dispatcher; if it is pending the job pauses
//   until the op's completion, on the same thread, wakes it through the ASYNC_WAIT_CTX callback
//   (no system call) or, when the application set none, an eventfd registered as the job's
//   wait fd.
// - Anywhere else (the module inside another application) the op goes to the StandaloneDriver's
//   thread, whose completion wakes the job the same two ways.

#include "accelgate/offload/op.h"

namespace accelgate::provider {

// in_async_job says whether the calling code runs inside an OpenSSL async job.
bool in_async_job();

// OpResult is the end of an op as the waiting code sees it.
struct OpResult {
  bool ok = false;
  offload::OpOutput output;
};

// library_fn_wanted says whether the dispatcher that run_op would give an op to (this thread's,
// or the standalone driver's) has an engine that uses LibraryFns: op makers build one only then.
bool library_fn_wanted();

// run_op runs |op| and returns once it has ended; call it only inside an async job (it pauses
// the job). The op's completion callback is set here.
OpResult run_op(const offload::OpRef& op);

}  // namespace accelgate::provider
