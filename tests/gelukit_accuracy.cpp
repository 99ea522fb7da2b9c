// gelukit_accuracy: ULP error of a GELU kernel against the independent double-precision
// reference (tests/support/reference.h), over every input (--exhaustive) or a sample.
//
//   gelukit_accuracy --form erf --direction forward --dtype f32 --exhaustive
//
// The last line printed is always "max_ulp=<value> x=<input bits in hex>". For the backward
// direction the 0.01-wide window around the root of GELU' is excluded from max_ulp and reported
// as max_abs_err_root instead (relative error is unbounded at a root). Exit status 1 if
// --max-ulp is given and exceeded.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "gelukit/error.h"
#include "gelukit/gelu.h"
#include "gelukit/runtime.h"
#include "support/sweep.h"

int main(int argc, char **argv) {
    using namespace gelukit;
    CLI::App app{"ULP error of a gelukit GELU kernel against a double-precision reference"};
    std::string form = "erf", direction = "forward", dtype = "f32", math = "acc", schedule = "hand";
    bool exhaustive = false;
    uint64_t samples = uint64_t(1) << 24;
    int threads = 2;
    float scale = 1.0f;
    long long max_ulp_allowed = -1;
    app.add_option("--form", form, "erf | tanh | sigmoid (or a config name such as gelu_new)");
    app.add_option("--direction", direction, "forward | backward")->check(CLI::IsMember({"forward", "backward"}));
    app.add_option("--dtype", dtype, "f32 | bf16 | f16")->check(CLI::IsMember({"f32", "bf16", "f16"}));
    app.add_option("--math", math, "acc | fast")->check(CLI::IsMember({"acc", "fast"}));
    app.add_option("--schedule", schedule, "naive | hand | adams2019")
        ->check(CLI::IsMember({"naive", "hand", "adams2019"}));
    app.add_flag("--exhaustive", exhaustive, "every input: 2^32 for f32, 2^16 for bf16/f16");
    app.add_option("--samples", samples, "number of lattice samples over the f32 bit space");
    app.add_option("--threads", threads, "threads for the kernel and the reference")->check(CLI::PositiveNumber);
    app.add_option("--scale", scale, "s of the scaled exact form x*Phi(x/s)");
    app.add_option("--max-ulp", max_ulp_allowed, "exit 1 if the maximum ULP error exceeds this");
    CLI11_PARSE(app, argc, argv);

    try {
        test::SweepConfig cfg;
        cfg.direction = direction == "forward" ? Direction::Forward : Direction::Backward;
        cfg.dtype = dtype == "f32" ? DType::F32 : dtype == "bf16" ? DType::BF16 : DType::F16;
        cfg.options.form = form_from_name(form);
        cfg.options.math = math == "acc" ? Math::Accurate : Math::Fast;
        cfg.options.schedule = schedule == "naive" ? Schedule::Naive
                               : schedule == "hand" ? Schedule::Hand
                                                    : Schedule::Adams2019;
        cfg.options.scale = scale;
        cfg.threads = threads;
        set_num_threads(threads);
        auto t0 = std::chrono::steady_clock::now();
        test::SweepResult r = exhaustive ? test::sweep_exhaustive(cfg, /*show_progress=*/true)
                                         : test::sweep_sampled(cfg, samples);
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("kernel=gelu_%s_%s_%s_%s_%s scale=%g mode=%s seconds=%.1f isa=%s\n",
                    direction == "forward" ? "fwd" : "bwd", dtype.c_str(), form_name(cfg.options.form),
                    math.c_str(), schedule.c_str(), scale, exhaustive ? "exhaustive" : "sampled", secs,
                    dispatched_isa().c_str());
        std::printf("%s\n", r.summary(cfg.dtype).c_str());
        return (max_ulp_allowed >= 0 && r.max_ulp > max_ulp_allowed) ? 1 : 0;
    } catch (const gelukit::Error &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
    }
}
