#include "halide_glue.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "gelukit/error.h"
#include "gelukit/runtime.h"

namespace gelukit {
namespace {

// Halide reports errors through a process-wide handler whose default calls abort(). Ours
// records the message and returns; the pipeline then returns a non-zero status, which
// check_halide_status() turns into an exception on the calling thread. Errors raised inside
// a parallel loop arrive on a worker thread, hence the mutex-guarded copy beside the
// thread-local one. (Throwing from inside the handler would end in std::terminate.)
thread_local std::string t_last_error;
std::mutex g_error_mutex;
std::string g_last_error;

extern "C" void gelukit_halide_error_handler(void * /*user_context*/, const char *message) {
    t_last_error = message ? message : "(no message)";
    std::lock_guard<std::mutex> lock(g_error_mutex);
    g_last_error = t_last_error;
}

// The levels of the architecture this runtime is compiled for (Isa in runtime.h).
#if defined(__x86_64__)
constexpr Isa kIsaLevels[] = {Isa::SSE41, Isa::AVX2, Isa::AVX512Skylake, Isa::AVX512Zen4, Isa::AVX512SapphireRapids};
#elif defined(__aarch64__)
constexpr Isa kIsaLevels[] = {Isa::Neon, Isa::NeonFp16};
#else
#error "gelukit: unsupported architecture (x86-64 and aarch64 are built)"
#endif
constexpr Isa kLowestIsa = kIsaLevels[0];
constexpr Isa kHighestIsa = kIsaLevels[sizeof(kIsaLevels) / sizeof(kIsaLevels[0]) - 1];

std::atomic<int> g_max_isa{static_cast<int>(kHighestIsa)};
std::atomic<int> g_dispatched_isa{-1};
// Set once any wrapper has asked: a wrapper that rejects every specific sub-target runs its
// last one (the floor: SSE4.1, NEON) without asking about it.
std::atomic<bool> g_any_query{false};

bool has_feature(int count, const uint64_t *features, halide_target_feature_t f) {
    int word = static_cast<int>(f) / 64;
    return word < count && ((features[word] >> (static_cast<int>(f) % 64)) & 1);
}

#if defined(__x86_64__)
enum class Vendor { Intel, AMD, Other };

Vendor cpu_vendor() {
    static const Vendor vendor = [] {
        unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
        __asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(0), "c"(0));
        char id[13];
        std::memcpy(id, &ebx, 4);
        std::memcpy(id + 4, &edx, 4);
        std::memcpy(id + 8, &ecx, 4);
        id[12] = 0;
        const std::string s = id;
        return s == "GenuineIntel" ? Vendor::Intel : s == "AuthenticAMD" ? Vendor::AMD : Vendor::Other;
    }();
    return vendor;
}

// The ISA level a multi-target wrapper asks about, from the features of that sub-target.
Isa isa_level(int count, const uint64_t *features) {
    if (has_feature(count, features, halide_target_feature_avx512_sapphirerapids)) {
        return Isa::AVX512SapphireRapids;
    }
    if (has_feature(count, features, halide_target_feature_avx512_zen4)) {
        return Isa::AVX512Zen4;
    }
    if (has_feature(count, features, halide_target_feature_avx512_skylake)) {
        return Isa::AVX512Skylake;
    }
    if (has_feature(count, features, halide_target_feature_avx2)) {
        return Isa::AVX2;
    }
    return Isa::SSE41;
}

// The CPU (and the OS: XCR0) supports every instruction the code of `level` may contain, read
// from cpuid here rather than trusted to Halide: Halide 21's default check accepted the
// avx512_zen4 objects on a Zen 3 EPYC (AVX2 only), which then died of SIGILL on their first
// AVX-512 instruction (vpmovsxbq into xmm16). The sets are those of LLVM's -mcpu for each
// sub-target (skylake-avx512, znver4, sapphirerapids), as far as the kernels can use them.
struct Cpuid {
    unsigned int a = 0, b = 0, c = 0, d = 0;
};

Cpuid cpuid(unsigned int leaf, unsigned int subleaf) {
    Cpuid r;
    __asm__ volatile("cpuid" : "=a"(r.a), "=b"(r.b), "=c"(r.c), "=d"(r.d) : "a"(leaf), "c"(subleaf));
    return r;
}

bool cpu_supports(Isa level) {
    static const struct Levels {
        bool avx2 = false, avx512_skylake = false, avx512_zen4 = false, avx512_sapphirerapids = false;
    } levels = [] {
        Levels l;
        const unsigned int max_leaf = cpuid(0, 0).a;
        const Cpuid l1 = cpuid(1, 0);
        const bool osxsave = (l1.c >> 27) & 1;
        unsigned long long xcr0 = 0;
        if (osxsave) {
            unsigned int lo = 0, hi = 0;
            __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
        }
        const bool os_avx = (xcr0 & 0x6) == 0x6;        // XMM and YMM state
        const bool os_avx512 = (xcr0 & 0xE6) == 0xE6;   // + opmask, ZMM_Hi256, Hi16_ZMM
        if (max_leaf < 7) {
            return l;
        }
        const Cpuid l7 = cpuid(7, 0);
        const Cpuid l7s1 = l7.a >= 1 ? cpuid(7, 1) : Cpuid{};
        const auto bit = [](unsigned int reg, int n) { return ((reg >> n) & 1) != 0; };
        const bool fma = bit(l1.c, 12), f16c = bit(l1.c, 29), avx = bit(l1.c, 28);
        // The AVX2 object is built for LLVM's haswell (Halide's mcpu for avx2): BMI1/BMI2,
        // LZCNT, MOVBE and POPCNT may appear in it too.
        const bool ext = cpuid(0x80000000u, 0).a >= 0x80000001u;
        const bool lzcnt = ext && bit(cpuid(0x80000001u, 0).c, 5);
        const bool haswell_scalar = bit(l7.b, 3) /* bmi1 */ && bit(l7.b, 8) /* bmi2 */ && lzcnt &&
                                    bit(l1.c, 22) /* movbe */ && bit(l1.c, 23) /* popcnt */;
        l.avx2 = os_avx && avx && fma && f16c && haswell_scalar && bit(l7.b, 5) /* avx2 */;
        l.avx512_skylake = l.avx2 && os_avx512 && bit(l7.b, 16) /* f */ && bit(l7.b, 17) /* dq */ &&
                           bit(l7.b, 28) /* cd */ && bit(l7.b, 30) /* bw */ && bit(l7.b, 31) /* vl */;
        l.avx512_zen4 = l.avx512_skylake && bit(l7.b, 21) /* ifma */ && bit(l7.c, 1) /* vbmi */ &&
                        bit(l7.c, 6) /* vbmi2 */ && bit(l7.c, 8) /* gfni */ && bit(l7.c, 11) /* vnni */ &&
                        bit(l7.c, 12) /* bitalg */ && bit(l7.c, 14) /* vpopcntdq */ && bit(l7s1.a, 5) /* bf16 */;
        l.avx512_sapphirerapids = l.avx512_zen4 && bit(l7s1.a, 4) /* avx-vnni */ && bit(l7.d, 23) /* fp16 */;
        return l;
    }();
    switch (level) {
    case Isa::SSE41:
        return true;  // the x86 floor (README): its object is the wrapper's last, run unasked
    case Isa::AVX2:
        return levels.avx2;
    case Isa::AVX512Skylake:
        return levels.avx512_skylake;
    case Isa::AVX512Zen4:
        return levels.avx512_zen4;
    case Isa::AVX512SapphireRapids:
        return levels.avx512_sapphirerapids;
    default:
        return false;
    }
}

// Vendor-tuned sub-targets only on their vendor's CPUs (see Isa in runtime.h).
bool vendor_allows(Isa level) {
    if (level == Isa::AVX512SapphireRapids) {
        return cpu_vendor() == Vendor::Intel;
    }
    if (level == Isa::AVX512Zen4) {
        return cpu_vendor() == Vendor::AMD;
    }
    return true;
}
#else
Isa isa_level(int count, const uint64_t *features) {
    return has_feature(count, features, halide_target_feature_arm_fp16) ? Isa::NeonFp16 : Isa::Neon;
}

bool vendor_allows(Isa) {
    return true;
}

bool cpu_supports(Isa) {
    return true;  // Halide's default check reads HWCAP (arm_fp16: HWCAP_ASIMDHP)
}
#endif

#if defined(__x86_64__)
// AMX tiles: cpuid and the OS grant (see amx_allowed in halide_glue.h), probed once.
bool amx_hardware_and_os() {
    static const bool ok = [] {
        if (cpuid(0, 0).a < 7) {
            return false;
        }
        const Cpuid l7 = cpuid(7, 0);
        if (((l7.d >> 24) & 1) == 0 || ((l7.d >> 22) & 1) == 0) {  // AMX-TILE, AMX-BF16
            return false;
        }
#if defined(__linux__)
        // ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 (asm/prctl.h, Linux 5.16).
        if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) {
            return false;
        }
        unsigned int lo = 0, hi = 0;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        return ((lo >> 17) & 3) == 3;  // XCR0: XTILECFG and XTILEDATA enabled by the OS
#else
        return false;
#endif
    }();
    return ok;
}
#endif

// Called by each kernel's multi-target wrapper for its sub-targets, most specific first, at its
// first call; the first accepted one is cached by the wrapper. Halide's default check reads the
// CPU's features (x86: cpuid; Linux aarch64: getauxval(AT_HWCAP)).
extern "C" int gelukit_can_use_target_features(int count, const uint64_t *features) {
    g_any_query.store(true);
    const Isa isa = isa_level(count, features);
    const int level = static_cast<int>(isa);
    if (level > g_max_isa.load() || !vendor_allows(isa) || !cpu_supports(isa)) {
        return 0;
    }
    int ok = halide_default_can_use_target_features(count, features);
    if (ok) {
        int prev = g_dispatched_isa.load();
        while (level > prev && !g_dispatched_isa.compare_exchange_weak(prev, level)) {
        }
    }
    return ok;
}

std::once_flag g_init_once;

}  // namespace

const char *isa_name(Isa isa) {
    switch (isa) {
    case Isa::SSE41:
        return "sse41";
    case Isa::AVX2:
        return "avx2";
    case Isa::AVX512Skylake:
        return "avx512_skylake";
    case Isa::AVX512Zen4:
        return "avx512_zen4";
    case Isa::AVX512SapphireRapids:
        return "avx512_sapphirerapids";
    case Isa::Neon:
        return "neon";
    case Isa::NeonFp16:
        return "neon_fp16";
    }
    return "invalid-isa";
}

Isa isa_from_name(const std::string &name) {
    std::string known;
    for (Isa isa : kIsaLevels) {
        if (name == isa_name(isa)) {
            return isa;
        }
        known += (known.empty() ? "" : ", ") + std::string(isa_name(isa));
    }
    throw Error(ErrorCode::InvalidArgument,
                "unknown ISA '" + name + "' (not a level of this build's architecture; expected one of: " + known +
                    ")");
}

void set_max_isa(Isa isa) {
    detail::ensure_initialized();
    // Only the levels of this build's architecture (isa_from_name's check, by name).
    isa_from_name(isa_name(isa));
    if (g_any_query.load()) {
        throw Error(ErrorCode::InvalidArgument,
                    "set_max_isa() must be called before the first kernel call (Halide caches its "
                    "target choice per kernel); set GELUKIT_MAX_ISA in the environment instead");
    }
    g_max_isa.store(static_cast<int>(isa));
}

std::string dispatched_isa() {
    int level = g_dispatched_isa.load();
    if (level < 0) {
        return g_any_query.load() ? std::string(isa_name(kLowestIsa)) : std::string("none");
    }
    return std::string(isa_name(static_cast<Isa>(level)));
}

std::string half_conversion_path() {
    const std::string isa = dispatched_isa();
    if (isa == "none") {
        return isa;
    }
    // F16C is in every x86 sub-target above SSE4.1 (avx2-fma-f16c and the AVX-512 ones);
    // arm_fp16 only in neon_fp16.
    return (isa == "sse41" || isa == "neon") ? "emulated" : "native";
}

// Serialises set_num_threads() with num_threads()'s first-use path below, which writes Halide's
// setting.
namespace {
std::mutex g_num_threads_mutex;
}  // namespace

void set_num_threads(int n) {
    detail::ensure_initialized();
    if (n < 1) {
        throw Error(ErrorCode::InvalidArgument, "set_num_threads: n = " + std::to_string(n) + ", expected >= 1");
    }
    std::lock_guard<std::mutex> lock(g_num_threads_mutex);
    halide_set_num_threads(n);
}

int num_threads() {
    detail::ensure_initialized();
    std::lock_guard<std::mutex> lock(g_num_threads_mutex);
    // halide_get_num_threads() reads the setting under the thread pool's lock; it is 0 until
    // someone sets it or the pool starts. Then the count the pool will use is Halide's default
    // (HL_NUM_THREADS, else the CPU count): halide_set_num_threads(0) fixes that value now.
    // (The earlier set-then-restore emulation returned 0 here and could lose a concurrent
    // set_num_threads(); the concurrency test checks both.)
    int n = halide_get_num_threads();
    if (n == 0) {
        halide_set_num_threads(0);
        n = halide_get_num_threads();
    }
    return n;
}

namespace detail {

bool amx_allowed() {
#if defined(__x86_64__)
    const Isa isa = Isa::AVX512SapphireRapids;
    return static_cast<int>(isa) <= g_max_isa.load() && vendor_allows(isa) && cpu_supports(isa) &&
           amx_hardware_and_os();
#else
    return false;
#endif
}

bool claim_amx_dispatch() {
    // The query is marked before the cap is read, as a Halide dispatch does: a set_max_isa() that
    // comes after this either lowered the cap already (read below) or is refused.
    g_any_query.store(true);
    if (!amx_allowed()) {
        return false;
    }
    const int level = static_cast<int>(Isa::AVX512SapphireRapids);
    int prev = g_dispatched_isa.load();
    while (level > prev && !g_dispatched_isa.compare_exchange_weak(prev, level)) {
    }
    return true;
}

void ensure_initialized() {
    std::call_once(g_init_once, [] {
        halide_set_error_handler(&gelukit_halide_error_handler);
        halide_set_custom_can_use_target_features(&gelukit_can_use_target_features);
        if (const char *env = std::getenv("GELUKIT_MAX_ISA")) {
            try {
                g_max_isa.store(static_cast<int>(isa_from_name(env)));
            } catch (const Error &e) {
                // (e.what() already starts with "gelukit: ", which the new Error adds again.)
                const std::string inner = e.what();
                throw Error(ErrorCode::InvalidArgument,
                            "environment variable GELUKIT_MAX_ISA: " +
                                (inner.rfind("gelukit: ", 0) == 0 ? inner.substr(9) : inner));
            }
        }
    });
}

halide_type_t halide_type_of(DType dt) {
    switch (dt) {
    case DType::F32:
        return halide_type_t(halide_type_float, 32);
    case DType::F16:
        return halide_type_t(halide_type_float, 16);
    case DType::BF16:
        return halide_type_t(halide_type_bfloat, 16);
    }
    return halide_type_t();
}

std::pair<uintptr_t, uintptr_t> byte_range(const TensorView &v) {
    uintptr_t lo = reinterpret_cast<uintptr_t>(v.data);
    int64_t last = 0;
    for (int d = 0; d < v.rank; d++) {
        last += (v.shape[d] - 1) * v.strides[d];
    }
    return {lo, lo + static_cast<uintptr_t>((last + 1) * static_cast<int64_t>(dtype_size(v.dtype)))};
}

bool same_view(const TensorView &a, const TensorView &b) {
    if (a.data != b.data || a.rank != b.rank || a.dtype != b.dtype) {
        return false;
    }
    for (int d = 0; d < a.rank; d++) {
        if (a.shape[d] != b.shape[d] || (a.shape[d] > 1 && a.strides[d] != b.strides[d])) {
            return false;
        }
    }
    return true;
}

void check_output_not_self_overlapping(const std::string &where, const TensorView &v) {
    if (v.numel() <= 1) {
        return;
    }
    std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, extent) of dims with extent > 1
    for (int d = 0; d < v.rank; d++) {
        if (v.shape[d] > 1) {
            dims.push_back({v.strides[d], v.shape[d]});
        }
    }
    std::sort(dims.begin(), dims.end());
    int64_t span = 1;
    for (auto [stride, extent] : dims) {
        if (stride < span) {
            throw Error(ErrorCode::InvalidArgument, where + ": output view overlaps itself (" + v.describe() + ")");
        }
        span = stride * (extent - 1) + span;
    }
}

namespace {

// This thread's stored Halide message, else the shared copy (a message raised on a worker thread
// of a parallel loop only reaches that); both are cleared.
std::string take_halide_error() {
    std::string message = t_last_error;
    {
        std::lock_guard<std::mutex> lock(g_error_mutex);
        if (message.empty()) {
            message = g_last_error;
        }
        g_last_error.clear();
    }
    t_last_error.clear();
    return message;
}

}  // namespace

void check_halide_status(int status, const std::string &kernel_name) {
    if (status == 0) {
        return;
    }
    const std::string message = take_halide_error();
    throw Error(ErrorCode::Halide, kernel_name + " failed with Halide status " + std::to_string(status) + ": " +
                                       (message.empty() ? std::string("(no message)") : message));
}

void clear_halide_error() {
    take_halide_error();
}

}  // namespace detail
}  // namespace gelukit
