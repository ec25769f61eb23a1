#include "accelgate/common/result.h"

#include <cstring>

namespace accelgate {

Error sys_error(const std::string& what, int err) {
  return Error{what + ": " + std::strerror(err), err};
}

}  // namespace accelgate
