#pragma once

// Server: the process. Loads the configuration, binds the listening sockets, runs
// worker_processes worker threads and turns signals into actions (DESIGN.md, "Files and
// commands"): SIGHUP reload, SIGQUIT graceful stop, SIGTERM/SIGINT fast stop, SIGUSR1 reopen logs.
// The main thread does nothing but wait for signals.

#include <memory>
#include <string>

#include "accelgate/config/config.h"

namespace accelgate::server {

// run_server runs until stopped; returns the process exit code. |options| say which file to load.
int run_server(const config::LoadOptions& options);

// block_server_signals blocks the signals the main thread waits for; call before any thread
// starts so every thread inherits the mask.
void block_server_signals();

}  // namespace accelgate::server
