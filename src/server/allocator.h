#pragma once

// The server binary's memory allocator, chosen at configure time (CMake option AG_MIMALLOC):
// allocator_mimalloc.cc or allocator_system.cc is linked into build/accelgate, and only there
// (docs/architecture.md, "Allocator").

#include <string>

namespace accelgate::server {

// allocator_name names the allocator and its version, for `accelgate -v` ("mimalloc 2.0.9",
// "system (glibc malloc)").
std::string allocator_name();

}  // namespace accelgate::server
