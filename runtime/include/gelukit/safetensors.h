// gelukit::SafeTensorsFile: a small read-only reader for the safetensors format
// (https://huggingface.co/docs/safetensors, "Format"), used to load real model weights such as
// all-MiniLM-L6-v2 into TensorViews.
//
// File layout: 8 bytes N (unsigned 64-bit little-endian), then N bytes of UTF-8 JSON header, then
// the data section. The header is an object mapping each tensor name to
//   {"dtype": "F32", "shape": [d0, d1, ...], "data_offsets": [begin, end]}
// (offsets in bytes, relative to the start of the data section, end exclusive), plus an optional
// "__metadata__" object of strings, which is skipped. Tensors are dense, row-major (C order),
// dimension 0 outermost, little-endian.
//
// Storage: the constructor reads the whole file into memory owned by the object (no mmap), with the
// data section at a 64-byte-aligned address; a tensor whose offset is not a multiple of its element
// size is copied once, at open, into its own aligned buffer. Views returned by tensor() point into
// that memory and stay valid for the lifetime of the SafeTensorsFile (moves keep them valid). The
// object is read-only after construction, so all const members may be called concurrently.
//
// Dtypes: F32 -> DType::F32, BF16 -> DType::BF16, F16 -> DType::F16. Other safetensors dtypes
// (F64, I64, I32, U8, BOOL, F8_*, ...) are accepted in the file and reported by names(), shape()
// and stored_dtype(), but dtype() and tensor() reject them. The host must be little-endian.
//
// Errors: gelukit::Error (ErrorCode::InvalidArgument), with a message naming the file and, where
// there is one, the tensor, for: a file that cannot be opened or read, a file shorter than 8
// bytes, a header length larger than the rest of the file, a header that is not valid JSON or not
// a JSON object, an entry without a string "dtype", an integer "shape" array (values >= 0) or a
// two-integer "data_offsets" array with begin <= end, a data_offsets range outside the data
// section, a byte size that differs from numel × element size (for known dtypes), a tensor name
// given twice, tensors whose byte ranges overlap or leave a hole or trailing bytes in the data
// section (the format requires it to be "entirely indexed"), and, from the
// accessors, an unknown tensor name, a dtype other than F32/BF16/F16 (dtype(), tensor()) or a rank
// above TensorView::kMaxRank = 4 (tensor()), and any call on a moved-from object. Messages
// never echo the header's JSON (a shape is shown by at most 8 extents). Nothing aborts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gelukit/tensor.h"

namespace gelukit {

class SafeTensorsFile {
public:
    // Reads and validates the whole file (header and every entry's offsets and size).
    explicit SafeTensorsFile(const std::string &path);
    ~SafeTensorsFile();
    SafeTensorsFile(SafeTensorsFile &&) noexcept;
    SafeTensorsFile &operator=(SafeTensorsFile &&) noexcept;

    const std::string &path() const;

    // All tensor names of the header (without "__metadata__"), sorted by name.
    std::vector<std::string> names() const;
    bool contains(const std::string &name) const;

    // Shape, outermost dimension first (empty for a scalar). Any stored dtype.
    std::vector<int64_t> shape(const std::string &name) const;
    // The dtype string as stored in the header: "F32", "BF16", "I64", ... Any stored dtype.
    const std::string &stored_dtype(const std::string &name) const;
    // The stored dtype as a gelukit::DType; throws for dtypes other than F32/BF16/F16.
    DType dtype(const std::string &name) const;

    // A dense row-major view (TensorView::contiguous strides) of the tensor's bytes in this file's
    // memory. The data is read-only: TensorView::data is a non-const void* only because TensorView
    // has no const variant (it is const_cast here); writing through it is undefined behaviour.
    TensorView tensor(const std::string &name) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace gelukit
