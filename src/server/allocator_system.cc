// The system's allocator (glibc malloc): builds with sanitizers, which bring their own, and
// builds configured with -DAG_MIMALLOC=OFF.

#include "allocator.h"

namespace accelgate::server {

std::string allocator_name() { return "system (glibc malloc)"; }

}  // namespace accelgate::server
