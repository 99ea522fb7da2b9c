// Safetensors reader (see gelukit/safetensors.h for the format and the checks made).
#include "gelukit/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "gelukit/error.h"
#include "halide_glue.h"

namespace gelukit {
namespace {

constexpr std::size_t kAlign = 64;

struct FreeDeleter {
    void operator()(unsigned char *p) const noexcept {
        std::free(p);
    }
};
using AlignedBytes = std::unique_ptr<unsigned char[], FreeDeleter>;

AlignedBytes aligned_bytes(std::size_t n) {
    std::size_t rounded = (n / kAlign + 1) * kAlign;  // >= kAlign, a multiple of kAlign
    auto *p = static_cast<unsigned char *>(std::aligned_alloc(kAlign, rounded));
    if (p == nullptr) {
        throw Error(ErrorCode::TooLarge, "SafeTensorsFile: cannot allocate " + std::to_string(n) + " bytes");
    }
    return AlignedBytes(p);
}

// Element size in bytes of a safetensors dtype string; 0 if unknown.
std::size_t stored_dtype_size(const std::string &dt) {
    static const std::map<std::string, std::size_t> sizes = {
        {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2},
        {"U16", 2},  {"F16", 2}, {"BF16", 2}, {"I32", 4},    {"U32", 4},     {"F32", 4},
        {"F64", 8},  {"I64", 8}, {"U64", 8}};
    auto it = sizes.find(dt);
    return it == sizes.end() ? 0 : it->second;
}

bool to_gelukit_dtype(const std::string &dt, DType *out) {
    if (dt == "F32") {
        *out = DType::F32;
    } else if (dt == "BF16") {
        *out = DType::BF16;
    } else if (dt == "F16") {
        *out = DType::F16;
    } else {
        return false;
    }
    return true;
}

// A shape for messages: at most the first 8 extents (a hostile header can hold millions).
std::string shape_text(const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size() && i < 8; i++) {
        s += (i ? ", " : "") + std::to_string(shape[i]);
    }
    if (shape.size() > 8) {
        s += ", ... (" + std::to_string(shape.size()) + " entries)";
    }
    return s + "]";
}

// A name for messages, cut at 200 bytes.
std::string name_text(const std::string &name) {
    return name.size() <= 200 ? name : name.substr(0, 200) + "...";
}

bool host_is_little_endian() {
    const uint16_t one = 1;
    unsigned char b;
    std::memcpy(&b, &one, 1);
    return b == 1;
}

}  // namespace

struct SafeTensorsFile::Impl {
    struct Entry {
        std::string dtype;
        std::vector<int64_t> shape;
        uint64_t begin = 0, end = 0;         // byte offsets into the data section
        AlignedBytes copy;                   // set when data + begin is misaligned for the dtype
        const unsigned char *ptr = nullptr;  // the tensor's first byte (data + begin or copy)
    };

    std::string path;
    AlignedBytes data;  // the data section, 64-byte aligned
    uint64_t data_size = 0;
    std::map<std::string, Entry> entries;

    [[noreturn]] void fail(const std::string &what) const {
        throw Error(ErrorCode::InvalidArgument, "SafeTensorsFile: " + path + ": " + what);
    }
    [[noreturn]] void fail(const std::string &name, const std::string &what) const {
        fail("tensor \"" + name_text(name) + "\": " + what);
    }
    const Entry &find(const std::string &name) const {
        auto it = entries.find(name);
        if (it == entries.end()) {
            fail(name, "no such tensor in the file (" + std::to_string(entries.size()) + " tensors)");
        }
        return it->second;
    }

    void read_file();
    void parse_entry(const std::string &name, const nlohmann::json &value);
    void check_coverage() const;
};

void SafeTensorsFile::Impl::read_file() {
    std::FILE *f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) {
        fail("cannot open file: " + std::string(std::strerror(errno)));
    }
    std::unique_ptr<std::FILE, int (*)(std::FILE *)> closer(f, &std::fclose);
    if (std::fseek(f, 0, SEEK_END) != 0) {
        fail("cannot seek: " + std::string(std::strerror(errno)));
    }
    long file_size_l = std::ftell(f);
    if (file_size_l < 0 || std::fseek(f, 0, SEEK_SET) != 0) {
        fail("cannot determine the file size");
    }
    const uint64_t file_size = static_cast<uint64_t>(file_size_l);
    if (file_size < 8) {
        fail("file is " + std::to_string(file_size) + " bytes, shorter than the 8-byte header length");
    }
    unsigned char len_bytes[8];
    if (std::fread(len_bytes, 1, 8, f) != 8) {
        fail("cannot read the header length");
    }
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--) {
        header_len = (header_len << 8) | len_bytes[i];
    }
    if (header_len > file_size - 8) {
        fail("header length " + std::to_string(header_len) + " exceeds the " + std::to_string(file_size - 8) +
             " bytes after the length field (truncated or not a safetensors file)");
    }
    std::string header(static_cast<std::size_t>(header_len), '\0');
    if (header_len > 0 && std::fread(&header[0], 1, header.size(), f) != header.size()) {
        fail("cannot read the " + std::to_string(header_len) + "-byte header");
    }
    data_size = file_size - 8 - header_len;
    data = aligned_bytes(static_cast<std::size_t>(data_size));
    if (data_size > 0 && std::fread(data.get(), 1, data_size, f) != data_size) {
        fail("cannot read the " + std::to_string(data_size) + "-byte data section");
    }

    // nlohmann::json keeps the last of two equal keys silently; the callback sees every key of
    // the top-level object (depth 1) as it is parsed, so a duplicate tensor name is refused (which
    // of two entries would be "the" tensor is not defined by the format).
    nlohmann::json j;
    std::string duplicate;
    std::map<std::string, int> seen;
    auto on_event = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json &parsed) {
        if (depth == 1 && event == nlohmann::json::parse_event_t::key && parsed.is_string() &&
            seen[parsed.get<std::string>()]++ == 1 && duplicate.empty()) {
            duplicate = parsed.get<std::string>();
        }
        return true;
    };
    try {
        j = nlohmann::json::parse(header, on_event);
    } catch (const nlohmann::json::exception &e) {
        // (nlohmann's message quotes the token it stopped at, which can be the whole header.)
        std::string what = e.what();
        if (what.size() > 300) {
            what = what.substr(0, 300) + "...";
        }
        fail("header is not valid JSON: " + what);
    }
    if (!duplicate.empty()) {
        fail("header names \"" + name_text(duplicate) + "\" more than once");
    }
    if (!j.is_object()) {
        fail("header is not a JSON object");
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (it.key() != "__metadata__") {
            parse_entry(it.key(), it.value());
        }
    }
    check_coverage();
}

// The format requires the data section to be "entirely indexed" without holes or overlaps (the
// reference implementation, huggingface/safetensors, refuses both: a hole can hide a second file
// inside the first, and an overlap makes two tensors alias). Sorted by offset, each tensor must
// start where the previous one ended, the first at 0, and the last must end at the end of the
// file. (Zero-byte tensors sit at any boundary.)
void SafeTensorsFile::Impl::check_coverage() const {
    std::vector<std::pair<std::pair<uint64_t, uint64_t>, const std::string *>> ranges;
    for (const auto &kv : entries) {
        ranges.push_back({{kv.second.begin, kv.second.end}, &kv.first});
    }
    std::sort(ranges.begin(), ranges.end());
    uint64_t covered = 0;
    for (const auto &r : ranges) {
        const uint64_t begin = r.first.first, end = r.first.second;
        if (begin > covered) {
            fail(*r.second, "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                                "] leave bytes [" + std::to_string(covered) + ", " + std::to_string(begin) +
                                ") of the data section unused (the format allows no holes)");
        }
        if (begin < covered) {
            fail(*r.second, "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                                "] overlap another tensor's bytes (which end at " + std::to_string(covered) + ")");
        }
        covered = end;
    }
    if (covered != data_size) {
        fail("the tensors cover " + std::to_string(covered) + " of the " + std::to_string(data_size) +
             " bytes of the data section (the format allows no trailing bytes)");
    }
}

void SafeTensorsFile::Impl::parse_entry(const std::string &name, const nlohmann::json &v) {
    auto non_negative_int = [](const nlohmann::json &x) {
        return x.is_number_unsigned() || (x.is_number_integer() && x.get<int64_t>() >= 0);
    };
    if (!v.is_object()) {
        fail(name, "header entry is not a JSON object");
    }
    auto dt = v.find("dtype");
    auto sh = v.find("shape");
    auto off = v.find("data_offsets");
    if (dt == v.end() || !dt->is_string()) {
        fail(name, "missing or non-string \"dtype\"");
    }
    if (sh == v.end() || !sh->is_array()) {
        fail(name, "missing or non-array \"shape\"");
    }
    if (off == v.end() || !off->is_array() || off->size() != 2 || !non_negative_int((*off)[0]) ||
        !non_negative_int((*off)[1])) {
        fail(name, "\"data_offsets\" is not an array of two non-negative integers");
    }
    Entry e;
    e.dtype = dt->get<std::string>();
    // (The shape is described by index, never dumped: a hostile header can nest arrays deeply
    // enough that nlohmann's recursive dump() overflows the stack.)
    for (std::size_t i = 0; i < sh->size(); i++) {
        const nlohmann::json &d = (*sh)[i];
        if (!non_negative_int(d) || d.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            fail(name, "shape entry " + std::to_string(i) + " is not an integer in [0, 2^63) (JSON " +
                           d.type_name() + ")");
        }
        e.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
    }
    // numel, in uint64; more than 2^64 only counts if no extent is 0 (a zero extent anywhere
    // makes an empty tensor, whatever the others are).
    uint64_t numel = 1;
    bool overflow = false;
    for (int64_t extent : e.shape) {
        if (extent == 0) {
            numel = 0;
            overflow = false;
            break;
        }
        if (numel > std::numeric_limits<uint64_t>::max() / uint64_t(extent)) {
            overflow = true;
        }
        numel *= uint64_t(extent);
    }
    e.begin = (*off)[0].get<uint64_t>();
    e.end = (*off)[1].get<uint64_t>();
    if (e.begin > e.end || e.end > data_size) {
        fail(name, "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                       "] are not a range within the " + std::to_string(data_size) + "-byte data section");
    }
    const std::size_t elem = stored_dtype_size(e.dtype);
    if (elem != 0) {
        const uint64_t bytes = e.end - e.begin;
        if (overflow || numel > std::numeric_limits<uint64_t>::max() / elem || numel * elem != bytes) {
            const std::string need =
                overflow ? std::string("more than 2^64") : std::to_string(numel) + " × " + std::to_string(elem);
            fail(name, e.dtype + " shape " + shape_text(e.shape) + " needs " + need + " bytes but data_offsets span " +
                           std::to_string(bytes));
        }
    }
    e.ptr = data.get() + e.begin;
    DType gdt;
    if (to_gelukit_dtype(e.dtype, &gdt) && e.begin % dtype_size(gdt) != 0) {
        e.copy = aligned_bytes(static_cast<std::size_t>(e.end - e.begin));
        std::memcpy(e.copy.get(), e.ptr, static_cast<std::size_t>(e.end - e.begin));
        e.ptr = e.copy.get();
    }
    entries.emplace(name, std::move(e));
}

SafeTensorsFile::SafeTensorsFile(const std::string &path) : impl_(new Impl) {
    impl_->path = path;
    if (!host_is_little_endian()) {
        throw Error(ErrorCode::Unsupported, "SafeTensorsFile: " + path + ": big-endian hosts are not supported");
    }
    impl_->read_file();
}

SafeTensorsFile::~SafeTensorsFile() = default;
SafeTensorsFile::SafeTensorsFile(SafeTensorsFile &&) noexcept = default;
SafeTensorsFile &SafeTensorsFile::operator=(SafeTensorsFile &&) noexcept = default;

const std::string &SafeTensorsFile::path() const {
    return detail::live_impl(impl_, "SafeTensorsFile", "path").path;
}

std::vector<std::string> SafeTensorsFile::names() const {
    std::vector<std::string> out;
    const Impl &im = detail::live_impl(impl_, "SafeTensorsFile", "names");
    out.reserve(im.entries.size());
    for (const auto &kv : im.entries) {
        out.push_back(kv.first);
    }
    return out;
}

bool SafeTensorsFile::contains(const std::string &name) const {
    return detail::live_impl(impl_, "SafeTensorsFile", "contains").entries.count(name) != 0;
}

std::vector<int64_t> SafeTensorsFile::shape(const std::string &name) const {
    return detail::live_impl(impl_, "SafeTensorsFile", "shape").find(name).shape;
}

const std::string &SafeTensorsFile::stored_dtype(const std::string &name) const {
    return detail::live_impl(impl_, "SafeTensorsFile", "stored_dtype").find(name).dtype;
}

DType SafeTensorsFile::dtype(const std::string &name) const {
    const Impl &im = detail::live_impl(impl_, "SafeTensorsFile", "dtype");
    const Impl::Entry &e = im.find(name);
    DType dt;
    if (!to_gelukit_dtype(e.dtype, &dt)) {
        im.fail(name, "dtype " + name_text(e.dtype) + " is not supported (F32, BF16 or F16 expected)");
    }
    return dt;
}

TensorView SafeTensorsFile::tensor(const std::string &name) const {
    const Impl &im = detail::live_impl(impl_, "SafeTensorsFile", "tensor");
    const Impl::Entry &e = im.find(name);
    const DType dt = dtype(name);
    if (e.shape.size() > static_cast<std::size_t>(TensorView::kMaxRank)) {
        im.fail(name, "rank " + std::to_string(e.shape.size()) + " exceeds TensorView::kMaxRank = " +
                              std::to_string(TensorView::kMaxRank));
    }
    TensorView v;
    v.data = const_cast<unsigned char *>(e.ptr);  // read-only: see safetensors.h
    v.dtype = dt;
    v.rank = static_cast<int>(e.shape.size());
    // Row-major strides as TensorView::contiguous gives them (an extent 0 counts as 1). An empty
    // tensor (some extent 0) addresses no element, and its other extents may be too large for
    // int64 strides although the file is valid: then it gets strides 1.
    const bool empty = std::find(e.shape.begin(), e.shape.end(), int64_t(0)) != e.shape.end();
    int64_t stride = 1;
    bool overflow = false;
    for (int d = v.rank - 1; d >= 0; d--) {
        v.shape[d] = e.shape[static_cast<std::size_t>(d)];
        v.strides[d] = stride;
        overflow = overflow || __builtin_mul_overflow(stride, v.shape[d] > 0 ? v.shape[d] : 1, &stride);
    }
    if (overflow) {
        if (!empty) {
            im.fail(name, "shape too large for int64 strides");
        }
        for (int d = 0; d < v.rank; d++) {
            v.strides[d] = 1;
        }
    }
    return v;
}

}  // namespace gelukit
