#pragma once

// Counts of the provider's private operations by op kind and by the engine that served them,
// for tests and for `ACCELGATE_STATS_FILE`: when that variable names a file, the counts are
// written there, one "op engine count" line each, when the provider is torn down and again when
// the process exits (an application that leaks a key never tears the provider down).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "accelgate/offload/op.h"

namespace accelgate::provider {

// count_op records one operation of |kind| that ended on |engine| ("inline": computed by the
// caller's thread outside any async job). Thread-safe.
void count_op(offload::OpKind kind, std::string_view engine);

// op_counts returns the counts so far, keyed "op engine" ("rsa_sign sw").
std::map<std::string, uint64_t> op_counts();

// write_stats_file writes the counts to $ACCELGATE_STATS_FILE, if set.
void write_stats_file();

}  // namespace accelgate::provider
