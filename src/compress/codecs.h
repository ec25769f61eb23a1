#pragma once

// The codec implementations, one file each (zlib_codec.cc, isal_codec.cc,
// libdeflate_codec.cc); codec.cc's make_encoder picks among them.

#include <memory>

#include "accelgate/compress/codec.h"

namespace accelgate::compress {

std::unique_ptr<Encoder> make_zlib_encoder();
std::unique_ptr<Encoder> make_isal_encoder();
std::unique_ptr<Encoder> make_libdeflate_encoder();

}  // namespace accelgate::compress
