// SafeTensorsFile on valid and malformed files: every malformed header is a gelukit::Error naming
// the problem (never a crash, and never a silently accepted ambiguity), and valid files, empty
// tensors and misaligned offsets give the right views. Files are written here with nlohmann-json
// headers (format: 8-byte little-endian header length, JSON header, data section).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gelukit/error.h"
#include "gelukit/safetensors.h"

namespace gelukit {
namespace {

std::string write_file(const std::string &name, const std::string &header, const std::vector<unsigned char> &data) {
    const std::string path = testing::TempDir() + "gelukit_st_" + name + ".safetensors";
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    const uint64_t n = header.size();
    for (int i = 0; i < 8; i++) {
        f.put(static_cast<char>((n >> (8 * i)) & 0xFF));
    }
    f.write(header.data(), std::streamsize(header.size()));
    f.write(reinterpret_cast<const char *>(data.data()), std::streamsize(data.size()));
    return path;
}

std::vector<unsigned char> float_bytes(std::initializer_list<float> v) {
    std::vector<unsigned char> b(v.size() * 4);
    std::memcpy(b.data(), v.begin(), b.size());
    return b;
}

nlohmann::json entry(const char *dtype, std::vector<int64_t> shape, uint64_t begin, uint64_t end) {
    return {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {begin, end}}};
}

// Opening `path` must throw InvalidArgument mentioning `needle`, with a message of sane length.
void expect_refused(const std::string &path, const std::string &needle) {
    try {
        SafeTensorsFile f(path);
        ADD_FAILURE() << path << ": opened; expected an error mentioning '" << needle << "'";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        EXPECT_LT(std::string(e.what()).size(), 1000u) << "message too long";
    }
}

TEST(SafeTensors, ValidFileAndMisalignedOffset) {
    // b: U8[2] at [0, 2); a: F32[2, 2] at [2, 18), misaligned for float (copied at open).
    std::vector<unsigned char> data = {7, 9};
    const std::vector<unsigned char> a = float_bytes({1.0f, -2.0f, 3.5f, 0.25f});
    data.insert(data.end(), a.begin(), a.end());
    nlohmann::json h = {{"__metadata__", {{"format", "pt"}}}, {"a", entry("F32", {2, 2}, 2, 18)},
                        {"b", entry("U8", {2}, 0, 2)}};
    SafeTensorsFile f(write_file("valid", h.dump(), data));
    EXPECT_EQ(f.names(), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(f.shape("a"), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(f.stored_dtype("b"), "U8");
    const TensorView v = f.tensor("a");
    ASSERT_EQ(v.rank, 2);
    EXPECT_EQ(v.strides[0], 2);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data) % 4, 0u);
    const float *p = static_cast<const float *>(v.data);
    EXPECT_EQ(p[0], 1.0f);
    EXPECT_EQ(p[1], -2.0f);
    EXPECT_EQ(p[2], 3.5f);
    EXPECT_EQ(p[3], 0.25f);
    try {
        (void)f.tensor("b");
        ADD_FAILURE() << "U8 tensor() accepted";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("not supported"), std::string::npos) << e.what();
    }
}

// nlohmann-json keeps the last of two equal keys; the reader must refuse the ambiguity (here the
// first "a" is even inconsistent: 9 elements in 16 bytes).
TEST(SafeTensors, DuplicateNameRefused) {
    const std::string header = R"({"a":{"dtype":"F32","shape":[9],"data_offsets":[0,16]},)"
                               R"("a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
    expect_refused(write_file("dup", header, float_bytes({4, 3, 2, 1})), "more than once");
}

// The data section must be entirely indexed: no overlaps, holes or trailing bytes.
TEST(SafeTensors, OverlapsHolesAndTrailingBytesRefused) {
    const std::vector<unsigned char> data = float_bytes({1, 2, 3, 4});
    nlohmann::json overlap = {{"a", entry("F32", {4}, 0, 16)}, {"b", entry("F32", {2}, 4, 12)}};
    expect_refused(write_file("overlap", overlap.dump(), data), "overlap");
    nlohmann::json hole = {{"a", entry("F32", {1}, 0, 4)}, {"b", entry("F32", {2}, 8, 16)}};
    expect_refused(write_file("hole", hole.dump(), data), "unused");
    nlohmann::json trailing = {{"a", entry("F32", {3}, 0, 12)}};
    expect_refused(write_file("trailing", trailing.dump(), data), "trailing");
    nlohmann::json late = {{"a", entry("F32", {3}, 4, 16)}};
    expect_refused(write_file("late", late.dump(), data), "unused");
}

// A shape nested 200,000 arrays deep (400 KB): refused by index, not by dumping the JSON (whose
// recursive dump overflowed the stack: SIGSEGV).
TEST(SafeTensors, DeeplyNestedShapeRefusedWithoutEcho) {
    const int depth = 200000;
    const std::string header = R"({"a":{"dtype":"F32","shape":)" + std::string(depth, '[') + std::string(depth, ']') +
                               R"(,"data_offsets":[0,0]}})";
    expect_refused(write_file("deep", header, {}), "shape entry 0 is not an integer");
}

// An invalid header is reported without quoting all of it (nlohmann's message quotes the token
// it stopped at: here 100,000 bytes).
TEST(SafeTensors, LongInvalidHeaderNotEchoed) {
    expect_refused(write_file("long_token", "{\"" + std::string(100000, 'a'), {}), "not valid JSON");
}

// A zero extent anywhere makes an empty tensor, whatever the other extents are.
TEST(SafeTensors, EmptyTensorsWithHugeExtents) {
    const int64_t big = int64_t(1) << 40;
    nlohmann::json h = {{"tail_zero", entry("F32", {big, big, 0}, 0, 0)},
                        {"head_zero", entry("F32", {0, big, big}, 0, 0)},
                        {"rows_zero", entry("F32", {0, 768}, 4, 4)},
                        {"x", entry("F32", {1}, 0, 4)}};
    SafeTensorsFile f(write_file("empty", h.dump(), float_bytes({5})));
    for (const char *name : {"tail_zero", "head_zero"}) {
        const TensorView v = f.tensor(name);
        EXPECT_EQ(v.numel(), 0) << name;
    }
    // A valid empty tensor whose strides fit keeps the contiguous ones (torch.empty(0, 768)).
    const TensorView rows = f.tensor("rows_zero");
    EXPECT_EQ(rows.strides[0], 768);
    EXPECT_EQ(rows.strides[1], 1);
    EXPECT_EQ(*static_cast<const float *>(f.tensor("x").data), 5.0f);
}

TEST(SafeTensors, MovedFromObjectIsAnError) {
    nlohmann::json h = {{"x", entry("F32", {1}, 0, 4)}};
    SafeTensorsFile a(write_file("moved", h.dump(), float_bytes({1})));
    SafeTensorsFile b(std::move(a));
    EXPECT_EQ(b.names().size(), 1u);
    for (int call = 0; call < 3; call++) {
        try {
            if (call == 0) {
                (void)a.names();
            } else if (call == 1) {
                (void)a.tensor("x");
            } else {
                (void)a.path();
            }
            ADD_FAILURE() << "call " << call << " on a moved-from SafeTensorsFile returned";
        } catch (const Error &e) {
            EXPECT_NE(std::string(e.what()).find("moved from"), std::string::npos) << e.what();
        }
    }
}

}  // namespace
}  // namespace gelukit
