#pragma once

// The async test hook: a test-only stand-in for an offload engine, so the paused-job paths of the
// TLS state machine are exercised before any real engine exists (issue 3). When the environment
// variable ACCELGATE_TEST_ASYNC_PAUSE is "callback:MS" or "fd:MS", every handshake pauses its
// async job once, in the certificate callback, and a helper thread completes it MS milliseconds
// later through the ASYNC_WAIT_CTX callback or by making a wait fd readable. Unset: nothing is
// installed and it costs nothing.

#include <openssl/ssl.h>

namespace accelgate::tls {

// install_async_test_hook installs the hook on |ctx| when the environment asks for it.
void install_async_test_hook(SSL_CTX* ctx);

}  // namespace accelgate::tls
