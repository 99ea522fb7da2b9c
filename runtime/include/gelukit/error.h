// gelukit::Error: the one exception type of the gelukit runtime.
//
// Every failure (bad argument, unsupported combination, a Halide pipeline error, a missing
// device) is reported as a gelukit::Error whose what() names the function, the argument and
// what was expected. gelukit never aborts the process: it replaces Halide's default error
// handler (which calls abort()) on first use.
#pragma once

#include <stdexcept>
#include <string>

namespace gelukit {

enum class ErrorCode {
    InvalidArgument,  // null pointer, bad shape/stride, scale <= 0, aliasing, bad name
    Unsupported,      // dtype / form / schedule combination that is not built
    TooLarge,         // a size that does not fit the kernels' index types
    Halide,           // a Halide pipeline returned a non-zero status (message attached)
    NoDevice,         // a GPU kernel was asked for and no usable device is present
};

class Error : public std::runtime_error {
public:
    Error(ErrorCode code, const std::string &message)
        : std::runtime_error("gelukit: " + message), code_(code) {
    }
    ErrorCode code() const noexcept {
        return code_;
    }

private:
    ErrorCode code_;
};

}  // namespace gelukit
