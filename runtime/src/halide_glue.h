// Internal: glue between the gelukit runtime and the Halide runtime (error handler, thread
// pool, ISA dispatch hook) shared by all gelukit entry points.
#pragma once

#include <string>

#include "HalideRuntime.h"

namespace gelukit::detail {

// Installs gelukit's Halide error handler and target-feature hook (idempotent, thread-safe).
void ensure_initialized();

// Throws gelukit::Error(ErrorCode::Halide) with Halide's own message if status != 0.
void check_halide_status(int status, const std::string &kernel_name);

}  // namespace gelukit::detail
