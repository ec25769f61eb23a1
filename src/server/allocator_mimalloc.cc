// mimalloc is the server's allocator: the binary links libmimalloc, whose malloc, free and
// friends take the place of glibc's for the whole process (OpenSSL's allocations included).

#include <mimalloc.h>

#include "allocator.h"

namespace accelgate::server {

std::string allocator_name() {
  int v = mi_version();  // 209 for 2.0.9
  return "mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." +
         std::to_string(v % 10);
}

}  // namespace accelgate::server
