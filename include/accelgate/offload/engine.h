#pragma once

// Engine and Poller: the async contract every offload engine implements (DESIGN.md, "The async
// contract"). One Engine object serves one worker loop; engines that own threads or a device
// (pool, emu, a card) share them between the loops' Engine objects (see registry.h).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "accelgate/offload/op.h"

namespace accelgate::event {
class EventLoop;
}

namespace accelgate::offload {

// Poller is something the loop drives: poll() reaps finished work and returns whether it did
// any (as seastar's pollfn), so the loop can poll again before it blocks.
class Poller {
 public:
  virtual ~Poller() = default;
  virtual bool poll() = 0;
};

// SubmitResult is Engine::submit's answer.
enum class SubmitResult {
  kDone,     // computed inline; the output is in |out|
  kPending,  // accepted; CompletionSink::complete follows on the loop's thread
  kBusy,     // no capacity now (in-flight limit, queue full): try the next engine
  kFailed,   // cannot compute it (device down, error): try the next engine
};

// CompletionSink receives the end of a Pending op. Called on the loop thread of the engine,
// never from inside Engine::submit.
class CompletionSink {
 public:
  virtual ~CompletionSink() = default;
  // complete reports that the attempt |ticket| of |op| ended; |ok| false means the engine failed
  // it. |output| is moved from.
  virtual void complete(const OpRef& op, uint64_t ticket, bool ok, OpOutput&& output) = 0;
};

// EngineContext is what an Engine is created with.
struct EngineContext {
  event::EventLoop* loop;  // the worker loop the engine serves; completions run on its thread
  CompletionSink* sink;    // where Pending ops end
};

class Engine : public Poller {
 public:
  // name is the engine's name as in `crypto NAME;` and in the `engine` metric label.
  virtual std::string_view name() const = 0;
  // accelerates says whether this engine computes |op| (its kind, key size, and for engines
  // that need them its private key and raw input); the dispatcher skips an engine for the ops
  // it does not accelerate, without counting anything. Loop thread.
  virtual bool accelerates(const Op& op) const = 0;
  // submit starts |op| as attempt |ticket|. kDone: the output is in |out|; kPending: the engine
  // keeps a reference to |op| and calls the sink exactly once later (with |ticket|), on the
  // loop's thread; kBusy/kFailed: nothing is kept.
  virtual SubmitResult submit(const OpRef& op, uint64_t ticket, OpOutput* out) = 0;
  // poll reaps completions and calls the sink for them; returns whether it did any work.
  bool poll() override { return false; }
  // flush starts a partial batch now (engines that batch, such as mb); called before the loop
  // blocks.
  virtual void flush() {}
  // inflight is the number of Pending ops this Engine object has not completed yet.
  virtual size_t inflight() const { return 0; }
  // uses_library_fn says whether this engine computes ops through their LibraryFn (op.h), so
  // that op makers can skip building one where no engine of the chain would call it.
  virtual bool uses_library_fn() const { return false; }
};

}  // namespace accelgate::offload
