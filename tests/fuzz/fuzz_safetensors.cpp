// libFuzzer target for gelukit::SafeTensorsFile (runtime/src/safetensors.cpp), the one part of
// the runtime that parses a file a user may have downloaded.
//
// Input: if it starts with '{', everything up to the first '\n' is the JSON header and the rest
// the data section, and the harness writes the 8-byte length itself (so mutations of the header
// text stay well-framed; the seeds in safetensors_seeds/ are of this form). Otherwise the input is
// the whole file, length field included (mutations of the framing).
//
// Oracle: opening either succeeds or throws gelukit::Error; any other exception, a crash or a
// sanitizer report is a finding. After a successful open every accessor is called for every
// name, and every byte of every view tensor() returns is read (AddressSanitizer reports a view
// that reaches outside the reader's memory), and no view may be larger than the data section.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gelukit/error.h"
#include "gelukit/safetensors.h"

namespace {

[[noreturn]] void finding(const std::string &what) {
    std::fprintf(stderr, "fuzz_safetensors: %s\n", what.c_str());
    std::abort();
}

std::vector<uint8_t> file_bytes(const uint8_t *data, std::size_t size) {
    if (size == 0 || data[0] != '{') {
        return std::vector<uint8_t>(data, data + size);
    }
    const auto *nl = static_cast<const uint8_t *>(std::memchr(data, '\n', size));
    const std::size_t header = nl ? std::size_t(nl - data) : size;
    std::vector<uint8_t> f(8);
    for (int i = 0; i < 8; i++) {
        f[std::size_t(i)] = uint8_t((uint64_t(header) >> (8 * i)) & 0xFF);
    }
    f.insert(f.end(), data, data + header);
    if (nl) {
        f.insert(f.end(), nl + 1, data + size);
    }
    return f;
}

// data_size: the bytes after the header, where every tensor must lie.
void check_open_file(const std::string &path, uint64_t data_size) {
    gelukit::SafeTensorsFile st(path);
    const std::vector<std::string> names = st.names();
    for (std::size_t i = 0; i < names.size(); i++) {
        const std::string &name = names[i];
        if (i > 0 && !(names[i - 1] < name)) {
            finding("names() not sorted and unique");
        }
        if (!st.contains(name)) {
            finding("contains() false for a listed name");
        }
        const std::vector<int64_t> shape = st.shape(name);
        (void)st.stored_dtype(name);
        gelukit::TensorView v;
        try {
            v = st.tensor(name);  // Error for dtypes other than F32/BF16/F16 and rank > 4
        } catch (const gelukit::Error &) {
            continue;
        }
        if (std::size_t(v.rank) != shape.size()) {
            finding("tensor() rank differs from shape()");
        }
        const int64_t numel = v.numel();
        const std::size_t es = gelukit::dtype_size(v.dtype);
        if (numel < 0 || uint64_t(numel) > data_size / es) {
            finding("tensor() view larger than the data section: " + v.describe());
        }
        const std::size_t bytes = std::size_t(numel) * es;
        volatile uint8_t sink = 0;
        const auto *p = static_cast<const uint8_t *>(v.data);
        for (std::size_t b = 0; b < bytes; b++) {
            sink = uint8_t(sink ^ p[b]);
        }
        (void)sink;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, std::size_t size) {
    const std::vector<uint8_t> f = file_bytes(data, size);
    // An anonymous in-memory file, opened by the reader through its /proc/self/fd path.
    const int fd = memfd_create("gelukit_fuzz_safetensors", 0);
    if (fd < 0) {
        finding("memfd_create failed");
    }
    if (!f.empty() && write(fd, f.data(), f.size()) != ssize_t(f.size())) {
        finding("write to the memfd failed");
    }
    try {
        // (A file that opens has a header length within it: the data section is what follows.)
        uint64_t header = 0;
        for (int i = 7; f.size() >= 8 && i >= 0; i--) {
            header = (header << 8) | f[std::size_t(i)];
        }
        const uint64_t data_size = f.size() >= 8 && header <= f.size() - 8 ? f.size() - 8 - header : 0;
        check_open_file("/proc/self/fd/" + std::to_string(fd), data_size);
    } catch (const gelukit::Error &) {
        // a refused file: the expected outcome for most inputs
    } catch (const std::exception &e) {
        finding(std::string("exception other than gelukit::Error: ") + e.what());
    }
    close(fd);
    return 0;
}
