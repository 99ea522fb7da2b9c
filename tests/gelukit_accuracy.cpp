// gelukit_accuracy: ULP error of a GELU kernel against the independent double-precision
// reference (tests/support/reference.h), over every input (--exhaustive), every input in a range
// (--range LO HI) or a sample (--samples N, the default).
//
//   gelukit_accuracy --form erf --direction forward --dtype f32 --exhaustive
//   gelukit_accuracy --form sigmoid --direction backward --math fast --dy 3e38 --range -125 -2
//
// Backward compares dx = dy GELU'(x) for one dy (--dy, default 1; rounded to the storage type)
// against dy times the reference GELU'(x), rounded once: a large |dy| checks the negative tail,
// where GELU'(x) alone is below the storage type's range but the product is not.
//
// The last line printed is always "max_ulp=<value> x=<input bits in hex>". For the backward
// direction the 0.01-wide window around the root of GELU' is excluded from max_ulp and reported
// as max_abs_err_root instead (relative error is unbounded at a root). Exit status 1 if
// --max-ulp is given and exceeded, 2 on a bad argument or any other error (with a message).
// Bounds: --samples 1 to 2^32 (every float32 input; beyond 2^31 the lattice is all of them, held
// in memory: --exhaustive streams them), --threads 1 to 1024, --profile-range lo < hi, both
// finite in the storage type; --range lo <= hi, both finite in the storage type, not with
// --exhaustive; --dy finite in the storage type, backward only.
//
// --profile FILE additionally writes the error on an even grid of x (--profile-range, 
// --profile-points) as CSV "x,ulp" (backward: dy = 1, the ULP error of GELU'(x)); the main job
// plots these (scripts/gelukit_report.py).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "gelukit/error.h"
#include "gelukit/gelu.h"
#include "gelukit/runtime.h"
#include "support/harness.h"
#include "support/reference.h"
#include "support/sweep.h"

namespace {

constexpr uint64_t kMaxSamples = uint64_t(1) << 32;  // every float32 bit pattern
constexpr int kMaxThreads = 1024;

// --samples: a decimal integer in [1, 2^32]. Checked on the text: CLI11 reads "-1" into an
// unsigned option as 2^64 - 1 and 2^64 and beyond as 2^64 - 1 (strtoull).
std::string check_samples(const std::string &text) {
    const auto b = text.find_first_not_of(" \t");
    if (b != std::string::npos && text[b] == '-') return "must not be negative (got " + text + ")";
    const std::string t = b == std::string::npos ? "" : text.substr(b, text.find_last_not_of(" \t") - b + 1);
    uint64_t v = 0;
    const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    const std::string bounds = "an integer from 1 to " + std::to_string(kMaxSamples) + " (2^32, every float32 input)";
    if (ec == std::errc::result_out_of_range) return "must be " + bounds + " (got " + text + ")";
    if (t.empty() || ec != std::errc() || ptr != t.data() + t.size()) return text + " is not an integer";
    // CLI11 converts the value with base 0 (strtoull): a leading 0 would be read as octal.
    if (t.size() > 1 && t[0] == '0') return text + " has a leading 0 (CLI11 would read it as octal): write it without";
    if (v < 1 || v > kMaxSamples) return "must be " + bounds + " (got " + text + ")";
    return "";
}

// Largest finite value of the storage type: a profile bound beyond it would be rounded to inf.
double max_finite(const std::string &dtype) {
    return dtype == "f16" ? 65504.0 : dtype == "bf16" ? 3.3895313892515355e38 : 3.4028234663852886e38;
}

// The sweep starts --threads std::threads at once (tests/support/sweep.cpp), next to the kernel's
// Halide thread pool (as many workers, at most 256); one that cannot be started there (a process
// or address-space limit) leaves the started ones joinable, and std::terminate follows. So first
// check that this many can run at once: "" or why not.
std::string start_threads(int n) {
    std::mutex m;
    std::condition_variable cv;
    bool go = false;
    std::vector<std::thread> workers;
    std::string why;
    try {
        workers.reserve(static_cast<std::size_t>(n));
        for (int i = 0; i < n; i++) {
            workers.emplace_back([&] {
                std::unique_lock<std::mutex> lock(m);
                cv.wait(lock, [&] { return go; });
            });
        }
    } catch (const std::exception &e) {
        why = "started " + std::to_string(workers.size()) + ", then: " + e.what();
    }
    {
        std::lock_guard<std::mutex> lock(m);
        go = true;
    }
    cv.notify_all();
    for (auto &w : workers) w.join();
    return why;
}

int run(int argc, char **argv) {
    using namespace gelukit;
    CLI::App app{"ULP error of a gelukit GELU kernel against a double-precision reference"};
    std::string form = "erf", direction = "forward", dtype = "f32", math = "acc", schedule = "hand";
    bool exhaustive = false;
    uint64_t samples = uint64_t(1) << 24;
    int threads = 2;
    float scale = 1.0f;
    long long max_ulp_allowed = -1;
    std::string profile_file;
    std::vector<double> profile_range = {-10.0, 10.0};
    int profile_points = 4001;
    std::vector<double> range;
    double dy = 1.0;
    app.add_option("--form", form, "erf | tanh | sigmoid (or a config name such as gelu_new)");
    app.add_option("--direction", direction, "forward | backward")->check(CLI::IsMember({"forward", "backward"}));
    app.add_option("--dtype", dtype, "f32 | bf16 | f16")->check(CLI::IsMember({"f32", "bf16", "f16"}));
    app.add_option("--math", math, "acc | fast")->check(CLI::IsMember({"acc", "fast"}));
    app.add_option("--schedule", schedule, "naive | hand | adams2019 | tuned")
        ->check(CLI::IsMember({"naive", "hand", "adams2019", "tuned"}));
    app.add_flag("--exhaustive", exhaustive, "every input: 2^32 for f32, 2^16 for bf16/f16");
    CLI::Option *range_opt =
        app.add_option("--range", range, "every input x with lo <= x <= hi: lo hi, both finite, lo <= hi")->expected(2);
    CLI::Option *dy_opt = app.add_option(
        "--dy", dy,
        "backward: the upstream gradient dy of every input of the sweep (default 1; the --profile grid keeps dy = 1; "
        "above about max/1.13 the positive side's dy GELU'(x) overflows)");
    CLI::Option *samples_opt =
        app.add_option("--samples", samples, "number of lattice samples over the f32 bit space (1 to 2^32)")
        ->check(CLI::Validator(check_samples, "UINT in [1 - 2^32]"));
    app.add_option("--threads", threads, "threads for the kernel and the reference (1 to 1024)")
        ->check(CLI::Range(1, kMaxThreads));
    app.add_option("--scale", scale, "s of the scaled exact form x*Phi(x/s)");
    app.add_option("--max-ulp", max_ulp_allowed, "exit 1 if the maximum ULP error exceeds this");
    app.add_option("--profile", profile_file, "also write the ULP error on a grid of x to this CSV file (x,ulp)");
    app.add_option("--profile-range", profile_range, "x range of the profile grid: lo hi, lo < hi, both finite")
        ->expected(2);
    app.add_option("--profile-points", profile_points, "points of the profile grid")->check(CLI::Range(2, 1 << 24));
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        // CLI11 prints the message (or the help: status 0); a bad argument exits 2.
        return app.exit(e) == 0 ? 0 : 2;
    }
    // An x range: both ends finite in the storage type, lo < hi (or lo <= hi where equal_ok).
    auto range_ok = [&](const char *name, const std::vector<double> &r, bool equal_ok) {
        const double lo = r[0], hi = r[1], lim = max_finite(dtype);
        if (!std::isfinite(lo) || !std::isfinite(hi) || std::fabs(lo) > lim || std::fabs(hi) > lim) {
            std::fprintf(stderr, "gelukit_accuracy: error: %s %g %g: both ends must be finite %s values (|x| <= %g)\n",
                         name, lo, hi, dtype.c_str(), lim);
            return false;
        }
        if (equal_ok ? !(lo <= hi) : !(lo < hi)) {
            std::fprintf(stderr, "gelukit_accuracy: error: %s %g %g: lo must %s hi\n", name, lo, hi,
                         equal_ok ? "not exceed" : "be less than");
            return false;
        }
        return true;
    };
    if (!range_ok("--profile-range", profile_range, /*equal_ok=*/false)) {
        return 2;
    }
    if (range_opt->count() > 0) {
        if (!range_ok("--range", range, /*equal_ok=*/true)) {
            return 2;
        }
        if (exhaustive || samples_opt->count() > 0) {
            std::fprintf(stderr, "gelukit_accuracy: error: --range and %s exclude each other\n",
                         exhaustive ? "--exhaustive" : "--samples");
            return 2;
        }
    }
    if (dy_opt->count() > 0) {
        if (direction != "backward") {
            std::fprintf(stderr, "gelukit_accuracy: error: --dy %g: only for --direction backward\n", dy);
            return 2;
        }
        if (!std::isfinite(dy) || std::fabs(dy) > max_finite(dtype)) {
            std::fprintf(stderr, "gelukit_accuracy: error: --dy %g: must be a finite %s value (|dy| <= %g)\n", dy,
                         dtype.c_str(), max_finite(dtype));
            return 2;
        }
    }

    try {
        test::SweepConfig cfg;
        cfg.direction = direction == "forward" ? Direction::Forward : Direction::Backward;
        cfg.dtype = dtype == "f32" ? DType::F32 : dtype == "bf16" ? DType::BF16 : DType::F16;
        cfg.options.form = form_from_name(form);
        cfg.options.math = math == "acc" ? Math::Accurate : Math::Fast;
        cfg.options.schedule = schedule == "naive" ? Schedule::Naive
                               : schedule == "hand" ? Schedule::Hand
                               : schedule == "tuned" ? Schedule::Tuned
                                                    : Schedule::Adams2019;
        cfg.options.scale = scale;
        cfg.threads = threads;
        cfg.dy = dy;
        if (const std::string why = start_threads(threads + std::min(threads, 256)); !why.empty()) {
            std::fprintf(stderr, "gelukit_accuracy: error: --threads %d: cannot run that many threads here (the sweep's and the "
                         "kernel's thread pool's: %s)\n",
                         threads, why.c_str());
            return 2;
        }
        set_num_threads(threads);
        // The profile file is opened before the sweep, so that a path that cannot be written
        // fails at once instead of after an exhaustive run.
        FILE *profile = nullptr;
        if (!profile_file.empty() && !(profile = std::fopen(profile_file.c_str(), "w"))) {
            std::fprintf(stderr, "cannot write %s\n", profile_file.c_str());
            return 2;
        }
        auto t0 = std::chrono::steady_clock::now();
        const bool ranged = !range.empty();
        test::SweepResult r = exhaustive ? test::sweep_exhaustive(cfg, /*show_progress=*/true)
                              : ranged   ? test::sweep_range(cfg, range[0], range[1])
                                         : test::sweep_sampled(cfg, samples);
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (ranged && r.count == 0) {
            // An empty sweep would pass any --max-ulp: a range between two neighbours is an error.
            std::fprintf(stderr, "gelukit_accuracy: error: --range %g %g: no %s value lies in it\n", range[0], range[1],
                         dtype.c_str());
            if (profile) {
                std::fclose(profile);
            }
            return 2;
        }
        if (profile) {
            // Grid values rounded to the storage type, run through the kernel in one call.
            std::vector<uint32_t> xb(static_cast<std::size_t>(profile_points));
            const double lo = profile_range[0], hi = profile_range[1];
            for (int i = 0; i < profile_points; i++) {
                xb[i] = test::to_bits(lo + (hi - lo) * i / (profile_points - 1), cfg.dtype);
            }
            std::vector<uint32_t> yb;
            if (cfg.direction == Direction::Forward) {
                yb = test::run_forward(xb, cfg.dtype, cfg.options);
            } else {
                yb = test::run_backward(xb, std::vector<uint32_t>(xb.size(), test::to_bits(1.0, cfg.dtype)), cfg.dtype,
                                        cfg.options);
            }
            std::fprintf(profile, "x,ulp\n");
            long long profile_max = 0;
            for (std::size_t i = 0; i < xb.size(); i++) {
                const double x = test::bits_to_double(xb[i], cfg.dtype);
                const test::RefValue ref = cfg.direction == Direction::Forward
                                               ? test::gelu_ref(cfg.options.form, x, cfg.options.scale)
                                               : test::gelu_grad_ref(cfg.options.form, x, cfg.options.scale);
                const long long u =
                    static_cast<long long>(test::ulp_distance(yb[i], test::round_to_bits(ref, cfg.dtype), cfg.dtype));
                profile_max = std::max(profile_max, u);
                std::fprintf(profile, "%.9g,%lld\n", x, u);
            }
            if (std::fclose(profile) != 0) {
                std::fprintf(stderr, "error writing %s\n", profile_file.c_str());
                return 2;
            }
            // The grid's maximum is over these points only: it can differ from the sweep's max_ulp
            // below, which is over the sweep's inputs (the plot shows the grid).
            std::printf("profile: %d points in [%g, %g] written to %s, their max_ulp=%lld (grid points only)\n",
                        profile_points, lo, hi, profile_file.c_str(), profile_max);
        }
        std::string mode = exhaustive ? "exhaustive" : "sampled";
        if (ranged) {
            char buf[96];
            std::snprintf(buf, sizeof(buf), "range[%.9g,%.9g]", range[0], range[1]);
            mode = buf;
        }
        if (cfg.direction == Direction::Backward) {
            char buf[64];
            std::snprintf(buf, sizeof(buf), " dy=%.9g", test::bits_to_double(test::to_bits(dy, cfg.dtype), cfg.dtype));
            mode += buf;
        }
        std::printf("kernel=gelu_%s_%s_%s_%s_%s scale=%g mode=%s seconds=%.1f isa=%s\n",
                    direction == "forward" ? "fwd" : "bwd", dtype.c_str(), form_name(cfg.options.form),
                    math.c_str(), schedule.c_str(), scale, mode.c_str(), secs, dispatched_isa().c_str());
        std::printf("worst input (max_ulp below): x=%.9g\n", test::bits_to_double(r.worst_bits, cfg.dtype));
        // Last line, always (the format the README documents): max_ulp=<v> x=<input bits in hex>.
        std::printf("%s\n", r.summary(cfg.dtype).c_str());
        return (max_ulp_allowed >= 0 && r.max_ulp > max_ulp_allowed) ? 1 : 0;
    } catch (const gelukit::Error &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
    }
}

// Beyond the last resort: std::terminate (an exception escaping a thread, or the sweep's
// std::threads left unjoined when one of them could not be started despite start_threads) prints
// a message and exits 2 instead of aborting.
[[noreturn]] void on_terminate() {
    std::string what = "no exception in flight";
    if (const std::exception_ptr e = std::current_exception()) {
        try {
            std::rethrow_exception(e);
        } catch (const std::exception &x) {
            what = x.what();
        } catch (...) {
            what = "unknown exception";
        }
    }
    std::fprintf(stderr,
                 "gelukit_accuracy: error: std::terminate called (%s); most likely a thread could not be "
                 "started: try fewer --threads\n",
                 what.c_str());
    std::fflush(stderr);
    std::_Exit(2);
}

}  // namespace

// Last resort: an exception nothing above handled (out of memory, no more threads, ...) ends in a
// message and status 2, not in std::terminate's abort.
int main(int argc, char **argv) {
    std::set_terminate(on_terminate);
    try {
        return run(argc, argv);
    } catch (const std::bad_alloc &) {
        std::fprintf(stderr, "gelukit_accuracy: error: out of memory (a large --samples holds every input in memory; "
                             "--exhaustive streams all 2^32 in blocks)\n");
    } catch (const std::exception &e) {
        std::fprintf(stderr, "gelukit_accuracy: error: %s\n", e.what());
    } catch (...) {
        std::fprintf(stderr, "gelukit_accuracy: error: unknown exception\n");
    }
    return 2;
}
